package pods

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/dralloc/dralloc/allocator"
)

// GroupUnschedulableError says why kube-scheduler leaves a PodGroup pending: its one pass over the
// group's pods ([Cluster.PlaceGroup]) did not give minCount of them a node. errors.Is(err,
// ErrGroupUnschedulable) holds for it.
type GroupUnschedulableError struct {
	// Group is the PodGroup, "namespace/name".
	Group string
	// Reason is the verdict of kube-scheduler's GangScheduling plugin that ended the pass, worded as the
	// plugin words it: "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining". kube-scheduler puts
	// it in the PodGroup's PodGroupInitiallyScheduled condition and in the PodScheduled condition of the
	// pods the pass did place, after "pod group is unschedulable" (and, with a topology constraint or
	// TopologyAwareWorkloadScheduling, after "0/N placements are available, first placement status: ").
	Reason string
	// Domain is the value of the topology label whose pass gave Reason (the first domain by value); empty
	// without a topology constraint.
	Domain string
	// Nodes are, per pod given, the node the pass chose for it before the group fell short; "" for a pod
	// that fits on no node or that the pass did not reach. kube-scheduler gives these nodes back: the
	// pods stay pending.
	Nodes []string
	// NoNode are, per pod given, why it fits on no node (as [Cluster.Place] says it); nil for a pod the
	// pass placed or did not reach. kube-scheduler writes that reason into the pod's PodScheduled
	// condition.
	NoNode []*NoNodeError
}

func (e *GroupUnschedulableError) Error() string {
	return fmt.Sprintf("PodGroup %s: %v: %s", e.Group, ErrGroupUnschedulable, e.Reason)
}

// Unwrap makes errors.Is(err, ErrGroupUnschedulable) true.
func (e *GroupUnschedulableError) Unwrap() error { return ErrGroupUnschedulable }

// PlaceGroup places the pods of a PodGroup as kube-scheduler v1.37.2 does, in one pass without
// backtracking (podGroupSchedulingDefaultAlgorithm in pkg/scheduler/schedule_one_podgroup.go): the pods
// are taken in the queue's order (PodGroupMemberPodsOrderingFunc: higher spec.priority first, then, as
// all are first attempts, in the order given, which stands for the order they were queued in), and each
// is placed as [Cluster.Place] places a pod alone (the Options' node choice), on the cluster with the
// pods before it assumed. A pod that fits nowhere is left out and the pass goes on. After each pod the
// GangScheduling plugin's PlacementFeasible judges minCount (spec.schedulingPolicy.gang.minCount; 1
// without the gang policy, as its getMinCount says): when the pods placed plus the pods still to come
// can no longer reach it, the pass stops and the group is unschedulable; else every pod is tried, and
// the group is placed with the pods that fit (nil in Pods for the others: they stay pending). Pods of the
// group the Cluster already knows on nodes (assumed, or added with [Cluster.AddOrUpdatePod]) count as
// scheduled, as the plugin counts the group's scheduled pods.
//
// With a topology constraint (spec.schedulingConstraints.topology[0].key), as TopologyPlacementGenerator
// generates one placement per value of that node label (only the value of the group's pods already on
// nodes, if any), the pass runs once per domain on its nodes, and of the passes that succeed the one
// placing most pods is kept, as the PodGroupPodsCount placement score keeps it; kube-scheduler draws at
// random among equal scores, dralloc takes the first domain by value.
//
// A group the pass cannot place gives a *GroupUnschedulableError with the plugin's reason, even where
// another choice of nodes would place it: kube-scheduler does not look for one, and the pods stay
// pending. [Cluster.SearchGroupPlacement] answers that other question, whether any placement exists.
// Use PlaceGroup to predict what the cluster will do (an autoscaler asking whether a new node makes a
// pending gang schedulable), SearchGroupPlacement to know whether the group can run at all.
//
// Pods must name the group in spec.schedulingGroup.podGroupName; a pod listed twice is invalid input,
// and a pod with scheduling gates gives [ErrSchedulingGated] (kube-scheduler does not queue it; leave it
// out until its gates are removed). An error of one pod other than fitting nowhere (a claim not found,
// a cancelled context) ends the pass with that error. Nothing is changed; [Cluster.AssumeGroup] writes
// the result into the snapshot. The pass costs one Place per pod and domain.
func (c *Cluster) PlaceGroup(ctx context.Context, group *schedulingapi.PodGroup, pods []*v1.Pod) (*GroupPlacement, error) {
	if group == nil {
		return nil, &allocator.InputError{Object: "PodGroup", Err: errors.New("nil object")}
	}
	g, ok := c.group(group.Namespace, group.Name)
	if !ok {
		return nil, fmt.Errorf("PodGroup %s/%s: %w", group.Namespace, group.Name, ErrPodGroupNotFound)
	}
	if err := checkMembers(g, pods); err != nil {
		return nil, err
	}
	for _, pod := range pods {
		if err := c.gatedError(pod); err != nil {
			return nil, err
		}
	}
	// The queue's order: by priority, higher first; stable, so that the order given breaks ties.
	order := make([]int, len(pods))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int {
		return cmp.Compare(corev1helpers.PodPriority(pods[y]), corev1helpers.PodPriority(pods[x]))
	})
	scheduled, onNodes := c.groupOnNodes(g, pods)

	var key string
	if sc := g.Spec.SchedulingConstraints; sc != nil && len(sc.Topology) > 0 {
		key = sc.Topology[0].Key
	}
	all := c.snap.Nodes()
	doms := domains(all, key)
	if key != "" && len(onNodes) > 0 {
		// TopologyPlacementGenerator: the domain of the group's pods on nodes is the only one.
		want, err := c.scheduledDomain(g, key, onNodes)
		if err != nil {
			return nil, err
		}
		doms = slices.DeleteFunc(doms, func(d domain) bool { return d.value != want })
	}
	object := g.Namespace + "/" + g.Name
	if len(doms) == 0 {
		return nil, &GroupUnschedulableError{Group: object, Reason: fmt.Sprintf("0/0 placements are available: no node has the label %s", key),
			Nodes: make([]string, len(pods)), NoNode: make([]*NoNodeError, len(pods))}
	}
	var best, failed *groupPass
	for _, d := range doms {
		var nodes []*v1.Node
		if key != "" {
			nodes = d.nodes
		}
		p, err := c.passGroup(ctx, g, pods, order, scheduled, nodes)
		if err != nil {
			if best != nil {
				best.fork.snap.Discard()
			}
			return nil, err
		}
		p.domain = d.value
		switch {
		case p.err == nil && (best == nil || p.placed > best.placed):
			if best != nil {
				best.fork.snap.Discard()
			}
			best = p
		case p.err != nil && failed == nil:
			p.fork.snap.Discard()
			p.err.Domain = d.value
			failed = p
		default:
			p.fork.snap.Discard()
		}
	}
	if best == nil {
		return nil, failed.err
	}
	defer best.fork.snap.Discard()
	return c.passResult(g, best), nil
}

