package pods

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/dralloc/dralloc/allocator"
)

// Placement is where a pod goes and the claims as kube-scheduler writes them when it binds the pod.
type Placement struct {
	// Pod is the pod placed (the caller's object; not modified).
	Pod *v1.Pod
	// Node is the chosen node's name.
	Node string
	// Claims are the pod's claims in the order of pod.spec.resourceClaims, then the extended-resource
	// claim, as the scheduler writes them: status.allocation, status.reservedFor with the pod (or its
	// PodGroup), and the finalizer resource.kubernetes.io/delete-protection.
	Claims []PlacedClaim
	// ResourceClaimStatuses is pod.status.resourceClaimStatuses as the resourceclaim controller writes
	// it: one entry per template entry, naming its claim.
	ResourceClaimStatuses []v1.PodResourceClaimStatus
	// ExtendedResourceClaimStatus is pod.status.extendedResourceClaimStatus as the scheduler writes it,
	// nil without an extended-resource claim.
	ExtendedResourceClaimStatus *v1.PodExtendedResourceClaimStatus
	// Best, under the Scheduler choice, are the nodes where the pod fits with the highest total score,
	// by name: kube-scheduler binds the pod to one of them, drawn at random (see the package's Node
	// choice for a cluster of 100 nodes or more, where it scores only some). Node is the first. nil
	// under the other choices.
	Best []string
	// Scores, under the Scheduler choice, are the scores of every node where the pod fits, the highest
	// first, ties by name. nil under the other choices.
	Scores []NodeScore
}

// PlacedClaim is one claim of a placement.
type PlacedClaim struct {
	// Name is the entry of pod.spec.resourceClaims; empty for the extended-resource claim.
	Name string
	// Claim is the claim as written at binding time; Claim.Status.Allocation is its AllocationResult.
	Claim *resourceapi.ResourceClaim
	// Generated reports a claim that does not exist yet (from a template, or the extended-resource claim).
	Generated bool
	// Allocated reports a claim allocated by this placement; false means it was allocated already and is
	// reused (shared claims), only reserved.
	Allocated bool
}

// NoNodeError says why a pod fits on no node.
type NoNodeError struct {
	// Pod is "namespace/name".
	Pod string
	// Nodes are the reasons, one per node, sorted by node name.
	Nodes []NodeReason
}

// NodeReason is why a pod does not fit on one node.
type NodeReason struct {
	Node   string
	Reason string
}

