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
