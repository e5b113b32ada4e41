package pods

import (
	"context"
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// Cost rates placing a pod on a node (see [CostInput]): the lower, the better. It is called from one
// goroutine, on the snapshot as filtered, which it must not change. An error stops the placement and is
// returned.
type Cost func(in CostInput) (float64, error)

// CostInput is what a [Cost] rates: the pod placed on the node with these allocation results. The maps
// are the Cluster's own: do not modify them.
type CostInput struct {
	// Snapshot is the snapshot as filtered.
	Snapshot *allocator.Snapshot
	Pod      *v1.Pod
	Node     *v1.Node
	// Results are the allocations of the pod's claims on the node, in the order of the claims Place
	// allocates there; none for a pod without claims to allocate. On a node of a class of nodes alike
	// (allocator.NodeClasses) they may be the class's allocation renamed to the node's devices, whose
	// share IDs were drawn for another node of the class; the placement draws its own.
	Results []resourceapi.AllocationResult
	// Requested is what the pods on the node already request, as NodeResourcesFit counts them (the pods
	// given to AddOrUpdatePod and assumed; cpu in millicores, the others in units, memory in bytes);
	// PodRequests is what the pod requests, counted alike. A resource not requested is absent.
	Requested, PodRequests map[v1.ResourceName]int64
}

// leastCost chooses, for Options.Cost, the node where the pod fits whose allocation costs least, the
// first by position on ties; -1 when it fits nowhere. Every node was filtered (scored), so an error on
// any is returned, the first. A node whose allocation is its class's, not its own, is rated on the
// class's allocation renamed to its devices (NodeClasses.Rename: the allocation AllocateWith gives
// there, without a search per node); the chosen node's allocation is kept in allocs for the placement,
// allocated on the node itself where it was its class's.
func (c *Cluster) leastCost(ctx context.Context, snap *allocator.Snapshot, classes *allocator.NodeClasses, r *request, nodes []*v1.Node, verdicts *verdictPages, allocs []*allocVerdict) (int, error) {
	for i := range nodes {
		if err := verdicts.get(i).err; err != nil {
			return -1, fmt.Errorf("%s: node %s: %w", podName(r.pod), nodes[i].Name, err)
		}
	}
	chosen := -1
	var best float64
	var rated []resourceapi.AllocationResult // what the chosen node was rated on
	for i := range nodes {
		v := allocs[i]
		if !verdicts.get(i).fits || v == nil {
			continue
		}
		results := v.results
		if !v.own {
			// The class's allocation, renamed to the node's devices: what AllocateWith gives there.
			// Renaming fails only where the snapshot changed since the classes were made (a
			// concurrent Assume): the node is then allocated on its own, as it is now.
			var err error
			if results, err = classes.Rename(v.results, v.class.node, nodes[i]); err != nil {
				if results, err = snap.AllocateWith(ctx, allocator.BestFit, nodes[i], v.nc.claims); err != nil {
					return -1, fmt.Errorf("%s: node %s: %w", podName(r.pod), nodes[i].Name, err)
				}
				v = &allocVerdict{nc: v.nc, results: results, own: true}
				allocs[i] = v
			}
		}
		var requested map[v1.ResourceName]int64
		if u := c.usageOf(nodes[i].Name); u != nil {
			requested = u.requested
		}
		cost, err := c.opts.Cost(CostInput{Snapshot: snap, Pod: r.pod, Node: nodes[i], Results: results, Requested: requested, PodRequests: r.demand.requests})
		if err != nil {
			return -1, fmt.Errorf("%s: node %s: cost: %w", podName(r.pod), nodes[i].Name, err)
		}
		if chosen < 0 || cost < best {
			chosen, best, rated = i, cost, results
		}
	}
	if chosen < 0 {
		return -1, nil
	}
	if err := c.ownAllocation(ctx, snap, r, nodes[chosen], allocs, chosen, rated); err != nil {
		return -1, err
	}
	return chosen, nil
}

// Requested is what the pods the Cluster knows on the node request, as [CostInput.Requested] counts
// it (the pods given to AddOrUpdatePod and assumed): a new map, empty for a node without pods.
func (c *Cluster) Requested(node string) map[v1.ResourceName]int64 {
	out := map[v1.ResourceName]int64{}
	if u := c.usageOf(node); u != nil {
		maps.Copy(out, u.requested)
	}
	return out
}
