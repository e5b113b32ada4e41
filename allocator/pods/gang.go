package pods

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"

	"github.com/dralloc/dralloc/allocator"
)

// ErrGroupUnschedulable reports that a PodGroup cannot be placed: no choice of nodes (within one
// topology domain) gives minCount of its pods a place. Running out of Options.StepBudget gives
// allocator.ErrSearchBudget instead, and a cancelled context its cause: "gave up" is never "does not
// fit".
var ErrGroupUnschedulable = errors.New("pod group cannot be placed")

// GroupPlacement is where the pods of a PodGroup go.
type GroupPlacement struct {
	// Group is the PodGroup (the Cluster's copy; not to be modified).
	Group *schedulingapi.PodGroup
	// Domain is the value of the topology label that every chosen node has; empty without a topology
	// constraint.
	Domain string
	// Pods are the placements, one per pod given, in order; nil for a pod left out (a gang needs only
	// minCount of its pods).
	Pods []*Placement
}

// PlaceGroup places the pods of a PodGroup all or nothing, as gang scheduling admits a group: with a
// gang policy at least spec.schedulingPolicy.gang.minCount pods must get a node (with the basic policy,
// every pod given), and with a topology constraint (spec.schedulingConstraints.topology[0].key) all of
// them on nodes with one value of that node label; domains are tried in order of value, nodes in order
// of name. The group's claims are allocated once, by the first pod that needs them, and reserved for the
// group.
//
// The search backtracks across pods and nodes: when a pod finds no node, the pods before it move. On one
// node the claims of all the group's pods there are allocated together, so the allocator's own search
// chooses their devices jointly: two pods that each need part of one partitionable GPU both fit, where
// placing them one at a time lets the first take the whole GPU. Options.StepBudget bounds the number of
// pod-on-node attempts.
//
// Nothing is changed; [Cluster.AssumeGroup] writes the result into the snapshot. Pods must name the
// group in spec.schedulingGroup.podGroupName.
func (c *Cluster) PlaceGroup(ctx context.Context, group *schedulingapi.PodGroup, pods []*v1.Pod) (*GroupPlacement, error) {
	if group == nil {
		return nil, &allocator.InputError{Object: "PodGroup", Err: errors.New("nil object")}
	}
	g, ok := c.group(group.Namespace, group.Name)
	if !ok {
		return nil, fmt.Errorf("PodGroup %s/%s: %w", group.Namespace, group.Name, ErrPodGroupNotFound)
	}
	minCount := len(pods)
	if gang := g.Spec.SchedulingPolicy.Gang; gang != nil {
		minCount = int(gang.MinCount)
	}
	if len(pods) < minCount {
		return nil, fmt.Errorf("PodGroup %s/%s: %w: %d pods, spec.schedulingPolicy.gang.minCount is %d", g.Namespace, g.Name, ErrGroupUnschedulable, len(pods), minCount)
	}
	// Resolve every pod's claims on a fork that holds the group's generated claims, so that all pods
	// share one.
	base := c.snap.Fork()
	defer base.Discard()
	s := &gangSearch{c: c, ctx: ctx, group: g, minCount: minCount, budget: c.opts.StepBudget}
	taken := map[string]bool{} // names generated for the group's pods, which no pod may reuse
	for i, pod := range pods {
		if pod == nil || pod.Spec.SchedulingGroup == nil || pod.Spec.SchedulingGroup.PodGroupName == nil ||
			*pod.Spec.SchedulingGroup.PodGroupName != g.Name || pod.Namespace != g.Namespace {
			return nil, &allocator.InputError{Object: fmt.Sprintf("pods[%d]", i), Field: "spec.schedulingGroup.podGroupName", Err: fmt.Errorf("must name PodGroup %s/%s in its namespace", g.Namespace, g.Name)}
		}
		r, err := c.prepare(base, pod, taken)
		if err != nil {
			return nil, err
		}
		for _, pc := range r.claims {
			if pc.PodGroup != nil && pc.Generated {
				if err := base.AddOrUpdateClaim(pc.Claim); err != nil {
					return nil, err
				}
			}
		}
		s.reqs = append(s.reqs, r)
		extName := ""
		if r.ext != nil {
			if extName, err = c.freeName(base, pod.Namespace, pod.Name+"-extended-resources-", taken); err != nil {
				return nil, fmt.Errorf("%s: %w", podName(pod), err)
			}
			taken[extName] = true
		}
		s.extNames = append(s.extNames, extName)
	}

	var key string
	if sc := g.Spec.SchedulingConstraints; sc != nil && len(sc.Topology) > 0 {
		key = sc.Topology[0].Key
	}
	for _, domain := range domains(c.snap.Nodes(), key) {
		s.nodes = domain.nodes
		s.assign = make([]int, len(pods))
		s.nodeClaims = make([]*nodeClaims, len(pods))
		f := base.Fork()
		final, err := s.search(0, f, 0)
		if err != nil {
			f.Discard()
			return nil, err
		}
		if final != nil {
			gp := s.result(final, domain.value)
			final.Discard()
			if final != f {
				f.Discard()
			}
			return gp, nil
		}
		f.Discard()
	}
	return nil, fmt.Errorf("PodGroup %s/%s: %w", g.Namespace, g.Name, ErrGroupUnschedulable)
}