func (e *NoNodeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s fits on no node", e.Pod)
	for i, r := range e.Nodes {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(r.Node)
		b.WriteString(": ")
		b.WriteString(r.Reason)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrNoNode) true.
func (e *NoNodeError) Unwrap() error { return ErrNoNode }

// request is a pod prepared for placement: its claims resolved, split into those to allocate and those
// allocated already.
type request struct {
	pod       *v1.Pod
	claims    []PodClaim
	pending   []*resourceapi.ResourceClaim // unique claims without allocation, in order
	allocated []*resourceapi.ResourceClaim // unique claims with allocation, to be reused
	ext       *extendedPlan
	plain     *nodeClaims // the claims to allocate on every node without an extended-resource claim
	demand    demand      // what the pod takes on its node (fit.go)
	alone     []*request  // the request itself, for fitFilters
}

// prepare resolves the pod's claims (see podClaims for taken) and splits them.
func (c *Cluster) prepare(snap *allocator.Snapshot, pod *v1.Pod, taken map[string]bool) (*request, error) {
	if pod != nil {
		if err := c.gatedError(pod); err != nil {
			return nil, err
		}
	}
	claims, err := c.podClaims(snap, pod, taken)
	if err != nil {
		return nil, err
	}
	r := &request{pod: pod, claims: claims, ext: c.planExtended(snap, pod), demand: demandOf(pod)}
	r.alone = []*request{r}
	seen := map[string]bool{}
	for _, pc := range claims {
		if seen[pc.Claim.Name] {
			continue
		}
		seen[pc.Claim.Name] = true
		if pc.Claim.Status.Allocation == nil {
			r.pending = append(r.pending, pc.Claim)
			continue
		}
		if !c.isReservedForPod(pc.Claim, pod) && len(pc.Claim.Status.ReservedFor) >= resourceapi.ResourceClaimReservedForMaxSize {
			return nil, fmt.Errorf("%s: ResourceClaim %s/%s: %w: reserved for the maximum of %d consumers", podName(pod), pc.Claim.Namespace, pc.Claim.Name, ErrClaimNotUsable, resourceapi.ResourceClaimReservedForMaxSize)
		}
		r.allocated = append(r.allocated, pc.Claim)
	}
	r.plain = &nodeClaims{claims: r.pending}
	if r.ext != nil && r.ext.existing != nil && (len(r.ext.existing.Spec.Devices.Requests) > 0 || r.ext.existing.Status.Allocation != nil) {
		// As the scheduler: a special claim left from an earlier cycle is stale; it is deleted and the
		// pod retried.
		return nil, fmt.Errorf("%s: ResourceClaim %s/%s: %w: extended-resource claim from an earlier attempt, delete it first", podName(pod), r.ext.existing.Namespace, r.ext.existing.Name, ErrClaimNotUsable)
	}
	return r, nil
}

// consumer is the reservedFor entry the scheduler writes: the pod, or for a PodGroup's claim the group.
func consumer(pod *v1.Pod, g *schedulingapi.PodGroup) resourceapi.ResourceClaimConsumerReference {
	if g != nil {
		return resourceapi.ResourceClaimConsumerReference{APIGroup: schedulingapi.GroupName, Resource: "podgroups", Name: g.Name, UID: uidOf(g)}
	}
	return resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: uidOf(pod)}
}

// isReservedForPod is resourceclaim.IsReservedForPod of k8s.io/dynamic-resource-allocation, with which
// kube-scheduler decides that a claim needs no reservation: status.reservedFor has the pod (by UID) or,
// with DRAWorkloadResourceClaims, the pod's PodGroup (by API group, resource and name, as a pod does not
// know its group's UID).
func (c *Cluster) isReservedForPod(claim *resourceapi.ResourceClaim, pod *v1.Pod) bool {
	group := ""
	if !c.opts.DisableWorkloadClaims && pod.Spec.SchedulingGroup != nil && pod.Spec.SchedulingGroup.PodGroupName != nil {
		group = *pod.Spec.SchedulingGroup.PodGroupName
	}
	for _, r := range claim.Status.ReservedFor {
		if (r.UID == uidOf(pod) && r.Name == pod.Name) || (group != "" && r.APIGroup == schedulingapi.GroupName && r.Resource == "podgroups" && r.Name == group) {
			return true
		}
	}
	return false
}

func sameConsumer(a, b resourceapi.ResourceClaimConsumerReference) bool {
	return a.UID == b.UID && a.Name == b.Name && a.Resource == b.Resource && a.APIGroup == b.APIGroup
}

// reservedFor reports whether status.reservedFor has the consumer. Consumers are compared by name as
// well as UID, which tells apart pods read from manifests (no UID yet).
func reservedFor(claim *resourceapi.ResourceClaim, cons resourceapi.ResourceClaimConsumerReference) bool {
	for _, r := range claim.Status.ReservedFor {
		if sameConsumer(r, cons) {
			return true
		}
	}
	return false
}

// nodeClaims are the claims to allocate for a pod on one node.
type nodeClaims struct {
	claims   []*resourceapi.ResourceClaim // pending, then the extended-resource claim
	ext      *resourceapi.ResourceClaim
	mappings []v1.ContainerExtendedResourceRequest
}

