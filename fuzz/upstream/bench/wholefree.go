package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	resourceapi "k8s.io/api/resource/v1"
)

// Releaser is a Placer whose allocated claims can depart.
type Releaser interface {
	Placer
	// Release deallocates a claim recorded before.
	Release(ctx context.Context, claim *resourceapi.ResourceClaim) error
}

// WholeFree is what the whole-GPU measure found for one placer.
type WholeFree struct {
	// FreeAtWhole is, for each claim for a whole GPU in the stream up to the first that fits nowhere,
	// how many GPUs of the fleet had all their memory slices free when it arrived.
	FreeAtWhole []int
	// FirstFailure is the position in the stream of the first claim for a whole GPU that fits nowhere.
	FirstFailure int
}

// WholeGPUsFree feeds the claim stream to the placer with departures, each claim to the first node where
// it fits, until the first claim for a whole GPU that fits nowhere; smaller claims that fit nowhere are
// dropped. After each arrival, with a fixed pseudo-random chance of 30 %, one allocated claim drawn at
// random departs. Before every claim for a whole GPU it counts the GPUs left whole: packing keeps them.
//
// With packNodes, a claim goes instead to the node where its allocation draws on the GPU with the most
// memory slices in use already (the first such node on ties), which asks every node: packing across
// nodes, as a scheduler's scoring of every feasible node would.
func WholeGPUsFree(ctx context.Context, c Cluster, p Releaser, stream []*resourceapi.ResourceClaim, packNodes bool) (WholeFree, error) {
	var out WholeFree
	gpus := 0
	for _, s := range c.Slices {
		gpus += len(s.Spec.SharedCounters)
	}
	type gpuKey struct {
		node string
		gpu  int
	}
	used := map[gpuKey]int{} // memory slices in use per GPU
	type live struct {
		claim *resourceapi.ResourceClaim
		gpus  []gpuKey
		sizes []int
	}
	var alive []live
	rng := rand.New(rand.NewPCG(6, 30))
	for at, claim := range stream {
		var size int
		if _, err := fmt.Sscanf(claim.Spec.Devices.Requests[0].Exactly.DeviceClassName, "slices-%d", &size); err != nil {
			return out, fmt.Errorf("claim %s: %w", claim.Name, err)
		}
		if size == MemorySlices {
			out.FreeAtWhole = append(out.FreeAtWhole, gpus-len(used))
		}
		placed := false
		var chosen []resourceapi.AllocationResult
		bestFill := -1
		for _, node := range c.Nodes {
			res, err := p.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
			if err != nil {
				return out, fmt.Errorf("claim %s on node %s: %w", claim.Name, node.Name, err)
			}
			if res == nil {
				continue
			}
			if !packNodes {
				chosen = res
				break
			}
			fill := 0
			for _, d := range res[0].Devices.Results {
				var g int
				if _, err := fmt.Sscanf(d.Device, "gpu-%d-", &g); err != nil {
					return out, fmt.Errorf("claim %s: device %s: %w", claim.Name, d.Device, err)
				}
				fill += used[gpuKey{d.Pool, g}]
			}
			if fill > bestFill {
				chosen, bestFill = res, fill
			}
		}
		for _, res := range [][]resourceapi.AllocationResult{chosen} {
			if res == nil {
				continue
			}
			allocated := claim.DeepCopy()
			allocated.Status.Allocation = &res[0]
			if err := p.Record(ctx, allocated); err != nil {
				return out, err
			}
			l := live{claim: allocated}
			for _, d := range res[0].Devices.Results {
				var g, slices, start int
				if _, err := fmt.Sscanf(d.Device, "gpu-%d-part-%d-%d", &g, &slices, &start); err != nil {
					return out, fmt.Errorf("claim %s: device %s: %w", claim.Name, d.Device, err)
				}
				k := gpuKey{d.Pool, g}
				used[k] += slices
				l.gpus, l.sizes = append(l.gpus, k), append(l.sizes, slices)
			}
			alive = append(alive, l)
			placed = true
			break
		}
		if !placed && size == MemorySlices {
			out.FirstFailure = at
			return out, nil
		}
		if len(alive) > 0 && rng.IntN(100) < 30 {
			i := rng.IntN(len(alive))
			gone := alive[i]
			alive = append(alive[:i], alive[i+1:]...)
			if err := p.Release(ctx, gone.claim); err != nil {
				return out, err
			}
			for j, k := range gone.gpus {
				if used[k] -= gone.sizes[j]; used[k] == 0 {
					delete(used, k)
				}
			}
		}
	}
	return out, fmt.Errorf("the stream of %d claims ended before a claim for a whole GPU failed to fit", len(stream))
}

// Release implements Releaser.
func (p SnapshotPlacer) Release(_ context.Context, claim *resourceapi.ResourceClaim) error {
	return p.Snapshot.DeleteClaim(claim.Namespace, claim.Name)
}

// Release implements Releaser: the claim leaves the cluster and the upstream allocator is rebuilt.
func (p *UpstreamPlacer) Release(ctx context.Context, claim *resourceapi.ResourceClaim) error {
	for i, c := range p.cluster.Allocated {
		if c == claim {
			p.cluster.Allocated = append(p.cluster.Allocated[:i:i], p.cluster.Allocated[i+1:]...)
			break
		}
	}
	u, err := NewUpstream(ctx, p.cluster, nil)
	if err != nil {
		return err
	}
	p.upstream = u
	return nil
}