type domain struct {
	value string
	nodes []*v1.Node
}

// domains groups the nodes (sorted by name) by the value of the label key, sorted by value; without a
// key, all nodes are one domain. Nodes without the label are in none.
func domains(nodes []*v1.Node, key string) []domain {
	if key == "" {
		return []domain{{nodes: nodes}}
	}
	var out []domain
	for _, n := range nodes {
		v, ok := n.Labels[key]
		if !ok {
			continue
		}
		i := slices.IndexFunc(out, func(d domain) bool { return d.value == v })
		if i < 0 {
			out = append(out, domain{value: v})
			i = len(out) - 1
		}
		out[i].nodes = append(out[i].nodes, n)
	}
	slices.SortFunc(out, func(x, y domain) int {
		switch {
		case x.value < y.value:
			return -1
		case x.value > y.value:
			return 1
		}
		return 0
	})
	return out
}

// gangSearch is the state of one PlaceGroup call.
type gangSearch struct {
	c          *Cluster
	ctx        context.Context
	group      *schedulingapi.PodGroup
	minCount   int
	budget     int
	steps      int
	reqs       []*request
	extNames   []string
	nodes      []*v1.Node
	assign     []int         // per pod: index into nodes, or -1
	nodeClaims []*nodeClaims // per placed pod: what was allocated for it (the extended-resource claim)
}

// search places pods[i:] on top of f (which holds the placements of pods[:i]) and returns the final
// fork, or nil when no placement gives minCount pods a node.
func (s *gangSearch) search(i int, f *allocator.Snapshot, placed int) (*allocator.Snapshot, error) {
	if i == len(s.reqs) {
		if placed >= s.minCount {
			return f, nil
		}
		return nil, nil
	}
	for n, node := range s.nodes {
		if err := s.ctx.Err(); err != nil {
			return nil, context.Cause(s.ctx)
		}
		if s.budget > 0 && s.steps >= s.budget {
			return nil, fmt.Errorf("PodGroup %s/%s: %w after %d placements tried", s.group.Namespace, s.group.Name, allocator.ErrSearchBudget, s.steps)
		}
		s.steps++
		if s.c.predicates(s.reqs[i].pod, node) != "" {
			continue
		}
		next := f.Fork()
		s.assign[i] = n
		ok, err := s.joint(next, n, i)
		if err != nil {
			next.Discard()
			return nil, err
		}
		if ok {
			final, err := s.search(i+1, next, placed+1)
			if err != nil || final != nil {
				if final != next {
					next.Discard()
				}
				return final, err
			}
		}
		next.Discard()
	}
	// Leave pod i out when the rest can still reach minCount.
	s.assign[i] = -1
	if placed+len(s.reqs)-i-1 >= s.minCount {
		return s.search(i+1, f, placed)
	}
	return nil, nil
}

