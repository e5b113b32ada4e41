package pods

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// Prefer names devices that a pod's claims should take first on the node a [Cost] chose (see
// Options.Prefer), in the order to try them; in is what the Cost rated there. It is called from one
// goroutine, once per placement, and must not change the snapshot.
type Prefer func(in CostInput) ([]allocator.DeviceID, error)

// ownAllocation makes allocs[i], the allocation of the node leastCost chose, the placement's own: the
// class's allocation renamed to the node carries the share IDs drawn on the node that asked for the
// class, so the claims are allocated on the node itself, once. Options.Prefer, when set, is asked first,
// on the results the node was rated on; when it names devices the claims are allocated there preferring
// them (the preference never rules a device out, so the claims fit there again).
func (c *Cluster) ownAllocation(ctx context.Context, snap *allocator.Snapshot, r *request, node *v1.Node, allocs []*allocVerdict, i int, rated []resourceapi.AllocationResult) error {
	v := allocs[i]
	var devices []allocator.DeviceID
	if c.opts.Prefer != nil && len(v.nc.claims) > 0 {
		var requested map[v1.ResourceName]int64
		if u := c.usageOf(node.Name); u != nil {
			requested = u.requested
		}
		var err error
		devices, err = c.opts.Prefer(CostInput{Snapshot: snap, Pod: r.pod, Node: node, Results: rated, Requested: requested, PodRequests: r.demand.requests})
		if err != nil {
			return fmt.Errorf("%s: node %s: prefer: %w", podName(r.pod), node.Name, err)
		}
	}
	if len(devices) == 0 && v.own {
		return nil
	}
	results, err := snap.AllocatePreferring(ctx, allocator.BestFit, devices, node, v.nc.claims)
	if err != nil {
		return fmt.Errorf("%s: node %s: %w", podName(r.pod), node.Name, err)
	}
	allocs[i] = &allocVerdict{nc: v.nc, results: results, own: true}
	return nil
}