// check runs the predicates and the checks that need no search: nil claims and a reason mean the pod
// cannot run on the node.
func (c *Cluster) check(r *request, node *v1.Node, extName string) (*nodeClaims, string, error) {
	if reason := c.predicates(r, node); reason != "" {
		return nil, reason, nil
	}
	for _, claim := range r.allocated {
		ok, err := usableOn(claim, node)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return nil, fmt.Sprintf("allocated ResourceClaim %s/%s is not available on the node", claim.Namespace, claim.Name), nil
		}
	}
	if r.ext == nil {
		return r.plain, "", nil // shared: read only
	}
	need, err := r.ext.forNode(node)
	if err != nil {
		return nil, err.Error(), nil
	}
	nc := &nodeClaims{claims: r.pending}
	if need != nil {
		nc.ext, nc.mappings = c.extendedClaim(r.pod, r.ext, need, extName)
		nc.claims = append(slices.Clip(nc.claims), nc.ext)
	}
	return nc, "", nil
}

// predicates runs the built-in filters and predicates and the caller's, in the order of kube-scheduler's
// default profile (NodeName, NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts,
// NodeResourcesFit, then the caller's, standing for PodTopologySpread and InterPodAffinity); the first
// that fails gives the reason, as the framework stops at the first failing filter. A non-empty reason
// means the pod may not run on the node.
func (c *Cluster) predicates(r *request, node *v1.Node) string {
	if reason := c.nodeFilters(r.pod, node); reason != "" {
		return reason
	}
	if !c.opts.NoBuiltinPredicates {
		if reason := builtinPredicates(r.pod, node); reason != "" {
			return reason
		}
	}
	if reason := c.fitFilters(r.alone, node); reason != "" {
		return reason
	}
	if c.opts.Predicate != nil {
		if err := c.opts.Predicate(r.pod, node); err != nil {
			return err.Error()
		}
	}
	return ""
}

// builtinPredicates is what kube-scheduler's TaintToleration (taints with effect NoSchedule or NoExecute
// must be tolerated) and NodeAffinity (nodeSelector and required node affinity) filters decide, in that
// order.
func builtinPredicates(pod *v1.Pod, node *v1.Node) string {
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, false)
	if untolerated {
		return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value)
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return "node(s) didn't match Pod's node affinity/selector"
	}
	return ""
}

// usableOn reports whether an allocated claim can be used from the node: its allocation's node
// selector (none: every node) matches.
func usableOn(claim *resourceapi.ResourceClaim, node *v1.Node) (bool, error) {
	sel := claim.Status.Allocation.NodeSelector
	if sel == nil {
		return true, nil
	}
	ns, err := nodeaffinity.NewNodeSelector(sel)
	if err != nil {
		return false, fmt.Errorf("ResourceClaim %s/%s: status.allocation.nodeSelector: %w", claim.Namespace, claim.Name, err)
	}
	return ns.Match(node), nil
}

