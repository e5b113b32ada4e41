package allocator_test

import (
	"context"
	"testing"

	"github.com/dralloc/dralloc/allocator"
)

// BenchmarkTopology: a pod's GPU and NIC, the GPU requested first, on the DGX-like node of
// TestTopologyJudgesTheWholePlacement where the preference's order alone lands on two roots, so the
// call improves on its first placement; without the preference, with it, and Fits with it (which does
// not apply it).
func BenchmarkTopology(b *testing.B) {
	c := topologyCase(b, []string{"gpu-0", "gpu-1", "gpu-2", "nic-2", "nic-3"}, podClaim("pod", gpuNIC{"gpu", 1}, gpuNIC{"nic", 1}))
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		topo *allocator.Topology
		fits bool
	}{{"Allocate/none", nil, false}, {"Allocate/topology", &allocator.Topology{}, false}, {"Fits/topology", &allocator.Topology{}, true}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := c.Snapshot(allocator.Options{Topology: bc.topo, TrustAPIServer: true})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if bc.fits {
					if ok, err := s.Fits(ctx, c.Node, c.Claims); err != nil || !ok {
						b.Fatal(ok, err)
					}
					continue
				}
				if _, err := s.Allocate(ctx, c.Node, c.Claims); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
