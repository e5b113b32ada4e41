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
	// BoundAtWhole is, for the same claims, the most GPUs that any placement of the claims then
	// allocated could leave whole (WholeBound): FreeAtWhole can reach it, never exceed it.
	BoundAtWhole []int
	// FirstFailure is the position in the stream of the first claim for a whole GPU that fits nowhere.
	FirstFailure int
	// Stranded is how many memory slices were free at the first failure: free, yet no GPU whole.
	Stranded int
}

// WholeOptions are the variations of the whole-GPU measure.
type WholeOptions struct {
	// PackNodes sends a claim to the node where its allocation draws on the GPU with the most memory
	// slices in use already (the first such node on ties), which asks every node: packing across
	// nodes, as a scheduler's scoring of every feasible node would. Without it, a claim goes to the
	// first node where it fits.
	PackNodes bool
	// Seed selects the pseudo-random departures; 0 is the default sequence.
	Seed uint64
	// Load is, for WholeGPUsSteady, the share of the fleet's memory slices, in percent, that departures
	// keep in use at most; 0 means 85.
	Load int
	// WarmUp is, for WholeGPUsSteady, how many claims of the stream arrive before the measure starts;
	// 0 means a quarter of the stream.
	WarmUp int
}

// departures returns the pseudo-random sequence that decides departures.
func (o WholeOptions) departures() *rand.Rand {
	if o.Seed == 0 {
		return rand.New(rand.NewPCG(6, 30))
	}
	return rand.New(rand.NewPCG(o.Seed, 30))
}

// Served is how many claims for a whole GPU were placed before the first that fits nowhere.
func (w WholeFree) Served() int { return len(w.FreeAtWhole) - 1 }

// WholeBound is the most GPUs, of gpus, that a placement of live partitions (memory slices each) can
// leave whole, ignoring where partitions may start: a partition of 4 slices or more needs a GPU of its
// own (two do not fit in 7 slices), partitions of up to 3 slices fill first the 3 slices such a GPU has
// left and then other GPUs at 7 slices each. Every placement uses at least that many GPUs.
func WholeBound(gpus int, live []int) int {
	big, small := 0, 0
	for _, n := range live {
		if 2*n > MemorySlices {
			big++
			if n < MemorySlices {
				small -= MemorySlices - n // the slices its GPU has left, for the small ones
			}
		} else {
			small += n
		}
	}
	if small < 0 {
		small = 0
	}
	return gpus - big - (small+MemorySlices-1)/MemorySlices
}

// WholeGPUsIdeal runs the stream and departures of WholeGPUsFree through a perfect packer, one that may
// move every allocated partition at each arrival: a claim is placed whenever WholeBound says the claims
// then allocated and it fit the fleet. Its FreeAtWhole equals its BoundAtWhole. It is the reference for
// a placer that places what it can: a placer holding the same claims keeps no more GPUs whole, though
// one that drops claims the fleet could hold may hold fewer and so keep more.
func WholeGPUsIdeal(gpus int, stream []*resourceapi.ResourceClaim, opts WholeOptions) (WholeFree, error) {
	var out WholeFree
	var alive []int
	rng := opts.departures()
	for at, claim := range stream {
		size, err := claimSlices(claim)
		if err != nil {
			return out, err
		}
		free := WholeBound(gpus, alive)
		if size == MemorySlices {
			out.FreeAtWhole = append(out.FreeAtWhole, free)
			out.BoundAtWhole = append(out.BoundAtWhole, free)
		}
		if WholeBound(gpus, append(alive, size)) >= 0 {
			alive = append(alive, size)
		} else if size == MemorySlices {
			out.FirstFailure = at
			for _, n := range alive {
				out.Stranded -= n
			}
			out.Stranded += gpus * MemorySlices
			return out, nil
		}
		if len(alive) > 0 && rng.IntN(100) < 30 {
			i := rng.IntN(len(alive))
			alive = append(alive[:i], alive[i+1:]...)
		}
	}
	return out, fmt.Errorf("the stream of %d claims ended before a claim for a whole GPU failed to fit", len(stream))
}

// claimSlices is the size in memory slices of a claim of the stream, from its class.
func claimSlices(claim *resourceapi.ResourceClaim) (int, error) {
	var size int
	if _, err := fmt.Sscanf(claim.Spec.Devices.Requests[0].Exactly.DeviceClassName, "slices-%d", &size); err != nil {
		return 0, fmt.Errorf("claim %s: %w", claim.Name, err)
	}
	return size, nil
}