// Place chooses a node for the pod and allocates its claims there, without changing the snapshot (see
// [Cluster.Assume]). Nodes are filtered in parallel by Options.Workers goroutines: the predicates, the
// reuse of allocated claims, then [allocator.Snapshot.Fits] for the claims to allocate, asked once per
// class of nodes the claims cannot tell apart ([allocator.Snapshot.NodeClasses]). Options.Choice orders
// the nodes (by name for FirstFit, by their load for BestFit and Spread) and the first node in that
// order where the pod fits is chosen; nodes after it are not filtered, so an error there is not met.
// Nodes where a pod of the same shape (spec, namespace, the specs of the claims to allocate) was found
// not to fit are not filtered again while only Assume has changed the Cluster since: Assume only takes
// devices and node resources, so they still do not fit. Remove, RemovePodGroup and DeletePod free: the
// nodes they free (their pods' nodes, their claims' devices' nodes; every node when a device is
// network-attached) are filtered again, the others not. This keeps a pod's cost from growing with the
// nodes filled before it; it is off with Options.Predicate (which more pods may satisfy). BestFit and
// Spread keep, per shape, each node's answer in their order and ask again only the nodes an Assume or
// a removal touched (its devices' nodes, its pods' nodes; every node when a device is
// network-attached), so that they neither filter nor score every node for every pod; the node chosen
// is the one filtering every node would choose.
// BestFit on a snapshot with shared counter sets filters every node instead, allocates the claims once
// per class where they fit, and takes the node whose allocation draws on the fullest counter sets
// (ties: the first in the load order); an error on any node is then returned.
//
// When the pod fits nowhere the error is a *[NoNodeError] (wrapping [ErrNoNode]); claims that cannot be
// resolved give [ErrClaimNotFound], [ErrTemplateNotFound], [ErrPodGroupNotFound] or [ErrClaimNotUsable];
// a pod with spec.schedulingGates gives [ErrSchedulingGated], as kube-scheduler does not try it;
// the allocator's input, budget and context errors are returned as they are. Place may run while Assume,
// Remove or a commit change the snapshot: when the chosen node's devices are taken between filtering
// and allocating, it decides again on the snapshot as it is then (up to 8 times; then an error
// wrapping allocator.ErrConflict). The placement is a decision on the snapshot as it was; Assume
// refuses it if it no longer holds.
//
// With Options.Preferred, new shares of devices with allowMultipleAllocations then record the largest
// policy-valid amount up to the preferred one that fits next to the device's other shares; see
// [Cluster.PlanHandBack] for getting it back.
func (c *Cluster) Place(ctx context.Context, pod *v1.Pod) (*Placement, error) {
	return c.placeOn(ctx, c.snap, pod, true)
}

// placeTries bounds how often Place starts again because the snapshot changed under it.
const placeTries = 8

func (c *Cluster) placeOn(ctx context.Context, snap *allocator.Snapshot, pod *v1.Pod, grow bool) (*Placement, error) {
	for try := 1; ; try++ {
		rev := snap.Revision()
		p, err := c.placeOnce(ctx, snap, pod, grow)
		// The chosen node fitted when filtered, but its devices were taken before they were
		// allocated (Assume or a commit ran meanwhile, as Place calls may run in parallel with
		// them): decide again on the snapshot as it is now.
		if !errors.Is(err, allocator.ErrUnsatisfiable) || errors.Is(err, ErrNoNode) || snap.Revision() == rev {
			return p, err
		}
		if try == placeTries {
			return nil, fmt.Errorf("%s: %w: the snapshot changed while the pod was placed, %d times", podName(pod), allocator.ErrConflict, placeTries)
		}
	}
}

func (c *Cluster) placeOnce(ctx context.Context, snap *allocator.Snapshot, pod *v1.Pod, grow bool) (*Placement, error) {
	r, err := c.prepare(snap, pod, nil)
	if err != nil {
		return nil, err
	}
	p, err := c.place(ctx, snap, r, c.nodeList(snap))
	if err != nil || !grow {
		return p, err
	}
	if err := c.grow(snap, p); err != nil {
		return nil, err
	}
	return p, nil
}

func (c *Cluster) place(ctx context.Context, snap *allocator.Snapshot, r *request, nodes []*v1.Node) (*Placement, error) {
	return c.placeIndexed(ctx, snap, r, nodes, true)
}

