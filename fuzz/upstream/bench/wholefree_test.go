package bench

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// wholeFreeOn runs the whole-GPU measure on a fresh snapshot with the strategy, on the stream with the
// options, every allocation verified.
func wholeFreeOn(t *testing.T, cluster Cluster, strategy allocator.Strategy, stream []*resourceapi.ResourceClaim, opts WholeOptions) WholeFree {
	t.Helper()
	s, err := NewSnapshot(cluster, allocator.Options{Strategy: strategy})
	if err != nil {
		t.Fatal(err)
	}
	p := &verifyingReleaser{verifyingPlacer: verifyingPlacer{SnapshotPlacer: SnapshotPlacer{s}, cluster: cluster}}
	res, err := WholeGPUsFree(context.Background(), cluster, p, stream, opts)
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

// TestWholeGPUsFreeUpstream: on a small fleet and on each of wholeStreams, the upstream allocator and
// FirstFit go through the stream with departures alike: the same whole GPUs free and the same bound at
// every claim for a whole GPU, the same first failure and the same slices stranded then (first-fit picks
// upstream's devices), so the upstream column of the measure is FirstFit's.
func TestWholeGPUsFreeUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds the upstream allocator after every allocation")
	}
	ctx := context.Background()
	fleets := append([]struct {
		name         string
		nodes, gpus  int
		stream, seed uint64
	}{{"3 nodes × 4 GPUs", 3, 4, 1, 0}}, wholeStreams...)
	for _, ws := range fleets {
		t.Run(ws.name, func(t *testing.T) {
			cluster := PartitionableFleet(ws.nodes, ws.gpus)
			stream := ClaimStreamSeeded(streamLength, ws.stream)
			opts := WholeOptions{Seed: ws.seed}
			u, err := NewUpstreamPlacer(ctx, cluster)
			if err != nil {
				t.Fatal(err)
			}
			up, err := WholeGPUsFree(ctx, cluster, u, stream, opts)
			if err != nil {
				t.Fatal(err)
			}
			ff := wholeFreeOn(t, cluster, allocator.FirstFit, stream, opts)
			t.Logf("upstream: first failure at claim %d, %d slices stranded then, whole GPUs free at whole-GPU claims %v", up.FirstFailure, up.Stranded, up.FreeAtWhole)
			if up.FirstFailure != ff.FirstFailure || !slices.Equal(up.FreeAtWhole, ff.FreeAtWhole) || !slices.Equal(up.BoundAtWhole, ff.BoundAtWhole) || up.Stranded != ff.Stranded {
				t.Errorf("FirstFit: first failure at claim %d, %d slices stranded, whole GPUs free %v; upstream differs", ff.FirstFailure, ff.Stranded, ff.FreeAtWhole)
			}
		})
	}
}

// TestWholeBound: the bound on whole GPUs left free, by hand on named cases and against the fewest GPUs
// an exhaustive search packs small sets of partitions into.
func TestWholeBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		live []int
		want int
	}{
		{"nothing allocated leaves every GPU whole", nil, 8},
		{"a whole GPU takes one", []int{7}, 7},
		{"a 4-slice and a 3-slice partition share a GPU", []int{4, 3}, 7},
		{"two 4-slice partitions need two GPUs", []int{4, 4}, 6},
		{"eight 1-slice partitions need two GPUs", []int{1, 1, 1, 1, 1, 1, 1, 1}, 6},
		{"small partitions beyond a 4-slice partition's 3 free slices need another GPU", []int{4, 2, 2}, 6},
		{"seven slices in partitions of 3, 3 and 1 fit one GPU", []int{3, 3, 1}, 7},
	} {
		if got := WholeBound(8, tc.live); got != tc.want {
			t.Errorf("%s: WholeBound(8, %v) = %d, want %d", tc.name, tc.live, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 14))
	for range 2000 {
		live := make([]int, 1+rng.IntN(7))
		for i := range live {
			live[i] = Profiles[rng.IntN(len(Profiles))].Slices
		}
		if bound, fewest := WholeBound(len(live), live), fewestGPUs(live); bound < len(live)-fewest {
			t.Fatalf("WholeBound(%d, %v) = %d, yet %d GPUs hold them", len(live), live, bound, fewest)
		}
	}
}

