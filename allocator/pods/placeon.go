package pods

import (
	"context"
	"errors"
	"fmt"

	"github.com/dralloc/dralloc/allocator"
	v1 "k8s.io/api/core/v1"
)

// PlaceOnNode is [Cluster.Place] restricted to one node: the same filters, predicates, claims and
// errors (a pod that does not fit there is a *[NoNodeError] naming that node alone), without looking
// at the other nodes, so that its cost does not grow with the cluster. Capacity planning
// (allocator/headroom) fills nodes one by one with it. A node the snapshot does not have is an error.
func (c *Cluster) PlaceOnNode(ctx context.Context, pod *v1.Pod, nodeName string) (*Placement, error) {
	if pod == nil {
		return nil, &allocator.InputError{Object: "Pod", Err: errors.New("nil object")}
	}
	snap := c.snap
	for try := 1; ; try++ {
		node, ok := snap.Node(nodeName)
		if !ok {
			return nil, fmt.Errorf("%s: node %s not found", podName(pod), nodeName)
		}
		rev := snap.Revision()
		p, err := c.placeOnNodeOnce(ctx, snap, pod, node)
		// As Place: the snapshot changed between filtering and allocating; decide again.
		if !errors.Is(err, allocator.ErrUnsatisfiable) || errors.Is(err, ErrNoNode) || snap.Revision() == rev {
			return p, err
		}
		if try == placeTries {
			return nil, fmt.Errorf("%s: %w: the snapshot changed while the pod was placed, %d times", podName(pod), allocator.ErrConflict, placeTries)
		}
	}
}

func (c *Cluster) placeOnNodeOnce(ctx context.Context, snap *allocator.Snapshot, pod *v1.Pod, node *v1.Node) (*Placement, error) {
	r, err := c.prepare(snap, pod, nil)
	if err != nil {
		return nil, err
	}
	p, err := c.place(ctx, snap, r, []*v1.Node{node})
	if err != nil {
		return nil, err
	}
	if err := c.grow(snap, p); err != nil {
		return nil, err
	}
	return p, nil
}