// placeIndexed is place, skipping the nodes the index knows full for the pod's shape when indexed
// (nodeindex.go). A pod that fits nowhere then is placed again without the index, so that the error
// gives every node's reason as it is now.
func (c *Cluster) placeIndexed(ctx context.Context, snap *allocator.Snapshot, r *request, nodes []*v1.Node, indexed bool) (*Placement, error) {
	var idx *indexView
	if indexed {
		idx = c.indexView(snap, r, snap.Revision(), nodes)
	}
	extName := ""
	if r.ext != nil {
		taken := map[string]bool{}
		for _, pc := range r.claims {
			if pc.Generated {
				taken[pc.Claim.Name] = true
			}
		}
		var err error
		if extName, err = c.freeName(snap, r.pod.Namespace, r.pod.Name+"-extended-resources-", taken); err != nil {
			return nil, fmt.Errorf("%s: %w", podName(r.pod), err)
		}
	}
	if idx != nil && c.opts.Cost == nil && c.opts.Choice != FirstFit && c.opts.Choice != Scheduler {
		if chosen, own, ok := c.rankChoose(ctx, snap, r, nodes, idx, extName); ok {
			if chosen < 0 {
				return c.placeIndexed(ctx, snap, r, nodes, false)
			}
			if own != nil {
				return c.build(r, nodes[chosen].Name, own.nc, own.results), nil
			}
			return c.allocateOn(ctx, snap, r, nodes[chosen], extName)
		}
	}
	verdicts := newVerdicts(len(nodes)) // paged: FirstFit fills only the pages of the nodes it filters
	// Nodes the claims cannot tell apart are asked once (see allocator.NodeClasses).
	var classes *allocator.NodeClasses
	if len(r.pending) > 0 && len(nodes) > 1 {
		var err error
		if classes, err = snap.NodeClasses(ctx, r.pending); err != nil {
			return nil, fmt.Errorf("%s: %w", podName(r.pod), err)
		}
	}
	order, scored := c.order(snap, nodes)
	var allocs []*allocVerdict // for a scored BestFit, by node
	if scored {
		allocs = make([]*allocVerdict, len(nodes))
	}
	kube := scored && c.opts.Cost == nil && c.opts.Choice == Scheduler
	if kube && c.profileErr != nil {
		return nil, c.profileErr
	}
	// Under the Scheduler choice the claims are allocated on every node where they fit only when
	// DynamicResources scores the allocation (a request with firstAvailable).
	kubeAlloc := kube && hasFirstAvailable(r.pending)
	var shared classVerdicts
	var next atomic.Int64
	start := 0 // the positions in order before start are known full
	if idx != nil && order == nil {
		start = idx.first
	} else if idx != nil && !scored {
		// BestFit takes the fullest nodes first: pass those known full here, in one goroutine, rather
		// than through the workers' shared counter.
		for start < len(order) && idx.skip(order[start]) {
			start++
		}
	}
	next.Store(int64(start))
	// best is the first position in order where the pod fits so far; later positions need no check
	// unless the choice is scored.
	best := atomic.Int64{}
	best.Store(int64(len(nodes)))
	var wg sync.WaitGroup
	workers := min(c.opts.Workers, len(nodes))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(nodes) {
					return
				}
				if !scored && int64(k) > best.Load() {
					return // positions only grow, best only shrinks: the rest need no check either
				}
				i := k
				if order != nil {
					i = order[k]
				}
				if idx != nil && idx.skip(i) {
					continue
				}
				if err := ctx.Err(); err != nil {
					verdicts.at(i).err = context.Cause(ctx)
					continue
				}
				nc, reason, err := c.check(r, nodes[i], extName)
				if err != nil || nc == nil {
					*verdicts.at(i) = verdict{reason: reason, err: err}
					continue
				}
				fits := true
				if len(nc.claims) > 0 {
					fits, err = shared.fits(ctx, snap, classes, nodes[i], nc)
				}
				v := verdicts.at(i)
				*v = verdict{fits: fits, err: err}
				if !fits && err == nil {
					v.reason = "cannot allocate all claims"
				}
				if scored && fits && err == nil && !kube {
					*v, allocs[i] = shared.allocate(ctx, snap, classes, nodes[i], nc)
				} else if kubeAlloc && fits && err == nil {
					*v, allocs[i] = kubeAllocate(ctx, snap, nodes[i], nc)
				}
				if !scored && fits && err == nil {
					for {
						b := best.Load()
						if int64(k) >= b || best.CompareAndSwap(b, int64(k)) {
							break
						}
					}
				}
			}
		}()
	}
	wg.Wait()

	chosen := -1
	var kubeBest []string
	var kubeAll []NodeScore
	if kube {
		var err error
		if chosen, kubeBest, kubeAll, err = c.bestScored(nodes, r, verdicts, allocs); err != nil {
			return nil, err
		}
	} else if scored && c.opts.Cost != nil {
		var err error
		if chosen, err = c.leastCost(ctx, snap, classes, r, nodes, verdicts, allocs); err != nil {
			return nil, err
		}
	} else if scored {
		var err error
		if chosen, err = c.bestFill(snap, r, nodes, order, verdicts, allocs); err != nil {
			return nil, err
		}
	} else {
		// The first node in order that fits, unless a node before it failed.
		for k := start; k < len(nodes) && int64(k) <= best.Load(); k++ {
			i := k
			if order != nil {
				i = order[k]
			}
			if v := verdicts.get(i); v.err != nil {
				return nil, fmt.Errorf("%s: node %s: %w", podName(r.pod), nodes[i].Name, v.err)
			} else if v.fits {
				chosen = i
				break
			}
		}
	}
	if idx != nil {
		c.recordFull(snap, idx, verdicts)
		if chosen < 0 {
			return c.placeIndexed(ctx, snap, r, nodes, false)
		}
	}
	if chosen < 0 {
		e := &NoNodeError{Pod: r.pod.Namespace + "/" + r.pod.Name}
		for i := range nodes {
			v := verdicts.get(i)
			e.Nodes = append(e.Nodes, NodeReason{Node: nodes[i].Name, Reason: v.reason})
		}
		return nil, e
	}
	var p *Placement
	if a := allocs; a != nil && a[chosen] != nil && a[chosen].own {
		p = c.build(r, nodes[chosen].Name, a[chosen].nc, a[chosen].results)
	} else {
		var err error
		if p, err = c.allocateOn(ctx, snap, r, nodes[chosen], extName); err != nil {
			return nil, err
		}
	}
	p.Best, p.Scores = kubeBest, kubeAll
	return p, nil
}

