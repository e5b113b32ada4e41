package pods

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// Cost rates placing a pod's claims on a node with these allocation results (in the order of the claims
// Place allocates there; none for a pod without claims to allocate): the lower, the better. It is
// called from one goroutine, on the snapshot as filtered, which it must not change. An error stops the
// placement and is returned.
type Cost func(snap *allocator.Snapshot, node *v1.Node, results []resourceapi.AllocationResult) (float64, error)

// leastCost chooses, for Options.Cost, the node where the pod fits whose allocation costs least, the
// first by position on ties; -1 when it fits nowhere. Every node was filtered (scored), so an error on
// any is returned, the first. A node whose allocation is its class's, not its own, is allocated on its
// own here, so that the cost sees its own devices; the chosen node's allocation is kept in allocs for
// the placement.
func (c *Cluster) leastCost(ctx context.Context, snap *allocator.Snapshot, r *request, nodes []*v1.Node, verdicts *verdictPages, allocs []*allocVerdict) (int, error) {
	for i := range nodes {
		if err := verdicts.get(i).err; err != nil {
			return -1, fmt.Errorf("%s: node %s: %w", podName(r.pod), nodes[i].Name, err)
		}
	}
	chosen := -1
	var best float64
	for i := range nodes {
		v := allocs[i]
		if !verdicts.get(i).fits || v == nil {
			continue
		}
		if !v.own {
			results, err := snap.AllocateWith(ctx, allocator.BestFit, nodes[i], v.nc.claims)
			if err != nil {
				return -1, fmt.Errorf("%s: node %s: %w", podName(r.pod), nodes[i].Name, err)
			}
			v = &allocVerdict{nc: v.nc, results: results, own: true}
			allocs[i] = v
		}
		cost, err := c.opts.Cost(snap, nodes[i], v.results)
		if err != nil {
			return -1, fmt.Errorf("%s: node %s: cost: %w", podName(r.pod), nodes[i].Name, err)
		}
		if chosen < 0 || cost < best {
			chosen, best = i, cost
		}
	}
	return chosen, nil
}
