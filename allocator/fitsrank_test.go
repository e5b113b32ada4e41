package allocator_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/inventory"
)

// TestFitsDoesNotRankForTopology: a topology preference orders the devices Allocate returns and never
// changes whether claims fit, so Fits, which answers only that, does not pay for the ranking: on a DGX
// H100 published as whole GPUs, asking for two GPUs allocates as much with Options.Topology as without.
func TestFitsDoesNotRankForTopology(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector allocates")
	}
	claims := []*resourceapi.ResourceClaim{claim("c", exact("gpus", "gpu", 2))}
	allocs := map[bool]float64{}
	for _, topo := range []bool{false, true} {
		opts := allocator.Options{NoCopy: true}
		if topo {
			opts.Topology = &allocator.Topology{}
		}
		s, node := mixedNodeWith(t, "dgxh100", inventory.ModeGPU, opts, 0)
		ctx := context.Background()
		if fits, err := s.Fits(ctx, node, claims); err != nil || !fits {
			t.Fatalf("topology %v: Fits: %v, %v; want true", topo, fits, err)
		}
		allocs[topo] = testing.AllocsPerRun(20, func() { _, _ = s.Fits(ctx, node, claims) })
	}
	if allocs[true] != allocs[false] {
		t.Errorf("Fits allocates %v times a call with Options.Topology, %v without", allocs[true], allocs[false])
	}
}
