package bench

import (
	"context"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// fleetShape is a fleet and a claim for the whole-fleet filter. Fleets are built when a run needs them,
// so that one run's heap holds one fleet.
type fleetShape struct {
	name  string
	build func(tb testing.TB, nodes int) Cluster
	claim *resourceapi.ResourceClaim
	// nodes is the benchmark's fleet size: 1,000, or 200 for the DGX shapes, on which upstream takes
	// seconds a pass.
	nodes int
}

func dgx(tb testing.TB, nodes int) Cluster {
	c, err := DGXFleet(nodes, "dgxh100")
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

var fleetShapes = []fleetShape{
	{"empty/gpus=1", func(_ testing.TB, n int) Cluster { return Fleet(n, 8) }, GPUClaim("claim", 1), 1000},
	{"empty/gpus=8", func(_ testing.TB, n int) Cluster { return Fleet(n, 8) }, GPUClaim("claim", 8), 1000},
	{"half-used/gpus=8", func(_ testing.TB, n int) Cluster { return Fleet(n, 8).HalfUsed() }, GPUClaim("claim", 8), 1000},
	// Half the nodes half used.
	{"half-the-nodes-half-used/gpus=6", func(_ testing.TB, n int) Cluster {
		c := Fleet(n, 8)
		c.Allocated = c.HalfUsed().Allocated[:n/2]
		return c
	}, GPUClaim("claim", 6), 1000},
	// Mostly identical nodes and a few of another kind: the last tenth has 4 GPUs.
	{"mixed/gpus=6", func(_ testing.TB, n int) Cluster {
		c, small := Fleet(n, 8), Fleet(n, 4)
		for i := n - n/10; i < n; i++ {
			c.Slices[i] = small.Slices[i]
		}
		return c
	}, GPUClaim("claim", 6), 1000},
	{"dgxh100-mig/1g.10gb", dgx, MIGClaim("1g.10gb", 1), 200},
	{"dgxh100-half-used/whole=6", func(tb testing.TB, n int) Cluster { return dgx(tb, n).HalfUsedGPUs(4) }, WholeGPUsClaim(6), 200},
}

// TestFleetFilterAgreesWithUpstream: the whole-fleet filter gives every node of the shapes the outcome
// the upstream allocator gives it, node by node.
func TestFleetFilterAgreesWithUpstream(t *testing.T) {
	ctx := context.Background()
	for _, sh := range fleetShapes {
		t.Run(sh.name, func(t *testing.T) {
			cluster := sh.build(t, 20)
			s, err := NewSnapshot(cluster, allocator.Options{})
			if err != nil {
				t.Fatal(err)
			}
			u, err := NewUpstream(ctx, cluster, nil)
			if err != nil {
				t.Fatal(err)
			}
			claims := []*resourceapi.ResourceClaim{sh.claim}
			got := make([]Outcome, len(cluster.Nodes))
			if err := FleetFilter(ctx, s, cluster.Nodes, claims, got); err != nil {
				t.Fatal(err)
			}
			counts := map[Outcome]int{}
			for i, node := range cluster.Nodes {
				want := u.Filter(ctx, node, claims)
				counts[want]++
				if got[i] != want {
					t.Errorf("node %s: outcome %d, upstream %d", node.Name, got[i], want)
				}
			}
			t.Logf("upstream outcomes (0 fits, 1 does not fit, 2 rejected): %v", counts)
		})
	}
}

// BenchmarkFleetFilter is the whole-fleet filter: one op asks for the claim's outcome on every node of a
// fleet of 1,000 nodes (200 for the DGX shapes). upstream runs its allocator per node (as
// BenchmarkFilter); dralloc-fits calls Fits per node; dralloc-classes asks Fits once per class of nodes
// the claim cannot tell apart (FleetFilter).
func BenchmarkFleetFilter(b *testing.B) {
	ctx := context.Background()
	for _, sh := range fleetShapes {
		var cluster Cluster
		claims := []*resourceapi.ResourceClaim{sh.claim}
		for _, impl := range Impls {
			if impl.Name == "dralloc" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s", sh.name, impl.Name), func(b *testing.B) {
				if cluster.Nodes == nil {
					cluster = sh.build(b, sh.nodes)
				}
				f, err := impl.New(ctx, cluster)
				if err != nil {
					b.Fatal(err)
				}
				for _, node := range cluster.Nodes {
					f.Filter(ctx, node, claims) // warm up, as BenchmarkFilter
				}
				b.ReportAllocs()
				for b.Loop() {
					for _, node := range cluster.Nodes {
						if f.Filter(ctx, node, claims) == Rejected {
							b.Fatalf("node %s: rejected", node.Name)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cluster.Nodes)), "ns/node")
			})
		}
		b.Run(fmt.Sprintf("%s/dralloc-classes", sh.name), func(b *testing.B) {
			if cluster.Nodes == nil {
				cluster = sh.build(b, sh.nodes)
			}
			s, err := NewSnapshot(cluster, allocator.Options{})
			if err != nil {
				b.Fatal(err)
			}
			out := make([]Outcome, len(cluster.Nodes))
			// The first pass prepares what a filter pass finds prepared in a running scheduler.
			if err := FleetFilter(ctx, s, cluster.Nodes, claims, out); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := FleetFilter(ctx, s, cluster.Nodes, claims, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cluster.Nodes)), "ns/node")
		})
	}
}