// groupPass is one pass over the group's pods on the nodes of one domain.
type groupPass struct {
	fork   *Cluster     // the Cluster with the placed pods assumed
	pl     []*Placement // per pod given
	placed int
	domain string
	err    *GroupUnschedulableError // why the group is unschedulable; nil when placed
}

// minCountOf is GangScheduling's getMinCount: the gang's minCount, 1 without the gang policy.
func minCountOf(g *schedulingapi.PodGroup) int {
	if gang := g.Spec.SchedulingPolicy.Gang; gang != nil {
		return int(gang.MinCount)
	}
	return 1
}

// feasible is GangScheduling's PlacementFeasible: "" while minCount may still be met (met, or to wait
// for), else the reason, worded as the plugin words it.
func feasible(minCount, scheduled, remaining int) string {
	if remaining+scheduled < minCount {
		return fmt.Sprintf("minCount (%d) cannot be satisfied: %d scheduled, %d remaining", minCount, scheduled, remaining)
	}
	return ""
}

// passGroup runs the pass on a fork of the Cluster, on nodes (nil: all of them). An error is one that
// ends kube-scheduler's pass with an error status: it is the caller's, not the group's.
func (c *Cluster) passGroup(ctx context.Context, g *schedulingapi.PodGroup, pods []*v1.Pod, order []int, scheduled int, nodes []*v1.Node) (*groupPass, error) {
	minCount := minCountOf(g)
	p := &groupPass{fork: c.Fork(), pl: make([]*Placement, len(pods))}
	fail := func(reason string) *groupPass {
		p.err = &GroupUnschedulableError{Group: g.Namespace + "/" + g.Name, Reason: reason,
			Nodes: make([]string, len(pods)), NoNode: make([]*NoNodeError, len(pods))}
		for i, pl := range p.pl {
			if pl != nil {
				p.err.Nodes[i] = pl.Node
			}
		}
		return p
	}
	remaining := len(pods)
	// PlacementFeasible runs once before any pod is tried.
	if reason := feasible(minCount, scheduled, remaining); reason != "" {
		return fail(reason), nil
	}
	noNode := make([]*NoNodeError, len(pods))
	for _, i := range order {
		pl, err := p.fork.placeAmong(ctx, pods[i], nodes)
		var nn *NoNodeError
		switch {
		case errors.As(err, &nn):
			noNode[i] = nn
		case err != nil:
			p.fork.snap.Discard()
			return nil, err
		default:
			if err := p.fork.Assume(pl); err != nil {
				p.fork.snap.Discard()
				return nil, err
			}
			p.pl[i] = pl
			p.placed++
			scheduled++
		}
		remaining--
		if reason := feasible(minCount, scheduled, remaining); reason != "" {
			fail(reason)
			p.err.NoNode = noNode
			return p, nil
		}
	}
	if p.placed == 0 {
		// As runRootSchedulingAlgorithm: a pass that schedules no pod is no success, even with minCount
		// met by the pods already on nodes.
		fail("pod group is unschedulable")
		p.err.NoNode = noNode
	}
	return p, nil
}

