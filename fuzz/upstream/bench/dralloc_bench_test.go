package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// BenchmarkFilterDralloc is scenario 1 for dralloc: one op allocates the claim on every node in turn; the
// snapshot is built once outside the loop.
func BenchmarkFilterDralloc(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		cluster := Fleet(nodes, 8)
		for _, count := range []int64{1, 2, 8} {
			b.Run(fmt.Sprintf("nodes=%d/gpus=%d", nodes, count), func(b *testing.B) {
				drallocFilter(b, cluster, GPUClaim("claim", count), true)
			})
		}
	}
}

// BenchmarkHalfUsedDralloc is scenario 2: gpu-0..3 of every node in use, an 8-GPU claim that fits nowhere.
func BenchmarkHalfUsedDralloc(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		cluster := Fleet(nodes, 8).HalfUsed()
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			drallocFilter(b, cluster, GPUClaim("claim", 8), false)
		})
	}
}

// BenchmarkBlowUpDralloc is scenario 3: k of 32 identical GPUs plus a NIC nothing provides.
func BenchmarkBlowUpDralloc(b *testing.B) {
	cluster := Fleet(1, 32)
	for _, k := range []int64{1, 2, 3, 4, 5, 6, 7, 8, 32} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			if k+1 > resourceapi.AllocationResultsMaxSize {
				// As upstream: a claim asking for more than 32 devices is rejected before any search.
				drallocRejects(b, cluster, GPUAndNICClaim(k))
				return
			}
			drallocFilter(b, cluster, GPUAndNICClaim(k), false)
		})
	}
}

// BenchmarkBuildDralloc is scenario 4: building the snapshot of 1000 nodes, and updating one slice of it.
func BenchmarkBuildDralloc(b *testing.B) {
	cluster := Fleet(1000, 8)
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewSnapshot(cluster, allocator.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update-one-slice", func(b *testing.B) {
		s, err := NewSnapshot(cluster, allocator.Options{})
		if err != nil {
			b.Fatal(err)
		}
		gen := int64(1)
		b.ReportAllocs()
		for b.Loop() {
			gen++
			if err := s.AddOrUpdateSlice(NodeSlice(cluster.Nodes[500].Name, 8, gen)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParallelFilterDralloc is scenario 5: scenario 1 with the nodes filtered in parallel.
func BenchmarkParallelFilterDralloc(b *testing.B) {
	cluster := Fleet(1000, 8)
	s, err := NewSnapshot(cluster, allocator.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	claims := []*resourceapi.ResourceClaim{GPUClaim("claim", 2)}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			node := cluster.Nodes[i%len(cluster.Nodes)]
			i++
			if _, err := s.Allocate(ctx, node, claims); err != nil {
				b.Errorf("node %s: %v", node.Name, err)
				return
			}
		}
	})
}

func drallocFilter(b *testing.B, cluster Cluster, claim *resourceapi.ResourceClaim, wantFit bool) {
	ctx := context.Background()
	s, err := NewSnapshot(cluster, allocator.Options{})
	if err != nil {
		b.Fatal(err)
	}
	claims := []*resourceapi.ResourceClaim{claim}
	b.ReportAllocs()
	for b.Loop() {
		for _, node := range cluster.Nodes {
			_, err := s.Allocate(ctx, node, claims)
			if err != nil && !errors.Is(err, allocator.ErrUnsatisfiable) {
				b.Fatal(err)
			}
			if (err == nil) != wantFit {
				b.Fatalf("node %s: fit %v, want %v", node.Name, err == nil, wantFit)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cluster.Nodes)), "ns/node")
}

func drallocRejects(b *testing.B, cluster Cluster, claim *resourceapi.ResourceClaim) {
	ctx := context.Background()
	s, err := NewSnapshot(cluster, allocator.Options{})
	if err != nil {
		b.Fatal(err)
	}
	claims := []*resourceapi.ResourceClaim{claim}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Allocate(ctx, cluster.Nodes[0], claims); !errors.Is(err, allocator.ErrInvalidInput) {
			b.Fatalf("got %v, want an error wrapping ErrInvalidInput", err)
		}
	}
}
