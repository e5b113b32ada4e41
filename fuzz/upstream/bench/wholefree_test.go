package bench

import (
	"context"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// wholeFree runs the whole-GPU measure on a fresh snapshot with the strategy, every allocation verified.
func wholeFree(t *testing.T, cluster Cluster, strategy allocator.Strategy, packNodes bool) WholeFree {
	t.Helper()
	s, err := NewSnapshot(cluster, allocator.Options{Strategy: strategy})
	if err != nil {
		t.Fatal(err)
	}
	p := &verifyingReleaser{verifyingPlacer: verifyingPlacer{SnapshotPlacer: SnapshotPlacer{s}, cluster: cluster}}
	res, err := WholeGPUsFree(context.Background(), cluster, p, ClaimStream(streamLength), packNodes)
	if err != nil {
		t.Fatalf("%s: %v", strategy, err)
	}
	return res
}

// verifyingReleaser is verifyingPlacer with departures.
type verifyingReleaser struct{ verifyingPlacer }

// Release implements Releaser.
func (p *verifyingReleaser) Release(ctx context.Context, claim *resourceapi.ResourceClaim) error {
	p.allocated = slices.DeleteFunc(p.allocated, func(c *resourceapi.ResourceClaim) bool { return c == claim })
	return p.SnapshotPlacer.Release(ctx, claim)
}

// meanFree is the mean of the first n samples.
func meanFree(samples []int, n int) float64 {
	sum := 0
	for _, v := range samples[:n] {
		sum += v
	}
	return float64(sum) / float64(n)
}

// TestWholeGPUsFreeUpstream: on a small fleet, the upstream allocator and FirstFit go through the stream
// with departures alike: the same whole GPUs free at every claim for a whole GPU, and the same first
// failure (first-fit picks upstream's devices).
func TestWholeGPUsFreeUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds the upstream allocator after every allocation")
	}
	ctx := context.Background()
	cluster := PartitionableFleet(3, 4)
	u, err := NewUpstreamPlacer(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	up, err := WholeGPUsFree(ctx, cluster, u, ClaimStream(streamLength), false)
	if err != nil {
		t.Fatal(err)
	}
	ff := wholeFree(t, cluster, allocator.FirstFit, false)
	t.Logf("upstream: first failure at claim %d, whole GPUs free at whole-GPU claims %v", up.FirstFailure, up.FreeAtWhole)
	if up.FirstFailure != ff.FirstFailure || !slices.Equal(up.FreeAtWhole, ff.FreeAtWhole) {
		t.Errorf("FirstFit: first failure at claim %d, whole GPUs free %v; upstream differs", ff.FirstFailure, ff.FreeAtWhole)
	}
}

// TestWholeGPUsFreeStrategies: on 10 nodes × 8 GPUs, the whole GPUs each strategy keeps free at the claims
// for a whole GPU, over the claims that every run reaches before its first failure: each claim on the
// first node where it fits (the strategy packs within a node), and BestFit with packing across nodes.
func TestWholeGPUsFreeStrategies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs thousands of allocations")
	}
	cluster := PartitionableFleet(10, fragmentationGPUs)
	type run struct {
		name     string
		strategy allocator.Strategy
		pack     bool
	}
	runs := []run{{"FirstFit", allocator.FirstFit, false}, {"BestFit", allocator.BestFit, false}, {"Spread", allocator.Spread, false}, {"BestFit packing nodes", allocator.BestFit, true}}
	got := map[string]WholeFree{}
	window := -1
	for _, r := range runs {
		got[r.name] = wholeFree(t, cluster, r.strategy, r.pack)
		if n := len(got[r.name].FreeAtWhole); window < 0 || n < window {
			window = n
		}
	}
	mean := map[string]float64{}
	for _, r := range runs {
		mean[r.name] = meanFree(got[r.name].FreeAtWhole, window)
		t.Logf("%s: first whole-GPU failure at claim %d; %.1f whole GPUs free on average at the first %d whole-GPU claims; at the last ten %v",
			r.name, got[r.name].FirstFailure, mean[r.name], window, got[r.name].FreeAtWhole[window-10:window])
	}
	if mean["BestFit"] < mean["FirstFit"] {
		t.Errorf("BestFit keeps %.1f whole GPUs free, FirstFit %.1f", mean["BestFit"], mean["FirstFit"])
	}
	if mean["BestFit packing nodes"] < mean["BestFit"] {
		t.Errorf("BestFit packing nodes keeps %.1f whole GPUs free, BestFit %.1f", mean["BestFit packing nodes"], mean["BestFit"])
	}
}