// fewestGPUs is the fewest GPUs of MemorySlices slices that hold partitions of the given sizes, by
// exhaustive search, where a placement is any assignment whose sizes on each GPU sum to at most
// MemorySlices (with Profiles' fixed placements every such set fits: TestProfilesPackAnySet).
func fewestGPUs(live []int) int {
	best := len(live)
	var fill []int
	var place func(i int)
	place = func(i int) {
		if len(fill) >= best {
			return
		}
		if i == len(live) {
			best = len(fill)
			return
		}
		for g := range fill {
			if fill[g]+live[i] <= MemorySlices {
				fill[g] += live[i]
				place(i + 1)
				fill[g] -= live[i]
			}
		}
		fill = append(fill, live[i])
		place(i + 1)
		fill = fill[:len(fill)-1]
	}
	place(0)
	return best
}

// TestProfilesPackAnySet: every set of Profiles' partitions of at most MemorySlices slices in all fits
// one GPU at the fixed placements, so that on this fleet a bound that ignores placements loses nothing to
// them.
func TestProfilesPackAnySet(t *testing.T) {
	var sets func(prefix []int, from, left int)
	sets = func(prefix []int, from, left int) {
		if !placeable(prefix, 0) {
			t.Errorf("partitions of %v slices do not fit one GPU at the fixed placements", prefix)
		}
		for k := from; k < len(Profiles); k++ {
			if n := Profiles[k].Slices; n <= left {
				sets(append(slices.Clone(prefix), n), k, left-n)
			}
		}
	}
	sets(nil, 0, MemorySlices)
}

// placeable: the partitions fit one GPU, each at one of its profile's starts, over the slices not in taken.
func placeable(sizes []int, taken uint) bool {
	if len(sizes) == 0 {
		return true
	}
	for _, p := range Profiles {
		if p.Slices != sizes[0] {
			continue
		}
		for _, start := range p.Starts {
			mask := uint(1)<<(start+p.Slices) - uint(1)<<start
			if taken&mask == 0 && placeable(sizes[1:], taken|mask) {
				return true
			}
		}
	}
	return false
}

// wholeStreams are the fleets and streams of the whole-GPU measure: the first is the one the strategies
// were looked at on, the others nothing was tuned for.
var wholeStreams = []struct {
	name         string
	nodes, gpus  int
	stream, seed uint64
}{
	{"10 nodes × 8 GPUs", 10, 8, 1, 0},
	{"20 nodes × 4 GPUs, another stream", 20, 4, 6, 5},
	{"10 nodes × 8 GPUs, another stream", 10, 8, 3, 2},
}

// TestWholeGPUsFreeStrategies: the whole GPUs each strategy keeps free at the claims for a whole GPU, on
// each of wholeStreams, every allocation verified: each claim on the first node where it fits (the
// strategy packs within a node), and BestFit with packing across nodes; and the perfect packer
// (WholeGPUsIdeal) on the same stream, for reference. Means are over the claims that every run reaches
// before its first failure. The fleet fills as claims outnumber departures, so most
// whole GPUs are free because the fleet is still empty, under every strategy: the mean leaves little room
// between FirstFit and the bound, and packing shows in the deficit, the whole GPUs a run has fewer than
// its own bound (WholeBound of the claims it holds).
func TestWholeGPUsFreeStrategies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs thousands of allocations")
	}
	for _, ws := range wholeStreams {
		t.Run(ws.name, func(t *testing.T) {
			cluster := PartitionableFleet(ws.nodes, ws.gpus)
			stream := ClaimStreamSeeded(streamLength, ws.stream)
			ideal, err := WholeGPUsIdeal(ws.nodes*ws.gpus, stream, WholeOptions{Seed: ws.seed})
			if err != nil {
				t.Fatal(err)
			}
			type run struct {
				name     string
				strategy allocator.Strategy
				pack     bool
			}
			runs := []run{{"FirstFit", allocator.FirstFit, false}, {"BestFit", allocator.BestFit, false}, {"Spread", allocator.Spread, false}, {"BestFit packing nodes", allocator.BestFit, true}}
			got := map[string]WholeFree{"perfect packer": ideal}
			window := len(ideal.FreeAtWhole)
			for _, r := range runs {
				res := wholeFreeOn(t, cluster, r.strategy, stream, WholeOptions{PackNodes: r.pack, Seed: ws.seed})
				for i, free := range res.FreeAtWhole {
					if free > res.BoundAtWhole[i] {
						t.Fatalf("%s: %d whole GPUs free at whole-GPU claim %d, above the bound %d", r.name, free, i, res.BoundAtWhole[i])
					}
				}
				got[r.name] = res
				window = min(window, len(res.FreeAtWhole))
			}
			mean, deficit := map[string]float64{}, map[string]float64{}
			for _, name := range append([]string{"perfect packer"}, "FirstFit", "BestFit", "Spread", "BestFit packing nodes") {
				res := got[name]
				mean[name] = meanFree(res.FreeAtWhole, window)
				deficit[name] = meanFree(res.BoundAtWhole, window) - mean[name]
				t.Logf("%s: first whole-GPU failure at claim %d, %d whole-GPU claims served, %d slices stranded then; at the first %d whole-GPU claims %.2f whole GPUs free on average, %.2f below its bound",
					name, res.FirstFailure, res.Served(), res.Stranded, window, mean[name], deficit[name])
			}
			if mean["BestFit"] < mean["FirstFit"] {
				t.Errorf("BestFit keeps %.2f whole GPUs free, FirstFit %.2f", mean["BestFit"], mean["FirstFit"])
			}
			if deficit["BestFit"] >= deficit["FirstFit"] {
				t.Errorf("BestFit is %.2f whole GPUs below its bound, FirstFit %.2f", deficit["BestFit"], deficit["FirstFit"])
			}
			if deficit["BestFit packing nodes"] > deficit["BestFit"] {
				t.Errorf("BestFit packing nodes is %.2f whole GPUs below its bound, BestFit %.2f", deficit["BestFit packing nodes"], deficit["BestFit"])
			}
			if deficit["Spread"] <= deficit["FirstFit"] {
				t.Errorf("Spread is %.2f whole GPUs below its bound, FirstFit %.2f: spreading should strand more", deficit["Spread"], deficit["FirstFit"])
			}
		})
	}
}