// recordFull tells the index the nodes a placement found full: those with a reason, not an error (an
// error, a context's among them, says nothing about the node). The nodes skipped as known full have no
// verdict.
func (c *Cluster) recordFull(snap *allocator.Snapshot, idx *indexView, verdicts *verdictPages) {
	var full []int
	verdicts.each(func(i int, v *verdict) {
		if v.err == nil && !v.fits && v.reason != "" {
			full = append(full, i)
		}
	})
	c.fullIdx.record(idx, snap.Revision(), full)
}

// bestFill chooses, for a scored BestFit, the node where the pod fits whose allocation has the highest
// fill (score.go), the first in order (most load, then name) on ties; -1 when it fits nowhere. Every
// node was filtered, so an error on any is returned, the first in order.
func (c *Cluster) bestFill(snap *allocator.Snapshot, r *request, nodes []*v1.Node, order []int, verdicts *verdictPages, allocs []*allocVerdict) (int, error) {
	for _, i := range order {
		if err := verdicts.get(i).err; err != nil {
			return -1, fmt.Errorf("%s: node %s: %w", podName(r.pod), nodes[i].Name, err)
		}
	}
	chosen := -1
	var best *big.Rat
	c.withScores(snap, func(_ map[string]int, fill *fillState) {
		byClass := map[*classVerdict]*big.Rat{} // nodes of a class draw on sets alike (NodeClasses)
		for _, i := range order {
			v := allocs[i]
			if !verdicts.get(i).fits || v == nil {
				continue
			}
			f := byClass[v.class]
			if f == nil || v.class == nil {
				f = fill.fill(snap, v.results)
				if v.class != nil {
					byClass[v.class] = f
				}
			}
			if chosen < 0 || f.Cmp(best) > 0 {
				chosen, best = i, f
			}
		}
	})
	return chosen, nil
}

