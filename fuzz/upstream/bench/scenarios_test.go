package bench

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// TestScenariosUpstream checks the scenarios mean what the benchmarks say, using the upstream allocator as the
// judge: scenario 1 fits on every node, scenario 2 and 3 fit nowhere.
func TestScenariosUpstream(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		cluster Cluster
		claim   *resourceapi.ResourceClaim
		fits    bool
	}{
		{"one GPU on an empty fleet fits everywhere", Fleet(5, 8), GPUClaim("c", 1), true},
		{"eight GPUs on an empty fleet fit everywhere", Fleet(5, 8), GPUClaim("c", 8), true},
		{"four free GPUs do not hold an eight-GPU claim", Fleet(5, 8).HalfUsed(), GPUClaim("c", 8), false},
		{"four free GPUs hold a four-GPU claim", Fleet(5, 8).HalfUsed(), GPUClaim("c", 4), true},
		{"a NIC nobody provides never fits", Fleet(1, 32), GPUAndNICClaim(2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := NewUpstream(ctx, tt.cluster, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, node := range tt.cluster.Nodes {
				res, err := u.Allocate(ctx, node, []*resourceapi.ResourceClaim{tt.claim})
				if err != nil {
					t.Fatalf("node %s: %v", node.Name, err)
				}
				if (res != nil) != tt.fits {
					t.Fatalf("node %s: fits %v, want %v", node.Name, res != nil, tt.fits)
				}
				if res != nil && len(res[0].Devices.Results) != int(tt.claim.Spec.Devices.Requests[0].Exactly.Count) {
					t.Fatalf("node %s: %d devices, want %d", node.Name, len(res[0].Devices.Results), tt.claim.Spec.Devices.Requests[0].Exactly.Count)
				}
			}
		})
	}
}

// TestFragmentationUpstream runs the fragmentation scenario on a small fleet: the run ends with a claim that
// fits nowhere, and the slices in use never exceed what exists — nor fall below what must be in use for a
// whole-GPU claim to fit nowhere (at least one slice of every GPU).
func TestFragmentationUpstream(t *testing.T) {
	ctx := context.Background()
	cluster := PartitionableFleet(2, 8)
	if got := len(cluster.Slices); got != 2*3 {
		t.Fatalf("%d slices, want a counter slice and two device slices per node", got)
	}
	p, err := NewUpstreamPlacer(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	used, total, err := Fragmentation(ctx, cluster, p, ClaimStream(1000))
	if err != nil {
		t.Fatal(err)
	}
	if total != 2*8*MemorySlices {
		t.Fatalf("total %d slices, want %d", total, 2*8*MemorySlices)
	}
	if used > total || used < 2*8 {
		t.Fatalf("used %d of %d slices", used, total)
	}
	t.Logf("upstream first-fit: %d of %d memory slices in use at the first claim that fits nowhere", used, total)
}