// timedReleaser counts the Allocate calls made of a placer and the time they take.
type timedReleaser struct {
	Releaser
	calls int
	spent time.Duration
}

// Allocate implements Placer.
func (p *timedReleaser) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	start := time.Now()
	res, err := p.Releaser.Allocate(ctx, node, claims)
	p.calls++
	p.spent += time.Since(start)
	return res, err
}

// BenchmarkWholeGPUsFree runs the whole-GPU measure of TestWholeGPUsFreeStrategies on its first fleet and
// stream, without verifying: per strategy, the time an Allocate call of a claim on a node takes
// (ns/call; ns/op is the whole run, recording arrivals and departures included), the whole GPUs free on average at the whole-GPU claims every
// strategy reaches (whole-free) and how far below the bound that is (below-bound).
func BenchmarkWholeGPUsFree(b *testing.B) {
	ctx := context.Background()
	ws := wholeStreams[0]
	cluster := PartitionableFleet(ws.nodes, ws.gpus)
	stream := ClaimStreamSeeded(streamLength, ws.stream)
	// The window every strategy reaches, as in TestWholeGPUsFreeStrategies.
	window := -1
	for _, st := range strategies {
		s, err := NewSnapshot(cluster, allocator.Options{Strategy: st})
		if err != nil {
			b.Fatal(err)
		}
		res, err := WholeGPUsFree(ctx, cluster, SnapshotPlacer{s}, stream, WholeOptions{Seed: ws.seed})
		if err != nil {
			b.Fatal(err)
		}
		if window < 0 || len(res.FreeAtWhole) < window {
			window = len(res.FreeAtWhole)
		}
	}
	for _, st := range strategies {
		b.Run(st.String(), func(b *testing.B) {
			b.ReportAllocs()
			var res WholeFree
			calls, spent := 0, time.Duration(0)
			for b.Loop() {
				b.StopTimer()
				s, err := NewSnapshot(cluster, allocator.Options{Strategy: st})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				p := &timedReleaser{Releaser: SnapshotPlacer{s}}
				if res, err = WholeGPUsFree(ctx, cluster, p, stream, WholeOptions{Seed: ws.seed}); err != nil {
					b.Fatal(err)
				}
				calls, spent = calls+p.calls, spent+p.spent
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(calls), "ns/call")
			b.ReportMetric(meanFree(res.FreeAtWhole, window), "whole-free")
			b.ReportMetric(meanFree(res.BoundAtWhole, window)-meanFree(res.FreeAtWhole, window), "below-bound")
		})
	}
}