// verdict is what filtering found on one node.
type verdict struct {
	fits   bool
	reason string
	err    error
}

// allocVerdict is, for a scored BestFit, the allocation of a node's claims (nc) where they fit: results on
// the node itself when own, else on another node of its class.
type allocVerdict struct {
	nc      *nodeClaims
	results []resourceapi.AllocationResult
	class   *classVerdict // the class whose allocation results are; nil for the node's own
	own     bool
}

// classVerdicts are the answers of Fits, and for a scored BestFit of Allocate, per node class in one
// placement.
type classVerdicts struct {
	mu sync.Mutex
	m  map[int]*classVerdict
}

type classVerdict struct {
	once sync.Once
	fits bool
	err  error

	allocOnce sync.Once
	alloc     *allocVerdict // for the nodes of the class other than the one that asked
	allocErr  error
	node      *v1.Node // the node that asked: alloc's results name its devices
}

// class is the node's class verdict; nil when the node is asked on its own (no classes, or an
// extended-resource claim, which is made per node).
func (v *classVerdicts) class(classes *allocator.NodeClasses, node *v1.Node, nc *nodeClaims) (*classVerdict, error) {
	if classes == nil || nc.ext != nil {
		return nil, nil
	}
	class, err := classes.Class(node)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[int]*classVerdict{}
	}
	cv := v.m[class]
	if cv == nil {
		cv = &classVerdict{}
		v.m[class] = cv
	}
	return cv, nil
}

// fits is Fits for the node's claims, asked once per class of nodes when the claims are the pod's own
// (an extended-resource claim is made per node). An error is not shared: the node asks again, so that
// what it reports names its own devices.
func (v *classVerdicts) fits(ctx context.Context, snap *allocator.Snapshot, classes *allocator.NodeClasses, node *v1.Node, nc *nodeClaims) (bool, error) {
	cv, err := v.class(classes, node, nc)
	if err != nil || cv == nil {
		if err != nil {
			return false, err
		}
		return snap.Fits(ctx, node, nc.claims)
	}
	cv.once.Do(func() { cv.fits, cv.err = snap.Fits(ctx, node, nc.claims) })
	if cv.err != nil {
		return snap.Fits(ctx, node, nc.claims)
	}
	return cv.fits, nil
}

// allocate is the verdict of a node where the claims fit, for a scored BestFit: their allocation in
// BestFit's device order (see Cluster.allocate), asked once per class as fits is (the nodes of a class get the same allocation up to names, and so
// the same fill), the node's own when it is the one that asked. An error is not shared.
func (v *classVerdicts) allocate(ctx context.Context, snap *allocator.Snapshot, classes *allocator.NodeClasses, node *v1.Node, nc *nodeClaims) (verdict, *allocVerdict) {
	if len(nc.claims) == 0 {
		return verdict{fits: true}, &allocVerdict{nc: nc, own: true}
	}
	cv, err := v.class(classes, node, nc)
	if err != nil {
		return verdict{err: err}, nil
	}
	if cv != nil {
		asked := false
		cv.allocOnce.Do(func() {
			asked = true
			results, err := snap.AllocateWith(ctx, allocator.BestFit, node, nc.claims)
			cv.alloc, cv.allocErr, cv.node = &allocVerdict{nc: nc, results: results, class: cv}, err, node
		})
		if cv.allocErr == nil {
			if asked {
				return verdict{fits: true}, &allocVerdict{nc: nc, results: cv.alloc.results, class: cv, own: true}
			}
			return verdict{fits: true}, cv.alloc // the class's, not the node's own
		}
	}
	results, err := snap.AllocateWith(ctx, allocator.BestFit, node, nc.claims)
	if errors.Is(err, allocator.ErrUnsatisfiable) {
		// Fits said yes; a search that runs as Allocate's does not say otherwise, but if it did the
		// node is one where the claims do not fit.
		return verdict{reason: "cannot allocate all claims"}, nil
	}
	if err != nil {
		return verdict{err: err}, nil
	}
	return verdict{fits: true}, &allocVerdict{nc: nc, results: results, own: true}
}

