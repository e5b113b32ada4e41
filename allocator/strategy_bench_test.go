package allocator_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// BenchmarkStrategies allocates a one-slice partition on a node of 8 MIG-like GPUs (152 partitions) whose
// first GPU is half used, per strategy: the cost of ranking the candidates against FirstFit's scan.
func BenchmarkStrategies(b *testing.B) {
	sc := scenario{
		slices: migPool(8, false), classes: migClasses(),
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "gpu-0-part-3-0"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "slices-1", 1))},
	}
	n := node(node1, nil)
	for _, st := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit, allocator.Spread} {
		b.Run(st.String(), func(b *testing.B) {
			// The partitions are in one slice of 112 devices, above the API's 64 for devices that consume
			// counters: added as trusted objects, without validation.
			s := allocator.NewSnapshot(allocator.Options{Strategy: st, TrustAPIServer: true})
			for _, o := range sc.slices {
				if err := s.AddOrUpdateSlice(o); err != nil {
					b.Fatal(err)
				}
			}
			for _, o := range sc.classes {
				if err := s.AddOrUpdateClass(o); err != nil {
					b.Fatal(err)
				}
			}
			for _, o := range sc.allocated {
				if err := s.AddOrUpdateClaim(o); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Allocate(ctx, n, sc.claims); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAllocatePreferring is BenchmarkStrategies' allocation with a preference for a partition of
// another GPU than the one the strategy would take, per strategy: the cost of the preferred order where
// it fits (the common case, one search).
func BenchmarkAllocatePreferring(b *testing.B) {
	sc := scenario{
		slices: migPool(8, false), classes: migClasses(),
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "gpu-0-part-3-0"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "slices-1", 1))},
	}
	n := node(node1, nil)
	prefer := []allocator.DeviceID{{Driver: driverA, Pool: "pool-1", Device: "gpu-5-part-1-6"}}
	for _, st := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit} {
		b.Run(st.String(), func(b *testing.B) {
			s := allocator.NewSnapshot(allocator.Options{TrustAPIServer: true})
			for _, o := range sc.slices {
				if err := s.AddOrUpdateSlice(o); err != nil {
					b.Fatal(err)
				}
			}
			for _, o := range sc.classes {
				if err := s.AddOrUpdateClass(o); err != nil {
					b.Fatal(err)
				}
			}
			for _, o := range sc.allocated {
				if err := s.AddOrUpdateClaim(o); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.AllocatePreferring(ctx, st, prefer, n, sc.claims)
				if err != nil {
					b.Fatal(err)
				}
				if got := res[0].Devices.Results[0].Device; got != prefer[0].Device {
					b.Fatalf("took %s, want the preferred %s", got, prefer[0].Device)
				}
			}
		})
	}
}
