package pods

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
)

// NodeKinds sorts nodes into kinds on which the pod fares alike as the Cluster stands: kinds[i] is the
// kind of nodes[i], small numbers in the order of first appearance. On two nodes of one kind
// [Cluster.PlaceOnNode] gives the pod the same answer, up to names (the same reason it does not fit, or
// the same devices of each node's own), and once that placement is assumed on either, the node is of
// one kind with the other given the same placement: a pod of the same shape then fares alike on them
// again. Capacity planning (allocator/headroom) counts the copies of a pod that one node of a kind
// takes, not every node's.
//
// Nodes are of one kind when what the filters read of them is equal: spec.unschedulable, the taints in
// order, status.allocatable, the values of the labels the pod's nodeSelector and required node affinity
// name (the name too where the affinity matches fields), what the pods known there take (their number,
// requests and host ports), and, for the pod's claims, their class under [allocator.NodeClasses] (their
// devices, in use or not, alike but for names). A node is a kind of its own when the Cluster has a
// Predicate (it may read anything of the node), when the pod names the node (spec.nodeName) or has
// claims allocated already or extended resources that DRA serves (the claim made for them is per node),
// and when NodeClasses gives it a class of its own. Kinds say nothing of what placing on one node does
// to another: devices that several nodes can get (network-attached pools) and claims that pods share
// are the caller's to rule out.
//
// The errors are those of [Cluster.Place] before it looks at nodes (a pod that is not valid, a claim
// or template not found, a nil context) and a nil pod or node.
func (c *Cluster) NodeKinds(ctx context.Context, pod *v1.Pod, nodes []*v1.Node) ([]int, error) {
	if pod == nil {
		return nil, &allocator.InputError{Object: "Pod", Err: errors.New("nil object")}
	}
	for i, n := range nodes {
		if n == nil {
			return nil, &allocator.InputError{Object: "Node", Field: fmt.Sprintf("nodes[%d]", i), Err: errors.New("nil object")}
		}
	}
	snap := c.snap
	r, err := c.prepare(snap, pod, nil)
	if err != nil {
		return nil, err
	}
	kinds := make([]int, len(nodes))
	next := 0
	alone := c.opts.Predicate != nil || (pod.Spec.NodeName != "" && c.filterOn(NodeName)) || r.ext != nil || len(r.allocated) > 0
	if alone {
		for i := range kinds {
			kinds[i] = i
		}
		return kinds, nil
	}
	var classes []int
	if len(r.pending) > 0 {
		nc, err := snap.NodeClasses(ctx, r.pending)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", podName(pod), err)
		}
		if classes, err = nc.AppendClasses(nil, nodes); err != nil {
			return nil, fmt.Errorf("%s: %w", podName(pod), err)
		}
	}
	labels, byName := affinityReads(pod)
	seen := map[string]int{}
	var b []byte
	for i, n := range nodes {
		b = b[:0]
		if classes != nil {
			b = binary.LittleEndian.AppendUint64(b, uint64(classes[i]))
		}
		if byName {
			b = append(b, n.Name...)
		}
		b = append(b, 0)
		if n.Spec.Unschedulable {
			b = append(b, 1)
		}
		for _, t := range n.Spec.Taints {
			b = fmt.Appendf(b, "%q%q%q;", t.Key, t.Value, t.Effect)
		}
		b = append(b, 0)
		for _, k := range labels {
			v, ok := n.Labels[k]
			b = fmt.Appendf(b, "%t%q;", ok, v)
		}
		b = append(b, 0)
		for _, name := range slices.Sorted(maps.Keys(n.Status.Allocatable)) {
			q := n.Status.Allocatable[name]
			b = fmt.Appendf(b, "%s=%s;", name, q.String())
		}
		b = append(b, 0)
		if u := c.usageOf(n.Name); u != nil {
			b = fmt.Appendf(b, "%d;", u.pods)
			for _, name := range slices.Sorted(maps.Keys(u.requested)) {
				b = fmt.Appendf(b, "%s=%d;", name, u.requested[name])
			}
			b = append(b, 0)
			ports := make([]string, len(u.ports))
			for j, p := range u.ports {
				ports[j] = fmt.Sprintf("%s/%s/%d", p.ip, p.protocol, p.port)
			}
			slices.Sort(ports)
			b = append(b, strings.Join(ports, ";")...)
		}
		kind, ok := seen[string(b)]
		if !ok {
			kind = next
			next++
			seen[string(b)] = kind
		}
		kinds[i] = kind
	}
	return kinds, nil
}

// affinityReads returns the label keys the pod's nodeSelector and required node affinity read, sorted,
// and whether the affinity matches fields (the node's name).
func affinityReads(pod *v1.Pod) ([]string, bool) {
	var keys []string
	for k := range pod.Spec.NodeSelector {
		keys = append(keys, k)
	}
	byName := false
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				keys = append(keys, e.Key)
			}
			byName = byName || len(t.MatchFields) > 0
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), byName
}