// placeAmong is Place on nodes only (nil: all of them), on the Cluster's own snapshot.
func (c *Cluster) placeAmong(ctx context.Context, pod *v1.Pod, nodes []*v1.Node) (*Placement, error) {
	if nodes == nil {
		return c.Place(ctx, pod)
	}
	r, err := c.prepare(c.snap, pod, nil)
	if err != nil {
		return nil, err
	}
	p, err := c.place(ctx, c.snap, r, nodes)
	if err != nil {
		return nil, err
	}
	if err := c.grow(c.snap, p); err != nil {
		return nil, err
	}
	return p, nil
}

// passResult builds the group placement from a pass: every claim as the pass left it on the fork, and
// generated or allocated as seen from the Cluster, so that AssumeGroup writes the same in any order of
// the pods (a claim of the PodGroup is allocated by whichever pod came first in the pass).
func (c *Cluster) passResult(g *schedulingapi.PodGroup, p *groupPass) *GroupPlacement {
	gp := &GroupPlacement{Group: g, Domain: p.domain, Pods: make([]*Placement, len(p.pl))}
	for i, pl := range p.pl {
		if pl == nil {
			continue
		}
		out := *pl
		out.Claims = make([]PlacedClaim, len(pl.Claims))
		for k, pc := range pl.Claims {
			cur, ok := p.fork.snap.Claim(pc.Claim.Namespace, pc.Claim.Name)
			if !ok {
				cur = pc.Claim
			}
			orig, existed := c.snap.Claim(pc.Claim.Namespace, pc.Claim.Name)
			out.Claims[k] = PlacedClaim{Name: pc.Name, Claim: cur.DeepCopy(), Generated: !existed,
				Allocated: !existed || orig.Status.Allocation == nil}
		}
		gp.Pods[i] = &out
	}
	return gp
}

// groupOnNodes counts the pods of the group the Cluster knows on nodes, other than the pods given (a pod
// given that is on a node already is placed again), and returns their nodes, sorted: GangScheduling's
// count of the group's scheduled pods.
func (c *Cluster) groupOnNodes(g *schedulingapi.PodGroup, pods []*v1.Pod) (int, []string) {
	given := make(map[string]bool, len(pods))
	for _, pod := range pods {
		given[pod.Name] = true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var nodes []string
	for key, b := range c.bound {
		if key.Namespace == g.Namespace && b.group == g.Name && !given[key.Name] {
			nodes = append(nodes, b.node)
		}
	}
	slices.Sort(nodes)
	return len(nodes), nodes
}

// scheduledDomain is TopologyPlacementGenerator's domain of the group's pods on nodes: the value of the
// label key they all share. Nodes that disagree, or lack the label, are an error, as they are to the
// plugin.
func (c *Cluster) scheduledDomain(g *schedulingapi.PodGroup, key string, nodes []string) (string, error) {
	object := "PodGroup " + g.Namespace + "/" + g.Name
	value := ""
	for _, name := range nodes {
		node, ok := c.snap.Node(name)
		if !ok {
			return "", fmt.Errorf("%s: a pod of the group is on node %s, which is not in the snapshot", object, name)
		}
		v, ok := node.Labels[key]
		if !ok {
			return "", fmt.Errorf("%s: a pod of the group is on node %s, which has no label %s", object, name, key)
		}
		if value != "" && v != value {
			return "", fmt.Errorf("%s: pods of the group are on nodes of two values of %s: %s and %s", object, key, value, v)
		}
		value = v
	}
	return value, nil
}