// WholeGPUsFree feeds the claim stream to the placer with departures, each claim to the first node where
// it fits, until the first claim for a whole GPU that fits nowhere; smaller claims that fit nowhere are
// dropped. After each arrival, with a fixed pseudo-random chance of 30 %, one allocated claim drawn at
// random departs. Before every claim for a whole GPU it counts the GPUs left whole: packing keeps them.
func WholeGPUsFree(ctx context.Context, c Cluster, p Releaser, stream []*resourceapi.ResourceClaim, opts WholeOptions) (WholeFree, error) {
	var out WholeFree
	gpus := fleetGPUs(c)
	used := map[gpuKey]int{}
	var alive []live
	rng := opts.departures()
	for at, claim := range stream {
		size, err := claimSlices(claim)
		if err != nil {
			return out, err
		}
		if size == MemorySlices {
			out.FreeAtWhole = append(out.FreeAtWhole, gpus-len(used))
			out.BoundAtWhole = append(out.BoundAtWhole, WholeBound(gpus, liveSizes(alive)))
		}
		l, placed, err := place(ctx, c, p, claim, used, opts.PackNodes)
		if err != nil {
			return out, err
		}
		if placed {
			alive = append(alive, l)
		} else if size == MemorySlices {
			out.FirstFailure = at
			out.Stranded = gpus * MemorySlices
			for _, n := range used {
				out.Stranded -= n
			}
			return out, nil
		}
		if len(alive) > 0 && rng.IntN(100) < 30 {
			i := rng.IntN(len(alive))
			gone := alive[i]
			alive = append(alive[:i], alive[i+1:]...)
			if err := release(ctx, p, gone, used); err != nil {
				return out, err
			}
		}
	}
	return out, fmt.Errorf("the stream of %d claims ended before a claim for a whole GPU failed to fit", len(stream))
}

// fleetGPUs is how many partitionable GPUs the fleet has: one counter set each.
func fleetGPUs(c Cluster) int {
	gpus := 0
	for _, s := range c.Slices {
		gpus += len(s.Spec.SharedCounters)
	}
	return gpus
}

// gpuKey names one GPU of the fleet.
type gpuKey struct {
	node string
	gpu  int
}

// live is an allocated claim of a whole-GPU run: the GPUs its partitions are on and their sizes.
type live struct {
	claim *resourceapi.ResourceClaim
	gpus  []gpuKey
	sizes []int
}

// liveSizes is the sizes of all partitions the claims hold.
func liveSizes(alive []live) []int {
	var sizes []int
	for _, l := range alive {
		sizes = append(sizes, l.sizes...)
	}
	return sizes
}

// place allocates the claim on the first node where it fits or, with packNodes, on the node where its
// allocation draws on the GPU with the most memory slices in use (used: per GPU) and records it, adding
// its partitions to used; a NodeChooser chooses the node itself. placed is false when it fits nowhere.
func place(ctx context.Context, c Cluster, p Placer, claim *resourceapi.ResourceClaim, used map[gpuKey]int, packNodes bool) (l live, placed bool, err error) {
	if nc, ok := p.(NodeChooser); ok {
		allocated, err := nc.Place(ctx, claim)
		if err != nil || allocated == nil {
			return l, false, err
		}
		return recorded(allocated, used)
	}
	var chosen []resourceapi.AllocationResult
	bestFill := -1
	for _, node := range c.Nodes {
		res, err := p.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
		if err != nil {
			return l, false, fmt.Errorf("claim %s on node %s: %w", claim.Name, node.Name, err)
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
				return l, false, fmt.Errorf("claim %s: device %s: %w", claim.Name, d.Device, err)
			}
			fill += used[gpuKey{d.Pool, g}]
		}
		if fill > bestFill {
			chosen, bestFill = res, fill
		}
	}
	if chosen == nil {
		return l, false, nil
	}
	allocated := claim.DeepCopy()
	allocated.Status.Allocation = &chosen[0]
	if err := p.Record(ctx, allocated); err != nil {
		return l, false, err
	}
	return recorded(allocated, used)
}

// recorded is the live claim of an allocated claim, its partitions added to used.
func recorded(allocated *resourceapi.ResourceClaim, used map[gpuKey]int) (l live, placed bool, err error) {
	l.claim = allocated
	for _, d := range allocated.Status.Allocation.Devices.Results {
		var g, slices, start int
		if _, err := fmt.Sscanf(d.Device, "gpu-%d-part-%d-%d", &g, &slices, &start); err != nil {
			return l, false, fmt.Errorf("claim %s: device %s: %w", allocated.Name, d.Device, err)
		}
		k := gpuKey{d.Pool, g}
		used[k] += slices
		l.gpus, l.sizes = append(l.gpus, k), append(l.sizes, slices)
	}
	return l, true, nil
}

// release deallocates the claim and takes its partitions out of used, dropping GPUs left whole.
func release(ctx context.Context, p Releaser, gone live, used map[gpuKey]int) error {
	if err := p.Release(ctx, gone.claim); err != nil {
		return err
	}
	for j, k := range gone.gpus {
		if used[k] -= gone.sizes[j]; used[k] == 0 {
			delete(used, k)
		}
	}
	return nil
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
