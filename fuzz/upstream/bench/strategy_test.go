package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/verify"
)

// fragmentationNodes and fragmentationGPUs are the fleet of benchmark 6: 50 nodes of 8 partitionable GPUs.
const (
	fragmentationNodes = 50
	fragmentationGPUs  = 8
)

// streamLength is more claims than any fleet here holds: every run ends with a claim that fits nowhere.
const streamLength = 100000

// strategyFragmentation runs the fragmentation scenario on a fresh snapshot with the given strategy and
// returns the share of memory slices in use, in percent, at the first claim that fits nowhere. With check
// set, every allocation is checked by allocator/verify before it is recorded.
func strategyFragmentation(ctx context.Context, cluster Cluster, strategy allocator.Strategy, check bool) (float64, error) {
	s, err := NewSnapshot(cluster, allocator.Options{Strategy: strategy})
	if err != nil {
		return 0, err
	}
	var p Placer = SnapshotPlacer{s}
	if check {
		p = &verifyingPlacer{SnapshotPlacer: SnapshotPlacer{s}, cluster: cluster}
	}
	used, total, err := Fragmentation(ctx, cluster, p, ClaimStream(streamLength))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", strategy, err)
	}
	return 100 * float64(used) / float64(total), nil
}

// verifyingPlacer checks each allocation of a snapshot with allocator/verify against the claims allocated
// before it.
type verifyingPlacer struct {
	SnapshotPlacer
	cluster   Cluster
	allocated []*resourceapi.ResourceClaim
}

// Allocate implements Placer.
func (p *verifyingPlacer) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	res, err := p.SnapshotPlacer.Allocate(ctx, node, claims)
	if err != nil || res == nil {
		return res, err
	}
	in := verify.Input{Slices: p.cluster.Slices, Classes: p.cluster.Classes, Claims: p.allocated, Node: node}
	vs, err := verify.Check(ctx, in, claims, res)
	if err != nil {
		return nil, err
	}
	if len(vs) > 0 {
		return nil, fmt.Errorf("allocation on %s does not verify: %v", node.Name, vs)
	}
	return res, nil
}

// Record implements Placer.
func (p *verifyingPlacer) Record(ctx context.Context, claim *resourceapi.ResourceClaim) error {
	p.allocated = append(p.allocated, claim)
	return p.SnapshotPlacer.Record(ctx, claim)
}

// strategies are the strategies the fragmentation runs compare.
var strategies = []allocator.Strategy{allocator.FirstFit, allocator.BestFit, allocator.Spread}

// TestFragmentationStrategies runs both fragmentation scenarios on a fleet of 10 nodes × 8 GPUs with every
// allocation verified. Visiting partitions in device order, FirstFit already fills the first GPUs before it
// opens another, so it ends near full; BestFit must end no lower, and Spread, which opens GPUs early, lower
// than both.
func TestFragmentationStrategies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs thousands of allocations")
	}
	ctx := context.Background()
	cluster := PartitionableFleet(10, fragmentationGPUs)
	for _, sc := range []struct {
		name string
		run  func(context.Context, Cluster, allocator.Strategy, bool) (float64, error)
	}{
		{"without departures", strategyFragmentation},
		{"with departures", churnFragmentation},
	} {
		t.Run(sc.name, func(t *testing.T) {
			got := map[allocator.Strategy]float64{}
			for _, st := range strategies {
				pct, err := sc.run(ctx, cluster, st, true)
				if err != nil {
					t.Fatal(err)
				}
				got[st] = pct
				t.Logf("%s: %.1f %% of memory slices in use at the first claim that fits nowhere", st, pct)
			}
			if got[allocator.BestFit] < got[allocator.FirstFit] {
				t.Errorf("BestFit %.1f %% ends below FirstFit %.1f %%", got[allocator.BestFit], got[allocator.FirstFit])
			}
			if got[allocator.Spread] >= got[allocator.FirstFit] {
				t.Errorf("Spread %.1f %% does not end below FirstFit %.1f %%", got[allocator.Spread], got[allocator.FirstFit])
			}
		})
	}
}

// BenchmarkFragmentation is benchmark 6: 50 nodes × 8 GPUs, each claim on the first node where it fits,
// without and with departures. It reports per strategy the share of memory slices in use at the first
// claim that fits nowhere (slices-used-%).
func BenchmarkFragmentation(b *testing.B) {
	ctx := context.Background()
	cluster := PartitionableFleet(fragmentationNodes, fragmentationGPUs)
	for _, sc := range []struct {
		name string
		run  func(context.Context, Cluster, allocator.Strategy, bool) (float64, error)
	}{
		{"arrivals", strategyFragmentation},
		{"departures", churnFragmentation},
	} {
		for _, st := range strategies {
			b.Run(sc.name+"/"+st.String(), func(b *testing.B) {
				b.ReportAllocs()
				var pct float64
				for b.Loop() {
					var err error
					if pct, err = sc.run(ctx, cluster, st, false); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(pct, "slices-used-%")
			})
		}
	}
}

// churnFragmentation is the fragmentation scenario with departures, where fragmentation comes from: after
// each placed claim, with a fixed pseudo-random chance of 30 %, one allocated claim drawn at random is
// deallocated. Claims are placed as in Fragmentation, each on the first node where it fits, until the first
// claim that fits nowhere; it returns the share of memory slices in use then, in percent.
func churnFragmentation(ctx context.Context, cluster Cluster, strategy allocator.Strategy, check bool) (float64, error) {
	s, err := NewSnapshot(cluster, allocator.Options{Strategy: strategy})
	if err != nil {
		return 0, err
	}
	var p Placer = SnapshotPlacer{s}
	vp := &verifyingPlacer{SnapshotPlacer: SnapshotPlacer{s}, cluster: cluster}
	if check {
		p = vp
	}
	total := 0
	for _, sl := range cluster.Slices {
		total += len(sl.Spec.SharedCounters) * MemorySlices
	}
	type live struct {
		claim  *resourceapi.ResourceClaim
		slices int
	}
	var alive []live
	used := 0
	rng := rand.New(rand.NewPCG(6, 30))
	for _, claim := range ClaimStream(streamLength) {
		var size int
		if _, err := fmt.Sscanf(claim.Spec.Devices.Requests[0].Exactly.DeviceClassName, "slices-%d", &size); err != nil {
			return 0, fmt.Errorf("claim %s: %w", claim.Name, err)
		}
		placed := false
		for _, node := range cluster.Nodes {
			res, err := p.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
			if err != nil {
				return 0, fmt.Errorf("%s: claim %s on node %s: %w", strategy, claim.Name, node.Name, err)
			}
			if res == nil {
				continue
			}
			allocated := claim.DeepCopy()
			allocated.Status.Allocation = &res[0]
			if err := p.Record(ctx, allocated); err != nil {
				return 0, err
			}
			alive = append(alive, live{allocated, size})
			used += size
			placed = true
			break
		}
		if !placed {
			return 100 * float64(used) / float64(total), nil
		}
		if rng.IntN(100) < 30 {
			i := rng.IntN(len(alive))
			gone := alive[i]
			alive = append(alive[:i], alive[i+1:]...)
			if err := s.DeleteClaim(gone.claim.Namespace, gone.claim.Name); err != nil {
				return 0, err
			}
			vp.allocated = slices.DeleteFunc(vp.allocated, func(c *resourceapi.ResourceClaim) bool { return c == gone.claim })
			used -= gone.slices
		}
	}
	return 0, fmt.Errorf("%s: the stream of %d claims ended before one failed to fit", strategy, streamLength)
}