// allocateOn allocates the pod's claims on the node and builds the placement.
func (c *Cluster) allocateOn(ctx context.Context, snap *allocator.Snapshot, r *request, node *v1.Node, extName string) (*Placement, error) {
	nc, reason, err := c.check(r, node, extName)
	if err != nil {
		return nil, err
	}
	if nc == nil {
		return nil, &NoNodeError{Pod: r.pod.Namespace + "/" + r.pod.Name, Nodes: []NodeReason{{Node: node.Name, Reason: reason}}}
	}
	var results []resourceapi.AllocationResult
	if len(nc.claims) > 0 {
		results, err = c.allocate(ctx, snap, node, nc.claims)
		if err != nil {
			return nil, err
		}
	}
	return c.build(r, node.Name, nc, results), nil
}

// build writes the claims as the scheduler's PreBind does (bindClaim): the finalizer, the allocation and
// the reservation.
func (c *Cluster) build(r *request, node string, nc *nodeClaims, results []resourceapi.AllocationResult) *Placement {
	p := &Placement{Pod: r.pod, Node: node}
	byName := map[string]*resourceapi.ResourceClaim{} // claims written so far, for entries naming one claim twice
	for i, claim := range nc.claims {
		if claim == nc.ext {
			continue
		}
		out := claim.DeepCopy()
		out.Status.Allocation = &results[i]
		byName[claim.Name] = out
	}
	for _, pc := range r.claims {
		out, allocated := byName[pc.Claim.Name]
		if out == nil {
			out = pc.Claim.DeepCopy()
			byName[pc.Claim.Name] = out
		}
		if c.isReservedForPod(pc.Claim, r.pod) {
			// As the scheduler's PreBind: a claim reserved for the pod before it was placed gets no new
			// entry.
			if !slices.Contains(out.Finalizers, resourceapi.Finalizer) {
				out.Finalizers = append(out.Finalizers, resourceapi.Finalizer)
			}
		} else {
			reserve(out, consumer(r.pod, pc.PodGroup))
		}
		p.Claims = append(p.Claims, PlacedClaim{Name: pc.Name, Claim: out, Generated: pc.Generated, Allocated: allocated && pc.Claim.Status.Allocation == nil})
	}
	for _, pc := range r.pod.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName == nil {
			continue
		}
		st := v1.PodResourceClaimStatus{Name: pc.Name}
		for _, placed := range p.Claims {
			if placed.Name == pc.Name {
				name := placed.Claim.Name
				st.ResourceClaimName = &name
			}
		}
		p.ResourceClaimStatuses = append(p.ResourceClaimStatuses, st)
	}
	if nc.ext != nil {
		out := nc.ext.DeepCopy()
		out.Status.Allocation = &results[len(results)-1]
		reserve(out, consumer(r.pod, nil))
		p.Claims = append(p.Claims, PlacedClaim{Claim: out, Generated: true, Allocated: true})
		p.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{RequestMappings: nc.mappings, ResourceClaimName: out.Name}
	}
	return p
}

// reserve adds the consumer to status.reservedFor (once) and the scheduler's finalizer.
func reserve(claim *resourceapi.ResourceClaim, cons resourceapi.ResourceClaimConsumerReference) {
	if !slices.Contains(claim.Finalizers, resourceapi.Finalizer) {
		claim.Finalizers = append(claim.Finalizers, resourceapi.Finalizer)
	}
	if !reservedFor(claim, cons) {
		claim.Status.ReservedFor = append(claim.Status.ReservedFor, cons)
	}
}
