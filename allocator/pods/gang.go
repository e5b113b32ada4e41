package pods

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

// ErrGroupUnschedulable reports that a PodGroup cannot be placed: from [Cluster.PlaceGroup], kube-scheduler's
// pass does not give minCount of its pods a node (a *GroupUnschedulableError says why); from
// [Cluster.SearchGroupPlacement], no choice of nodes (within one topology domain) does. Running out of
// the search's [Budget] gives allocator.ErrSearchBudget instead, and a cancelled context its cause:
// "gave up" is never "does not fit".
var ErrGroupUnschedulable = errors.New("pod group cannot be placed")

// DefaultGroupBudget is the most tries of one [Cluster.SearchGroupPlacement] call when neither its [Budget] nor
// Options.StepBudget sets a limit. The pruned search decides the gangs of real clusters in far fewer
// tries (a gang of identical pods over nodes of a few kinds in tens); the limit is there for gangs of
// many different pods over many different nodes, whose search can grow exponentially.
const DefaultGroupBudget = 100_000

// Budget bounds the search of [Cluster.SearchGroupPlacement]. A try is one allocation on one node: a pod put on a
// node (the claims of the group's pods there allocated together), or a node asked how many pods of one
// kind it holds. Several calls may share a Budget, one at a time, to be bounded together: Used counts on.
type Budget struct {
	// Limit is the most tries, Used included; 0 means Options.StepBudget, or DefaultGroupBudget when that
	// is 0 too. It must not be negative.
	Limit int
	// Used is the number of tries made so far by the calls given this Budget.
	Used int
}

// GroupPlacement is where the pods of a PodGroup go.
type GroupPlacement struct {
	// Group is the PodGroup (the Cluster's copy; not to be modified).
	Group *schedulingapi.PodGroup
	// Domain is the value of the topology label that every chosen node has; empty without a topology
	// constraint.
	Domain string
	// Pods are the placements, one per pod given, in order; nil for a pod left out (a gang needs only
	// minCount of its pods, a group with the basic policy one).
	Pods []*Placement
}

// SearchGroupPlacement searches for any placement of the pods of a PodGroup that the GangScheduling
// plugin would admit: with a gang policy all or nothing, at least spec.schedulingPolicy.gang.minCount
// pods must get a node; with the basic policy (no gang) the group's minCount is 1, as the plugin's
// getMinCount says, so the pods that fit get a node and the others are left out (nil in Pods), and only
// a group where no pod fits is unschedulable. With a topology constraint
// (spec.schedulingConstraints.topology[0].key) all of them on nodes with one value of that node label;
// domains are tried in order of value, nodes in order of name. The group's claims are allocated once, by
// the first pod that needs them, and reserved for the group.
//
// It answers "does a placement exist", which is not what kube-scheduler does: kube-scheduler makes one
// pass over the pods without going back ([Cluster.PlaceGroup]), and leaves pending a gang whose pass
// falls short even where this search finds a placement. Use it to know whether a group can run on the
// cluster at all (capacity planning, telling "never" from "not as the scheduler goes"), and
// [Cluster.PlaceGroup] to predict what the scheduler does.
//
// The search backtracks across pods and nodes: when a pod finds no node, the pods before it move. On one
// node the claims of all the group's pods there are allocated together, so the allocator's own search
// chooses their devices jointly: two pods that each need part of one partitionable GPU both fit, where
// placing them one at a time lets the first take the whole GPU. The search skips what cannot change the
// answer: pods that ask for the same (the same claims from the same templates, the same node
// restrictions) are not permuted, nodes that no pod of the group can tell apart
// ([allocator.Snapshot.NodeClasses], the same predicates) are one choice while empty, and a domain
// whose nodes cannot hold minCount pods (counting, per kind of pod, how many one node holds) is not
// searched. It returns the first placement in order of the pods and then of the nodes, as the search
// without these cuts would. It does not use Options.Choice: it allocates in the snapshot's own strategy.
//
// budget bounds the search (nil: a Budget of its own with the default limit); running out gives an
// error wrapping allocator.ErrSearchBudget. A pod listed twice (the same object, UID or name) is invalid
// input. Nothing is changed; [Cluster.AssumeGroup] writes the result into the snapshot. Pods must name
// the group in spec.schedulingGroup.podGroupName; a pod with scheduling gates gives [ErrSchedulingGated]
// (kube-scheduler does not take it; leave it out until its gates are removed). The built-in filters
// count the group's pods on one node together (their requests, host ports and number).
func (c *Cluster) SearchGroupPlacement(ctx context.Context, group *schedulingapi.PodGroup, pods []*v1.Pod, budget *Budget) (*GroupPlacement, error) {
	return c.placeGroup(ctx, group, pods, budget, true)
}

