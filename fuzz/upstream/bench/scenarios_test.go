package bench

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// TestScenarios checks the scenarios mean what the benchmarks say, for dralloc and upstream alike: scenario 1
// fits on every node, scenarios 2 and 3 fit nowhere.
func TestScenarios(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		cluster Cluster
		claim   *resourceapi.ResourceClaim
		want    Outcome
	}{
		{"one GPU on an empty fleet fits everywhere", Fleet(5, 8), GPUClaim("c", 1), Fits},
		{"eight GPUs on an empty fleet fit everywhere", Fleet(5, 8), GPUClaim("c", 8), Fits},
		{"four free GPUs do not hold an eight-GPU claim", Fleet(5, 8).HalfUsed(), GPUClaim("c", 8), DoesNotFit},
		{"four free GPUs hold a four-GPU claim", Fleet(5, 8).HalfUsed(), GPUClaim("c", 4), Fits},
		{"a NIC nobody provides never fits", Fleet(1, 32), GPUAndNICClaim(2), DoesNotFit},
		{"33 devices are more than a claim may hold", Fleet(1, 32), GPUAndNICClaim(32), Rejected},
	}
	for _, tt := range tests {
		for _, impl := range Impls {
			t.Run(tt.name+"/"+impl.Name, func(t *testing.T) {
				f, err := impl.New(ctx, tt.cluster)
				if err != nil {
					t.Fatal(err)
				}
				for _, node := range tt.cluster.Nodes {
					if got := f.Filter(ctx, node, []*resourceapi.ResourceClaim{tt.claim}); got != tt.want {
						t.Fatalf("node %s: outcome %d, want %d", node.Name, got, tt.want)
					}
				}
			})
		}
	}
}

// TestFragmentation runs the fragmentation scenario on a small fleet: the run ends with a claim that fits
// nowhere; the slices in use never exceed what exists, nor fall below one per GPU (else a whole-GPU claim
// would fit); and dralloc's FirstFit, which picks upstream's devices, ends exactly where upstream ends.
func TestFragmentation(t *testing.T) {
	ctx := context.Background()
	cluster := PartitionableFleet(2, 8)
	if got := len(cluster.Slices); got != 2*3 {
		t.Fatalf("%d slices, want a counter slice and two device slices per node", got)
	}
	up, err := NewUpstreamPlacer(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	upUsed, total, err := Fragmentation(ctx, cluster, up, ClaimStream(1000))
	if err != nil {
		t.Fatal(err)
	}
	if total != 2*8*MemorySlices {
		t.Fatalf("total %d slices, want %d", total, 2*8*MemorySlices)
	}
	if upUsed > total || upUsed < 2*8 {
		t.Fatalf("upstream: used %d of %d slices", upUsed, total)
	}
	s, err := NewSnapshot(cluster, allocator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	used, _, err := Fragmentation(ctx, cluster, SnapshotPlacer{s}, ClaimStream(1000))
	if err != nil {
		t.Fatal(err)
	}
	if used != upUsed {
		t.Fatalf("dralloc FirstFit: %d slices in use at the first claim that fits nowhere, upstream %d", used, upUsed)
	}
	t.Logf("first fit: %d of %d memory slices in use at the first claim that fits nowhere", used, total)
}
