// Package pods makes the scheduler's whole Dynamic Resource Allocation decision for pods, on top of an
// [allocator.Snapshot]: which ResourceClaims a pod needs (its own, those generated from
// ResourceClaimTemplates, its PodGroup's, the special claim for extended resources backed by DRA), on
// which node they fit, the claims as kube-scheduler writes them, and what assuming or removing a pod does
// to the snapshot.
//
// The main type is [Cluster]: it wraps a Snapshot (which the caller keeps filling with slices, classes,
// claims and nodes) and adds what only pods need: ResourceClaimTemplates, PodGroups, and the pods bound
// to each node ([Cluster.AddOrUpdatePod]; pods it assumes itself are recorded by Assume).
//
// PodGroups are scheduling.k8s.io/v1beta1, the version Kubernetes 1.37 serves as beta, upstream's
// resourceclaim helpers take and allocator/manifest returns; the claims generated for a PodGroup name
// it with that apiVersion in their owner reference, as the resourceclaim controller of 1.37 does (a
// claim whose owner reference names another version of scheduling.k8s.io is still the group's). A
// v1alpha3 PodGroup has the same fields: [github.com/dralloc/dralloc/allocator/manifest.Convert]
// turns it into v1beta1.
//
//   - [Cluster.PodClaims] resolves a pod's claims exactly as the control plane does: a resourceClaimName
//     is that claim; a resourceClaimTemplateName is the claim pod.status.resourceClaimStatuses names, or
//     the claim the resourceclaim controller generated earlier (found by annotation and owner), or the
//     claim it would generate now (named <pod>-<claim>-<suffix>, the suffix from an injectable source);
//     with DRAWorkloadResourceClaims, a pod claim that matches a claim of the pod's PodGroup is the
//     group's claim, reserved for the PodGroup.
//   - Extended resources backed by DRA (a DeviceClass's spec.extendedResourceName, or the implicit
//     deviceclass.resource.kubernetes.io/<class>) become the one special claim kube-scheduler
//     synthesises, per node: a node whose status.allocatable advertises the resource serves it by device
//     plugin instead. [Cluster.MixedNodes] lists nodes where both could serve a resource.
//   - [Cluster.Place] filters every node in parallel (kube-scheduler's NodeName, NodeUnschedulable,
//     TaintToleration, NodeAffinity, NodePorts and NodeResourcesFit in that order, a caller predicate,
//     then the claims) and chooses one; a pod with scheduling gates is not placed
//     ([ErrSchedulingGated]); [Cluster.Assume] writes the
//     placement into the snapshot and [Cluster.Remove] undoes it as the control plane does when a pod
//     goes away. Use [allocator.Snapshot.Fork] for what-if questions. [Cluster.PlaceOnNode] asks one
//     node only, at a cost that does not grow with the cluster (capacity planning fills nodes with it),
//     and [Cluster.NodeKinds] sorts nodes into kinds on which a pod fares alike (kinds.go).
//   - [Cluster.Explain] says why a pod fits on which nodes and not on the others, node by node, and
//     groups the nodes by their main reason in a line short enough for a pod condition. Nodes alike
//     ([allocator.Snapshot.NodeClasses]) are explained once where the answer names nothing of the node,
//     and the fork that asks where the pod fits once holders release their devices is kept for the
//     next pod that frees the same claims on the same revision (explain.go, explain_freed.go).
//   - [Cluster.PlaceGroup] places a PodGroup as kube-scheduler does: one pass over its pods in the
//     queue's order, each placed as Place places it, without going back; a gang whose pass falls
//     short of minCount stays pending, with the GangScheduling plugin's reason
//     ([GroupUnschedulableError]), even where another choice of nodes would place it.
//     [Cluster.SearchGroupPlacement] asks the other question, whether any placement exists: all or
//     nothing for a gang, with backtracking across pods and topology domains, bounded by a [Budget] of
//     tries (pods alike are not permuted, nodes alike are one choice while empty, and a domain too small
//     by count is not searched).
//   - Ranged capacity (an SDK extension): with [Options.Preferred], a new share of a device records the
//     largest policy-valid amount up to a preferred one; [Cluster.PlanHandBack] says which earlier
//     shares must shrink, and by how much, for a pod that fits nowhere.
//
// Node choice: [FirstFit] takes the first node, by name, where the pod fits. [Spread] takes the node
// where it fits with the fewest devices allocated to claims pinned to it (its load; ties by name).
// [BestFit] packs within each node and across nodes. Within a node it allocates the pod's claims with
// [allocator.BestFit] ([allocator.Snapshot.AllocateWith]), whatever strategy the snapshot was made
// with: a partition goes to the GPU whose counter set is already fullest rather than the first in
// upstream's device order, and a share of a device with allowMultipleAllocations to the device whose
// capacity is most used. Across nodes, on a snapshot with shared counter sets (partitionable devices,
// such as GPUs in dynamic-MIG mode whose partitions draw on their GPU's set) it takes the node where that
// allocation draws on the fullest sets — its fill: over the devices of the allocation and the sets each
// consumes, the share of the set's counters already consumed, each counter's consumed ÷ capacity
// averaged over the set — then the most load, then the first by name. It filters every node and
// allocates once per class of nodes (nodes of a class take the same devices up to names, so score
// alike). Without counter sets every fill is 0, and BestFit takes the node with the most load where the
// pod fits, filtering only the nodes before it in that order. Packing partitions onto the GPUs already
// in use keeps the other GPUs whole for the pods that need a whole one. A pod fits on a node under
// BestFit exactly where it fits under FirstFit, but for errors met at a device (see
// [allocator.BestFit]): a selector failing at run time on any candidate, or a request for all devices
// breaking a constraint with devices taken in BestFit's order, is the placement's error.
// [Cluster.PlaceGroup] places each pod with the Choice, as Place does; [Cluster.SearchGroupPlacement]
// does not use it: it allocates in the snapshot's own strategy.
// [Options.Cost] replaces the Choice with a caller's rating (allocator/headroom's FGD is one): every node
// is filtered, the claims allocated with BestFit on each node where the pod fits, and the cheapest
// allocation's node taken, the first by name on ties; [Options.Prefer] may then name the devices the
// rating chose on that node (FGD's GPU for a share), which the claims there take first.
//
// [Scheduler] reproduces kube-scheduler's own choice (v1.37.2, schedule_one.go's schedulePod and
// prioritizeNodes): every node is filtered, each node where the pod fits is scored by the score plugins
// of a profile ([Options.Profile], a [ScoreProfile] mirroring a KubeSchedulerConfiguration profile's
// score plugins, weights and NodeResourcesFit scoringStrategy; nil is the default profile), each
// plugin's score normalised as the plugin does and multiplied by its weight, and the sums compared.
// [Placement.Best] are the nodes with the highest sum and [Placement.Scores] every node's score:
// kube-scheduler pops the best of a heap whose ties fall in the order its parallel filter found the
// nodes, so a caller draws from Best as it does; Node is the first of Best by name. Reproduced from
// the objects the Cluster holds: NodeResourcesFit (LeastAllocated, MostAllocated,
// RequestedToCapacityRatio over the pods it knows on each node, cpu and memory counted at 100m and
// 200Mi for a container without a request), NodeResourcesBalancedAllocation, NodeAffinity's preferred
// terms, TaintToleration's PreferNoSchedule taints, ImageLocality (node status.images) and
// DynamicResources (the subrequest of a firstAvailable request allocated on the node, the claims
// allocated as kube-scheduler allocates them: [allocator.FirstFit]). Not reproduced, scoring 0:
// PodTopologySpread and InterPodAffinity, which need the labels and affinity of every pod and, for
// PodTopologySpread's system default constraints, the Services, ReplicationControllers, ReplicaSets
// and StatefulSets selecting the pod; the Cluster keeps only what pods take on their nodes. Both skip
// a pod that no Service or workload controller selects, with no topologySpreadConstraints of its
// own and no preferred inter-pod affinity terms, when no pod it would meet has preferred terms of its
// own: there the scores are kube-scheduler's. Nor is NodeResourcesFit's count of an extended resource
// backed by DRA that a profile lists among the scored resources (allocatable: the class's devices on
// the node), nor NodeAffinity's addedAffinity. ImageLocality takes an image's size from each node's
// status.images, as upstream's NewSnapshot does; kube-scheduler's cache keeps for every node the size
// of the first node it saw listing the name, which a snapshot cannot know: the two agree where an
// image has one size on every node holding it, as an image of one digest has. Which nodes are scored: with fewer than 100 nodes
// (minFeasibleNodesToFind) kube-scheduler filters and scores them all, and its choice is always in
// Best; with more, unless percentageOfNodesToScore is 100, it stops filtering once it found a share of
// the cluster's nodes feasible (50% − nodes/125, at least 5%, at least 100 nodes; numFeasibleNodesToFind),
// starting where the previous pod stopped, and takes the best of those: then its choice is a node of
// Scores, best among the sample it drew, and not necessarily in Best. OpportunisticBatching (on by
// default) may hand the next pod of the same signature the runner-up of the previous pod's scores
// instead of scoring again (it rescores only the node the previous pod took): with nothing else
// changed, that is a node scoring again would put in Best.
//
// Built-in filters ([Filter], each switched off with Options.DisableFilters): NodeResourcesFit counts the
// requests of the pods on each node (cpu, memory, ephemeral-storage, hugepages, a device plugin's
// extended resources, the node's allocatable pods) against status.allocatable, kept per node as pods
// are added, assumed and removed, so a placement does not sum them again; NodePorts their host ports.
// The scheduler's filters that look at other pods across nodes, PodTopologySpread and
// InterPodAffinity, are not reproduced: [Options.Predicate] is where a caller adds them.
// Snapshot lookups ([allocator.Snapshot.Nodes], Claims, ClaimsOwnedBy, Classes) return the snapshot's
// own objects; the Cluster copies before it changes anything and never modifies its inputs. A pod or
// PodGroup read from a manifest that was never created has no UID; the claims written for it name it by
// a UID derived from its kind, namespace and name, the same in every call.
//
// Imports: the allocator's public API, capacity (ranged shares), k8s.io/api, k8s.io/apimachinery and
// k8s.io/component-helpers (node affinity, toleration and pod request helpers). allocator/verify and fuzz are used by tests only.
package pods
