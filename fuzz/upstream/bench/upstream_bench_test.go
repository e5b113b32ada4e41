package bench

import (
	"context"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// BenchmarkFilterUpstream is scenario 1 for the upstream allocator: one op allocates the claim on every node in
// turn, as a scheduler's filter does; the allocator is built once outside the loop.
func BenchmarkFilterUpstream(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		cluster := Fleet(nodes, 8)
		for _, count := range []int64{1, 2, 8} {
			b.Run(fmt.Sprintf("nodes=%d/gpus=%d", nodes, count), func(b *testing.B) {
				upstreamFilter(b, cluster, GPUClaim("claim", count), true)
			})
		}
	}
}

// BenchmarkHalfUsedUpstream is scenario 2: gpu-0..3 of every node in use, an 8-GPU claim that fits nowhere.
func BenchmarkHalfUsedUpstream(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		cluster := Fleet(nodes, 8).HalfUsed()
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			upstreamFilter(b, cluster, GPUClaim("claim", 8), false)
		})
	}
}

// BenchmarkBlowUpUpstream is scenario 3: k of 32 identical GPUs plus a NIC nothing provides.
func BenchmarkBlowUpUpstream(b *testing.B) {
	cluster := Fleet(1, 32)
	for _, k := range []int64{1, 2, 3, 4} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			upstreamFilter(b, cluster, GPUAndNICClaim(k), false)
		})
	}
}

// BenchmarkBuildUpstream is scenario 4 for upstream: the per-call construction over 1000 nodes.
func BenchmarkBuildUpstream(b *testing.B) {
	cluster := Fleet(1000, 8)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewUpstream(ctx, cluster, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParallelFilterUpstream is scenario 5: scenario 1 with the nodes filtered in parallel.
func BenchmarkParallelFilterUpstream(b *testing.B) {
	cluster := Fleet(1000, 8)
	ctx := context.Background()
	u, err := NewUpstream(ctx, cluster, nil)
	if err != nil {
		b.Fatal(err)
	}
	claims := []*resourceapi.ResourceClaim{GPUClaim("claim", 2)}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			node := cluster.Nodes[i%len(cluster.Nodes)]
			i++
			if res, err := u.Allocate(ctx, node, claims); err != nil || res == nil {
				b.Errorf("node %s: results %v, error %v", node.Name, res, err)
				return
			}
		}
	})
}

func upstreamFilter(b *testing.B, cluster Cluster, claim *resourceapi.ResourceClaim, wantFit bool) {
	ctx := context.Background()
	u, err := NewUpstream(ctx, cluster, nil)
	if err != nil {
		b.Fatal(err)
	}
	claims := []*resourceapi.ResourceClaim{claim}
	b.ReportAllocs()
	for b.Loop() {
		for _, node := range cluster.Nodes {
			res, err := u.Allocate(ctx, node, claims)
			if err != nil {
				b.Fatal(err)
			}
			if (res != nil) != wantFit {
				b.Fatalf("node %s: fit %v, want %v", node.Name, res != nil, wantFit)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cluster.Nodes)), "ns/node")
}