// joint allocates on node n, in f, the claims of every pod of pods[:last+1] assigned to n, together:
// first the claims those pods own (generated from templates, and extended-resource claims) go back to
// what they were before the search, then everything they still need is allocated in one call, and
// every claim is reserved for its consumer.
func (s *gangSearch) joint(f *allocator.Snapshot, n, last int) (bool, error) {
	node := s.nodes[n]
	var on []int
	for p := 0; p <= last; p++ {
		if s.assign[p] == n {
			on = append(on, p)
		}
	}
	for _, p := range on {
		if err := s.reset(f, p); err != nil {
			return false, err
		}
	}
	var toAlloc []*resourceapi.ResourceClaim
	seen := map[string]bool{}
	extOf := make([]*nodeClaims, len(on))
	for k, p := range on {
		r := s.reqs[p]
		for _, pc := range r.claims {
			cur, ok := f.Claim(pc.Claim.Namespace, pc.Claim.Name)
			if !ok {
				cur = pc.Claim
			}
			if cur.Status.Allocation != nil {
				usable, err := usableOn(cur, node)
				if err != nil {
					return false, err
				}
				if !usable {
					return false, nil
				}
				continue
			}
			if !seen[cur.Name] {
				seen[cur.Name] = true
				toAlloc = append(toAlloc, cur)
			}
		}
		nc := &nodeClaims{}
		if r.ext != nil {
			need, err := r.ext.forNode(node)
			if err != nil {
				return false, nil
			}
			if need != nil {
				nc.ext, nc.mappings = s.c.extendedClaim(r.pod, r.ext, need, s.extNames[p])
				toAlloc = append(toAlloc, nc.ext)
			}
		}
		extOf[k] = nc
	}
	if len(toAlloc) > 0 {
		results, err := f.Allocate(s.ctx, node, toAlloc)
		if errors.Is(err, allocator.ErrUnsatisfiable) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for k, claim := range toAlloc {
			out := claim.DeepCopy()
			out.Status.Allocation = &results[k]
			if err := f.AddOrUpdateClaim(out); err != nil {
				return false, err
			}
		}
	}
	for k, p := range on {
		r := s.reqs[p]
		s.nodeClaims[p] = extOf[k]
		names := make([]*resourceapi.ResourceClaim, 0, len(r.claims)+1)
		cons := make([]resourceapi.ResourceClaimConsumerReference, 0, len(r.claims)+1)
		for _, pc := range r.claims {
			names = append(names, pc.Claim)
			cons = append(cons, consumer(r.pod, pc.PodGroup))
		}
		if extOf[k].ext != nil {
			names = append(names, extOf[k].ext)
			cons = append(cons, consumer(r.pod, nil))
		}
		for j, cl := range names {
			cur, ok := f.Claim(cl.Namespace, cl.Name)
			if !ok {
				return false, fmt.Errorf("ResourceClaim %s/%s: %w", cl.Namespace, cl.Name, ErrClaimNotFound)
			}
			if reservedFor(cur, cons[j]) && slices.Contains(cur.Finalizers, resourceapi.Finalizer) {
				continue
			}
			if !reservedFor(cur, cons[j]) && len(cur.Status.ReservedFor) >= resourceapi.ResourceClaimReservedForMaxSize {
				return false, nil
			}
			out := cur.DeepCopy()
			reserve(out, cons[j])
			if err := f.AddOrUpdateClaim(out); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// reset puts the claims pod p owns back as they were before the search: generated ones are removed,
// others restored from the Cluster's snapshot.
func (s *gangSearch) reset(f *allocator.Snapshot, p int) error {
	r := s.reqs[p]
	owner := ownerOf{apiVersion: "v1", kind: "Pod", name: r.pod.Name, uid: uidOf(r.pod)}
	var names []string
	for _, pc := range r.claims {
		if pc.PodGroup == nil && owner.owns(pc.Claim) {
			names = append(names, pc.Claim.Name)
		}
	}
	if s.extNames[p] != "" {
		names = append(names, s.extNames[p])
	}
	for _, name := range names {
		if orig, ok := s.c.snap.Claim(r.pod.Namespace, name); ok {
			if err := f.AddOrUpdateClaim(orig); err != nil {
				return err
			}
		} else if err := f.DeleteClaim(r.pod.Namespace, name); err != nil {
			return err
		}
	}
	return nil
}

// result builds the placements from the final fork.
func (s *gangSearch) result(f *allocator.Snapshot, domainValue string) *GroupPlacement {
	gp := &GroupPlacement{Group: s.group, Domain: domainValue, Pods: make([]*Placement, len(s.reqs))}
	for p, r := range s.reqs {
		if s.assign[p] < 0 {
			continue
		}
		pl := &Placement{Pod: r.pod, Node: s.nodes[s.assign[p]].Name}
		for _, pc := range r.claims {
			cur, _ := f.Claim(pc.Claim.Namespace, pc.Claim.Name)
			orig, existed := s.c.snap.Claim(pc.Claim.Namespace, pc.Claim.Name)
			pl.Claims = append(pl.Claims, PlacedClaim{Name: pc.Name, Claim: cur.DeepCopy(), Generated: !existed,
				Allocated: !existed || orig.Status.Allocation == nil})
		}
		for _, pc := range r.pod.Spec.ResourceClaims {
			if pc.ResourceClaimTemplateName == nil {
				continue
			}
			st := v1.PodResourceClaimStatus{Name: pc.Name}
			for _, placed := range pl.Claims {
				if placed.Name == pc.Name {
					name := placed.Claim.Name
					st.ResourceClaimName = &name
				}
			}
			pl.ResourceClaimStatuses = append(pl.ResourceClaimStatuses, st)
		}
		if nc := s.nodeClaims[p]; nc != nil && nc.ext != nil {
			cur, _ := f.Claim(nc.ext.Namespace, nc.ext.Name)
			pl.Claims = append(pl.Claims, PlacedClaim{Claim: cur.DeepCopy(), Generated: true, Allocated: true})
			pl.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{RequestMappings: nc.mappings, ResourceClaimName: nc.ext.Name}
		}
		gp.Pods[p] = pl
	}
	return gp
}

// AssumeGroup writes a group placement into the snapshot, as [Cluster.Assume] does for each pod.
// Like Assume it writes every claim of every pod or none, and refuses a group placement that no longer
// holds on the snapshot with an error wrapping allocator.ErrConflict.
func (c *Cluster) AssumeGroup(gp *GroupPlacement) error {
	if gp == nil {
		return &allocator.InputError{Object: "GroupPlacement", Err: errors.New("nil object")}
	}
	return c.assume(gp.Pods)
}