// placeGroup is SearchGroupPlacement; prune false searches every assignment (the tests' reference).
func (c *Cluster) placeGroup(ctx context.Context, group *schedulingapi.PodGroup, pods []*v1.Pod, budget *Budget, prune bool) (*GroupPlacement, error) {
	if group == nil {
		return nil, &allocator.InputError{Object: "PodGroup", Err: errors.New("nil object")}
	}
	g, ok := c.group(group.Namespace, group.Name)
	if !ok {
		return nil, fmt.Errorf("PodGroup %s/%s: %w", group.Namespace, group.Name, ErrPodGroupNotFound)
	}
	object := "PodGroup " + g.Namespace + "/" + g.Name
	if budget == nil {
		budget = &Budget{}
	}
	limit := budget.Limit
	switch {
	case limit < 0:
		return nil, &allocator.InputError{Object: object, Field: "budget.limit", Err: fmt.Errorf("must not be negative, got %d", limit)}
	case limit == 0 && c.opts.StepBudget > 0:
		limit = c.opts.StepBudget
	case limit == 0:
		limit = DefaultGroupBudget
	}
	// As GangScheduling's getMinCount (pkg/scheduler/framework/plugins/gangscheduling, v1.37.2): a
	// group without a gang policy needs one pod placed; PlacementFeasible lets the others wait.
	minCount := minCountOf(g)
	if len(pods) < minCount {
		return nil, fmt.Errorf("%s: %w: %d pods, spec.schedulingPolicy.gang.minCount is %d", object, ErrGroupUnschedulable, len(pods), minCount)
	}
	if err := checkMembers(g, pods); err != nil {
		return nil, err
	}
	// Resolve every pod's claims on a fork that holds the group's generated claims, so that all pods
	// share one.
	base := c.snap.Fork()
	defer base.Discard()
	s := &gangSearch{c: c, ctx: ctx, group: g, minCount: minCount, budget: budget, limit: limit, prune: prune}
	taken := map[string]bool{} // names generated for the group's pods, which no pod may reuse
	for _, pod := range pods {
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
	all := c.snap.Nodes()
	if err := s.prepare(base, all); err != nil {
		return nil, err
	}

	var key string
	if sc := g.Spec.SchedulingConstraints; sc != nil && len(sc.Topology) > 0 {
		key = sc.Topology[0].Key
	}
	for _, domain := range domains(all, key) {
		s.setDomain(domain)
		if s.prune {
			enough, err := s.enoughRoom(base)
			if err != nil {
				return nil, err
			}
			if !enough {
				continue
			}
		}
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
	return nil, fmt.Errorf("%s: %w", object, ErrGroupUnschedulable)
}

// checkMembers refuses pods that do not name the group, and a pod listed twice (the same object, UID
// or name), which would otherwise be placed twice, on two sets of devices.
func checkMembers(g *schedulingapi.PodGroup, pods []*v1.Pod) error {
	object := "PodGroup " + g.Namespace + "/" + g.Name
	byName := make(map[string]int, len(pods))
	byUID := make(map[types.UID]int, len(pods))
	for i, pod := range pods {
		if pod == nil || pod.Spec.SchedulingGroup == nil || pod.Spec.SchedulingGroup.PodGroupName == nil ||
			*pod.Spec.SchedulingGroup.PodGroupName != g.Name || pod.Namespace != g.Namespace {
			return &allocator.InputError{Object: fmt.Sprintf("pods[%d]", i), Field: "spec.schedulingGroup.podGroupName", Err: fmt.Errorf("must name PodGroup %s/%s in its namespace", g.Namespace, g.Name)}
		}
		if j, ok := byName[pod.Name]; ok {
			return &allocator.InputError{Object: object, Field: fmt.Sprintf("pods[%d]", i), Err: fmt.Errorf("duplicate of pods[%d]: Pod %s/%s listed twice", j, pod.Namespace, pod.Name)}
		}
		byName[pod.Name] = i
		if pod.UID != "" {
			if j, ok := byUID[pod.UID]; ok {
				return &allocator.InputError{Object: object, Field: fmt.Sprintf("pods[%d]", i), Err: fmt.Errorf("duplicate of pods[%d]: Pod %s/%s has the UID %s of Pod %s/%s", j, pod.Namespace, pod.Name, pod.UID, pods[j].Namespace, pods[j].Name)}
			}
			byUID[pod.UID] = i
		}
	}
	return nil
}

type domain struct {
	value string
	nodes []*v1.Node
	index []int // per node: its index in the snapshot's list of nodes
}

// domains groups the nodes (sorted by name) by the value of the label key, sorted by value; without a
// key, all nodes are one domain. Nodes without the label are in none.
func domains(nodes []*v1.Node, key string) []domain {
	if key == "" {
		index := make([]int, len(nodes))
		for i := range index {
			index[i] = i
		}
		return []domain{{nodes: nodes, index: index}}
	}
	var out []domain
	for k, n := range nodes {
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
		out[i].index = append(out[i].index, k)
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
