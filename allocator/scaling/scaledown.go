package scaling

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// ErrUnknownNode is wrapped by ScaleDown for a node the Cluster does not hold; the error is an
// *allocator.InputError naming the node.
var ErrUnknownNode = errors.New("node not in the cluster")

// Removal is a scale-down answer for one node.
type Removal struct {
	// Node is the node asked about.
	Node string
	// Removable reports that every pod of the node can be placed elsewhere.
	Removable bool
	// Moves are where the node's pods would go, in the order given; on a node that is not removable,
	// those placed before the first pod that fits nowhere.
	Moves []Move
	// Blocker is the first pod that fits on no other node ("<namespace>/<name>"), and Reason why;
	// empty when Removable.
	Blocker, Reason string
}

// Move is where one pod of a removed node would go.
type Move struct {
	// Pod is "<namespace>/<name>".
	Pod string
	// Node is the node it would go to.
	Node string
	// Placement is the pod's placement there.
	Placement *pods.Placement
}

// ScaleDown answers whether a node can be removed: on a fork, each of the given pods (those bound to
// the node) is removed as the control plane removes a pod (its generated claims deleted, claims no one
// reserves any more deallocated, so their devices on the node are free), the node is deleted, and the
// pods are placed again one at a time, in order, on the other nodes, each seeing the ones placed
// before it. Pods of a PodGroup are placed one by one, as the scheduler places pods of a group already
// admitted. Nothing is changed in the Cluster.
//
// A pod not bound to the node (spec.nodeName another node) is an error naming it: moving it would not
// free the node. A node the Cluster does not hold is an error wrapping [ErrUnknownNode].
func (p *Planner) ScaleDown(ctx context.Context, node string, podsOnNode []*v1.Pod) (*Removal, error) {
	b := &budget{ctx: ctx, limit: p.opts.StepBudget}
	for i, pod := range podsOnNode {
		if pod == nil {
			return nil, &allocator.InputError{Object: fmt.Sprintf("pods[%d]", i), Err: errors.New("nil object")}
		}
		if pod.Spec.NodeName != "" && pod.Spec.NodeName != node {
			return nil, &allocator.InputError{Object: "Pod " + pod.Namespace + "/" + pod.Name, Field: "spec.nodeName", Err: fmt.Errorf("bound to %q, not to %q", pod.Spec.NodeName, node)}
		}
	}
	f := p.c.Fork()
	defer f.Snapshot().Discard()
	// DeleteNode of a name the snapshot does not hold is no error (a delete event may come twice), so
	// without this check an unknown node would be "removable" with nothing to move.
	if !slices.ContainsFunc(f.Snapshot().Nodes(), func(n *v1.Node) bool { return n.Name == node }) {
		object := "Node " + node
		if node == "" {
			object = `Node ""`
		}
		return nil, &allocator.InputError{Object: object, Err: ErrUnknownNode}
	}
	for _, pod := range podsOnNode {
		if err := f.Remove(pod); err != nil {
			return nil, err
		}
	}
	if err := f.Snapshot().DeleteNode(node); err != nil {
		return nil, err
	}
	r := &Removal{Node: node, Removable: true}
	for _, pod := range podsOnNode {
		// The pod as its controller recreates it: unbound, without the status that named the claims
		// generated for it (deleted with it).
		moved := pod.DeepCopy()
		moved.Spec.NodeName = ""
		moved.Status = v1.PodStatus{}
		a, err := try(b, f, Pending{Pod: moved}, "")
		if err != nil {
			return nil, err
		}
		if !a.fits() {
			r.Removable = false
			r.Blocker, r.Reason = pod.Namespace+"/"+pod.Name, a.reason
			return r, nil
		}
		if err := a.assume(f); err != nil {
			return nil, err
		}
		r.Moves = append(r.Moves, Move{Pod: pod.Namespace + "/" + pod.Name, Node: a.single.Node, Placement: a.single})
	}
	return r, nil
}
