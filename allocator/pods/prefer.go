package pods

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
)

// Prefer names devices that a pod's claims should take first on the node a [Cost] chose (see
// Options.Prefer), in the order to try them; in is what the Cost rated there. It is called from one
// goroutine, once per placement, and must not change the snapshot.
type Prefer func(in CostInput) ([]allocator.DeviceID, error)

// prefer asks Options.Prefer for the devices the pod's claims should take on the node leastCost chose
// (allocs[i], its own allocation) and, when it names some, allocates the claims there again preferring
// them, in allocs[i]. The preference never rules a device out, so the claims fit there again.
func (c *Cluster) prefer(ctx context.Context, snap *allocator.Snapshot, r *request, node *v1.Node, allocs []*allocVerdict, i int) error {
	v := allocs[i]
	if len(v.nc.claims) == 0 {
		return nil
	}
	var requested map[v1.ResourceName]int64
	if u := c.usageOf(node.Name); u != nil {
		requested = u.requested
	}
	devices, err := c.opts.Prefer(CostInput{Snapshot: snap, Pod: r.pod, Node: node, Results: v.results, Requested: requested, PodRequests: r.demand.requests})
	if err != nil {
		return fmt.Errorf("%s: node %s: prefer: %w", podName(r.pod), node.Name, err)
	}
	if len(devices) == 0 {
		return nil
	}
	results, err := snap.AllocatePreferring(ctx, allocator.BestFit, devices, node, v.nc.claims)
	if err != nil {
		return fmt.Errorf("%s: node %s: %w", podName(r.pod), node.Name, err)
	}
	allocs[i] = &allocVerdict{nc: v.nc, results: results, own: true}
	return nil
}
