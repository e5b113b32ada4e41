package bench

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
)

// SteadyFree is what the steady-state whole-GPU measure found for one placer, over the claims for a
// whole GPU that arrive after the warm-up.
type SteadyFree struct {
	// FreeAtWhole is, for each such claim, how many GPUs had all their memory slices free when it arrived.
	FreeAtWhole []int
	// BoundAtWhole is, for the same claims, WholeBound of the partitions then allocated: FreeAtWhole
	// can reach it, never exceed it.
	BoundAtWhole []int
	// InUse is, for the same claims, how many memory slices were in use when it arrived.
	InUse []int
	// Served and Failed count those claims that were placed and those that fit nowhere.
	Served, Failed int
}

// Mean is the mean of the samples, 0 for none.
func Mean(samples []int) float64 {
	if len(samples) == 0 {
		return 0
	}
	sum := 0
	for _, v := range samples {
		sum += v
	}
	return float64(sum) / float64(len(samples))
}

// steady is the departure rule of the steady-state measure: each claim of the stream gets an expiry,
// its position plus a pseudo-random exponential lifetime (mean: half the fleet's memory slices, about
// as many claims as the fleet holds), and after each arrival, while more than the load's share of the
// memory slices is in use, the allocated claim that expires first departs. The expiries depend on the
// stream alone, so placers that hold the same claims see the same departures.
type steady struct {
	expiry []float64
	limit  int // memory slices in use at most after departures
	warmUp int
}

func newSteady(gpus, claims int, opts WholeOptions) steady {
	load, warmUp := opts.Load, opts.WarmUp
	if load == 0 {
		load = 85
	}
	if warmUp == 0 {
		warmUp = claims / 4
	}
	rng := opts.departures()
	s := steady{expiry: make([]float64, claims), limit: gpus * MemorySlices * load / 100, warmUp: warmUp}
	life := float64(gpus*MemorySlices) / 2
	for i := range s.expiry {
		s.expiry[i] = float64(i) + rng.ExpFloat64()*life
	}
	return s
}

// first is the index, in the positions in the stream of the claims allocated, of the claim that
// expires first.
func (s steady) first(at []int) int {
	best := 0
	for i, a := range at {
		if s.expiry[a] < s.expiry[at[best]] {
			best = i
		}
	}
	return best
}

// WholeGPUsSteady feeds the whole claim stream to the placer, each claim to the first node where it fits
// (or, with opts.PackNodes, the node WholeGPUsFree's packing picks; a NodeChooser picks the node itself,
// as PodsPlacer does through allocator/pods), with departures that keep the fleet
// near opts.Load: the fleet fills, then each arrival is followed by the departures that bring the memory
// slices in use back under the load (steady's rule). Claims that fit nowhere are dropped. For each claim
// for a whole GPU after opts.WarmUp claims it counts the GPUs left whole and whether it was served, the
// measure of packing where the fleet stays busy.
func WholeGPUsSteady(ctx context.Context, c Cluster, p Releaser, stream []*resourceapi.ResourceClaim, opts WholeOptions) (SteadyFree, error) {
	var out SteadyFree
	gpus := fleetGPUs(c)
	rule := newSteady(gpus, len(stream), opts)
	used := map[gpuKey]int{}
	inUse := 0
	var alive []live
	var arrived []int // the position in the stream of each claim in alive
	for at, claim := range stream {
		size, err := claimSlices(claim)
		if err != nil {
			return out, err
		}
		measured := at >= rule.warmUp && size == MemorySlices
		if measured {
			out.FreeAtWhole = append(out.FreeAtWhole, gpus-len(used))
			out.BoundAtWhole = append(out.BoundAtWhole, WholeBound(gpus, liveSizes(alive)))
			out.InUse = append(out.InUse, inUse)
		}
		l, placed, err := place(ctx, c, p, claim, used, opts.PackNodes)
		if err != nil {
			return out, err
		}
		if placed {
			alive, arrived = append(alive, l), append(arrived, at)
			inUse += size
		}
		if measured && placed {
			out.Served++
		} else if measured {
			out.Failed++
		}
		for inUse > rule.limit {
			i := rule.first(arrived)
			gone := alive[i]
			alive, arrived = append(alive[:i], alive[i+1:]...), append(arrived[:i], arrived[i+1:]...)
			if err := release(ctx, p, gone, used); err != nil {
				return out, err
			}
			for _, n := range gone.sizes {
				inUse -= n
			}
		}
	}
	if len(out.FreeAtWhole) == 0 {
		return out, fmt.Errorf("no claim for a whole GPU among the %d claims after the warm-up of %d", len(stream)-rule.warmUp, rule.warmUp)
	}
	return out, nil
}

// WholeGPUsSteadyIdeal runs the stream and departures of WholeGPUsSteady through the perfect packer of
// WholeGPUsIdeal, one that may move every allocated partition at each arrival: its FreeAtWhole equals its
// BoundAtWhole, and it serves a claim for a whole GPU whenever any placement of the claims it holds can.
func WholeGPUsSteadyIdeal(gpus int, stream []*resourceapi.ResourceClaim, opts WholeOptions) (SteadyFree, error) {
	var out SteadyFree
	rule := newSteady(gpus, len(stream), opts)
	var alive, arrived []int
	inUse := 0
	for at, claim := range stream {
		size, err := claimSlices(claim)
		if err != nil {
			return out, err
		}
		measured := at >= rule.warmUp && size == MemorySlices
		if measured {
			free := WholeBound(gpus, alive)
			out.FreeAtWhole = append(out.FreeAtWhole, free)
			out.BoundAtWhole = append(out.BoundAtWhole, free)
			out.InUse = append(out.InUse, inUse)
		}
		placed := WholeBound(gpus, append(alive, size)) >= 0
		if placed {
			alive, arrived = append(alive, size), append(arrived, at)
			inUse += size
		}
		if measured && placed {
			out.Served++
		} else if measured {
			out.Failed++
		}
		for inUse > rule.limit {
			i := rule.first(arrived)
			inUse -= alive[i]
			alive, arrived = append(alive[:i], alive[i+1:]...), append(arrived[:i], arrived[i+1:]...)
		}
	}
	if len(out.FreeAtWhole) == 0 {
		return out, fmt.Errorf("no claim for a whole GPU among the %d claims after the warm-up of %d", len(stream)-rule.warmUp, rule.warmUp)
	}
	return out, nil
}
