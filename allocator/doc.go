// Package allocator decides which devices the claims of a pod get on a node, as the Kubernetes 1.37
// scheduler does for Dynamic Resource Allocation (resource.k8s.io/v1).
//
// The work is split in two, as cel-go splits compiling from evaluating:
//
//   - A [Snapshot] holds the cluster: ResourceSlices, DeviceClasses, ResourceClaims (those with an
//     allocation make up the allocated state: devices in exclusive use, shares of devices with
//     allowMultipleAllocations and their consumed capacity), DeviceTaintRules and Nodes. Every object is
//     indexed when it is added or changed (slices per node, network-attached slices, slices per pool and
//     generation, class selectors compiled); a slice's devices are prepared once, when a call first meets
//     them: effective taints, CEL views, node selectors. Unless Options.TrustAPIServer says the objects
//     come from an API server, each is first validated as kube-apiserver 1.37 validates it on create
//     (package allocator/validation) and an invalid one is refused with an *[InputError].
//     [Snapshot.Fork] gives a cheap copy for what-if questions that can be committed back or thrown
//     away; a commit whose allocations the snapshot gave away meanwhile is refused with [ErrConflict]
//     (as *[ConflictError]), all or nothing.
//   - [Snapshot.Allocate] answers one question for one node: can these claims be allocated here, and
//     with which devices. It returns one resourceapi.AllocationResult per claim, an error wrapping
//     [ErrUnsatisfiable] (as *[UnsatisfiableError]) when they do not fit, or an error wrapping
//     [ErrInvalidInput] (as *[InputError]) naming the object and field when the input is one that
//     Kubernetes would refuse to allocate (InputError.NodeDependent tells a failure on one of this
//     node's devices from one on every node). [Snapshot.Fits] is the same search without building
//     the answer: what a filter asks of every node, allocating nothing. [Snapshot.AllocateOnNode],
//     [Snapshot.FitsOnNode] and [Snapshot.ExplainOnNode] take the name of a node added with
//     [Snapshot.AddOrUpdateNode]. [Snapshot.Explain] says why:
//     per request, which filter (class or request selector, pool, allocation by another claim, taint,
//     capacity, counters, …) removed how many devices and which object did it, and what keeps requests
//     with enough candidates from fitting together (a constraint, competing requests, the 32-results
//     limit); a separate pass, so Allocate and Fits pay nothing for it. [Snapshot.NodeClasses] sorts
//     the nodes of a fleet into classes the claims cannot tell apart (devices and allocated state equal
//     but for names and attributes nothing reads), so that a filter pass asks Fits once per class;
//     the snapshot remembers each node's class until something it depends on changes, so a pass over
//     a fleet that did not change ([NodeClasses.AppendClasses] for all its nodes at once) costs a
//     lookup per node. The first pass evaluates the selectors once per kind of device, where they
//     read attributes by constant names (celenv's Selector.Reads), not on every device.
//
// The default strategy, [FirstFit], visits pools, slices and devices in the order the Kubernetes
// allocator (k8s.io/dynamic-resource-allocation/structured) visits them and therefore picks the same
// devices. [BestFit] (pack partly used GPUs, keep whole ones free) and [Spread] (least used first) search
// the same combinations in another order: they find an allocation exactly when FirstFit does, but may
// pick other devices. (They evaluate the selectors of every candidate of a request first, so a selector
// that fails at run time on one device fails them even where FirstFit finds a fit before that device;
// and a request for all devices that breaks a constraint fails the call, as in Kubernetes, after
// whichever devices the order took before it.) [Options].Strategy is the snapshot's;
// [Snapshot.AllocateWith] uses another for one call, as allocator/pods' BestFit does on every node.
// [Options].Topology adds, under any strategy, a preference for placements whose devices sit close
// together (fewest NUMA nodes, then PCIe roots, by default), judged over every device of every claim of
// the call (a pod's GPU claim and NIC claim together): the search tries close devices first, then
// improves on its first placement by branch and bound within a step budget, and returns the closest
// placement found, never one farther than the call finds without the preference; it rules nothing out,
// so claims fit with it exactly when they fit without it;
// [Snapshot.AllocatePreferring] does the same for devices a caller names (allocator/headroom's FGD), and
// where its order runs out of the step budget or meets an error at a device it answers as AllocateWith.
// [Options].Quota (or [Snapshot.SetQuota]) is the one thing that rules devices out beyond Kubernetes: a
// [Quota] limits what the owners of claims (their namespaces by default) hold per DeviceClass — devices,
// counters of partitions, consumable capacity — and the search takes no device that would take an
// owner past a limit, so a firstAvailable request takes the first alternative within the owner's quota.
// Claims that fit the node but not the quota get an *[UnsatisfiableError] wrapping [ErrQuotaExceeded]
// that names the limit, the amount held and the amount asked; [QuotaFromResourceQuotas] reads the
// cluster's ResourceQuota objects as kube-apiserver's quota evaluator does. Without a quota the search
// does no work for it.
// Feature gates are one [Features] value with the Kubernetes gate names; the zero [Options] use the gates
// Kubernetes 1.37 enables by default.
//
// A [Requeue] answers the scheduler's other question: after a cluster event (a slice added or changed, a
// claim deallocated, a taint removed, a class changed), which pending claims may fit now. It indexes the
// pending claims by DeviceClass, so an event costs what it touches, not the number of pending claims. A
// claim refused for its owner's quota ([Requeue.AddPendingOverQuota]) is woken when the quota may have
// room (the owner deallocates, a limit is raised) and not by devices it could not take within it.
//
// A Snapshot is safe for concurrent use: many goroutines may call Allocate at the same time (a scheduler
// filters nodes in parallel) while updates wait for them. Inputs are never mutated: objects handed to a
// Snapshot are copied (with Options.NoCopy they are kept as they are, for callers whose objects never
// change, like an informer's), and results share no memory with the snapshot.
//
// # Same answers as Kubernetes
//
// Kubernetes keeps three implementations of its allocator and uses the most stable one that supports
// every enabled gate (with the 1.37 default gates that is the "incubating" one). They differ for fields
// whose gate is off, and dralloc follows the one the gates select: for example skipNodeOperations is
// ignored unless an alpha gate is on, and with only the GA gates a distinctAttribute constraint is
// rejected. The allocated state is derived from claims as kube-scheduler derives it: results with
// adminAccess hold nothing, and results with a share ID hold a share only while DRAConsumableCapacity is
// on. Known differences:
//
//   - With only the GA gates on, Kubernetes visits pools in Go map order (its choice among pools is
//     random) and the slices of a pool in listing order; dralloc visits both sorted. Whether claims fit
//     is the same, but for one case: where a request for all devices may stop at a device in use
//     (silently) or at one that breaks a constraint (an error), the pool Kubernetes meets first decides
//     which, so its outcome varies from run to run; dralloc's is the one for its order, which Kubernetes
//     gives when it meets the pools in that order (fuzz/upstream:
//     TestStableVariantOutcomeDependsOnPoolOrder).
//   - Kubernetes reports invalid pools on a node as a per-node error; dralloc reports them (and
//     incomplete ones) in *UnsatisfiableError.Pools, each a [PoolError] with the pool and the reason,
//     testable with errors.Is and [ErrPoolInvalid] or [ErrPoolIncomplete].
//   - When slices of one pool generation disagree on resourceSliceCount, Kubernetes uses the count of
//     the first slice its informer lists; dralloc uses the first slice added to the snapshot.
//   - When allocated devices already break the compatibility-group rule on a counter set, Kubernetes'
//     answer depends on the order it reads slices; dralloc admits no further device on that set.
//
// # Cost
//
// Work that depends only on the objects is done once, not per call: a slice is indexed when it changes,
// and its devices are prepared (effective taints, parsed node selectors) the first time a call meets
// them; a device's CEL view is built the first time an expression needs it, and what a request without
// capacity requirements consumes the first time it is asked. Selector verdicts are kept on the device
// per compiled selector, pools on the slices they are built from, and the pools a node sees on the
// node's slices, across calls, so a lookup is a few pointer comparisons (and, where slices select nodes,
// a comparison of the node's name and labels: callers may relabel the Node they pass). The working state of a call is
// reused (a sync.Pool): Fits allocates nothing, a call where the claims do not fit allocates only its
// error and reason, and one where they fit only the results it returns.
//
// The search prunes where Kubernetes' blows up, but it stays exponential in the worst case: a constraint
// on a derived attribute that no choice meets, or requests tied by counters or constraints that no count
// below sees through, still make it try combination after combination, as Kubernetes does. Before
// searching, Allocate counts: every request needs enough candidate devices (free, matching, admitted by
// what is left of their pool's shared counters, allowed on the node) in at least one of its
// alternatives; a matchAttribute constraint needs a value that enough candidates of every request it
// names share, a distinctAttribute constraint enough distinct values; and requests that can only take
// devices of one set must not need more of them than the set has (a pigeonhole count across claims). A
// claim these counts rule out fails at once instead of after every combination of the other requests.
// Devices that no check of the call tells apart (the same state of use, the same selector verdicts for
// every request, the same capacities, the same values for the attributes constraints compare, no
// counters or taints) are interchangeable: once the search fails after taking one, it skips the others
// at that position, so it never tries permutations of equivalent devices (Kubernetes tries them and
// fails too, so the answers are the same). Before a request for all devices nothing is skipped: it
// takes its devices in a fixed order and stops at the first it cannot add, so which of two equal
// devices an earlier request took decides whether it stops silently (in use) or with the error of a
// broken constraint. When a request fails and nothing ties it or the requests
// after it to the ones before (no shared device, counter set or constraint), no other choice before it
// can help, and the search ends. Over 100,000 clusters drawn by fuzz.ClusterGen(fuzz.AllOptions()) the
// hardest call took 131,075 steps, and none took longer than 0.4 s on a shared 2-core machine.
// Options.StepBudget bounds what is left, and running out of it is reported as [ErrSearchBudget], never
// as [ErrUnsatisfiable].
//
// # Where things are
//
// The package is one import boundary: the search reads the snapshot's indexes and prepared devices
// directly, a pointer away, where an interface between them would cost a call per device on the hot
// path. Its files, by concern (a maintainer changing one concern reads the files of its group):
//
//   - The cluster and its indexes: snapshot.go (the [Snapshot], its updates, Fork, Commit, Discard),
//     objects.go (slice and device entries, prepared on first use), copy.go (the private copy of a slice;
//     derived.go: what equal devices compute alike, their CEL view and plain consumption, shared),
//     columns.go (a slice's attribute values by name), state.go (the allocated state: devices, shares,
//     counters in use), claimupdate.go ([Snapshot.UpdateClaims]), conflict.go (what a commit or update
//     finds taken meanwhile: [ConflictError]), validate.go (validation on add), lookup.go (read access for
//     code built on a snapshot; deviceuse.go: what the allocated claims hold of a device or pool), revision.go, options.go, features.go, errors.go.
//   - One call's search: allocate.go (Allocate and Fits), call.go (the call's working state: claims,
//     requests, candidates), scratch.go (that state's buffers, pooled across calls), pools.go (the pools a node sees), filter.go and verdicts.go (which
//     devices a request may take; selector verdicts kept per device; consumedmemo.go: what a request consumes of a device's capacities, remembered by content), strategy.go (the order each
//     [Strategy] tries candidates in), topology.go (the optional [Topology] preference within that order; topobest.go: its measure and
//     the search for the closest placement; prefer.go: a caller's
//     preferred devices first, [Snapshot.AllocatePreferring]), search.go (the backtracking search), constraints.go (matchAttribute
//     and distinctAttribute), tally.go and counterbase.go (shared counters in dense form;
//     counterblocks.go: compiled blocks shared by pools), shareids.go,
//     results.go (the AllocationResults, one block per call).
//   - Pruning, which never changes an answer, only how soon it is found: failfast.go and bounds.go (the
//     counts before searching: enough candidates, enough sharing a value, pigeonholes; counterbound.go: what
//     requests draw together of a pool's shared counters), independent.go
//     (ending the search when nothing before a failed request can help it), symmetry.go (devices no check
//     tells apart are tried once per position).
//   - Explanations: explain.go (the [Explanation] types and [Snapshot.Explain]), explain_pass.go (the
//     pass that counts what each filter removed), explain_obstacles.go (what keeps requests with enough
//     candidates apart).
//   - Node classes: equivalence.go ([NodeClasses]), content.go (a device's content as classes compare it),
//     fleetcache.go (each node's class key, remembered across calls), classrename.go (one node's
//     allocation as another node of its class gets it: [NodeClasses.Rename]).
//   - Requeue: requeue.go ([Requeue] and its index of pending claims by class), requeue_events.go (one
//     method per cluster event), requeue_quota.go (claims refused for quota: [Requeue.AddPendingOverQuota],
//     [Requeue.SetQuota]).
//
// Imports: allocator/gates (the feature gates; [Features] is gates.Features), celenv (CEL selectors), capacity (consumable capacity and shared counters), taints (device
// taints and tolerations), allocator/validation (API validation of added objects), k8s.io/api, k8s.io/apimachinery and k8s.io/component-helpers (node selector
// matching). Nothing in dralloc imports allocator's internals.
package allocator
