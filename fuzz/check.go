package fuzz

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/verify"
)

// AllocateFunc allocates the pending claims of a cluster on its node, one result per claim; an error means the
// claims were not allocated (they do not fit, the search gave up, or the input is invalid).
type AllocateFunc func(ctx context.Context, c *Cluster) ([]resourceapi.AllocationResult, error)

// Input returns the verifier's view of the cluster: its state, node and feature gates.
func (c *Cluster) Input() verify.Input {
	features := c.Gates()
	return verify.Input{
		Slices:     c.Slices,
		Classes:    c.Classes,
		Claims:     c.Allocated,
		TaintRules: c.TaintRules,
		Node:       c.Node,
		Features:   &features,
	}
}

// Verify checks results, proposed for the cluster's pending claims, with allocator/verify.
func (c *Cluster) Verify(ctx context.Context, results []resourceapi.AllocationResult) ([]verify.Violation, error) {
	return verify.Check(ctx, c.Input(), c.Claims, results)
}

// CheckAllocations is a property test (t may be a *testing.T or a *testing.B, as rapid.Check takes): for every
// cluster drawn from clusters, allocate must not mutate the
// cluster, and when it allocates, every result must pass allocator/verify. Build clusters with ClusterGen, and
// map them (rapid.Map) to put in your own DeviceClasses, ResourceSlices or claims. In a driver's or a
// scheduler's CI:
//
//	func TestPropMySchedulerAllocations(t *testing.T) {
//		clusters := rapid.Map(fuzz.ClusterGen(fuzz.AllOptions()), func(c *fuzz.Cluster) *fuzz.Cluster {
//			c.Classes = append(c.Classes, myDeviceClass())
//			c.Slices = append(c.Slices, mySlicesFor(c.Node)...)
//			return c
//		})
//		fuzz.CheckAllocations(t, clusters, func(ctx context.Context, c *fuzz.Cluster) ([]resourceapi.AllocationResult, error) {
//			return myScheduler(c).Allocate(ctx, c.Node, c.Claims)
//		})
//	}
func CheckAllocations(t testing.TB, clusters *rapid.Generator[*Cluster], allocate AllocateFunc) {
	t.Helper()
	rapid.Check(t, func(rt *rapid.T) {
		c := clusters.Draw(rt, "cluster")
		before := c.DeepCopy()
		results, err := allocate(context.Background(), c)
		if !equality.Semantic.DeepEqual(before, c.DeepCopy()) {
			rt.Fatalf("allocate mutated the cluster")
		}
		if err != nil {
			rt.Logf("not allocated: %v", err)
			return
		}
		violations, err := c.Verify(context.Background(), results)
		if err != nil {
			rt.Fatalf("verify: %v", err)
		}
		for _, v := range violations {
			rt.Errorf("%s", v)
		}
	})
}

// DeepCopy returns a copy of the cluster that shares nothing with it.
func (c *Cluster) DeepCopy() *Cluster {
	out := &Cluster{}
	if c.Features != nil {
		features := *c.Features
		out.Features = &features
	}
	for _, n := range c.Nodes {
		cp := n.DeepCopy()
		out.Nodes = append(out.Nodes, cp)
		if n == c.Node {
			out.Node = cp
		}
	}
	if out.Node == nil && c.Node != nil {
		out.Node = c.Node.DeepCopy()
	}
	for _, s := range c.Slices {
		out.Slices = append(out.Slices, s.DeepCopy())
	}
	for _, x := range c.Classes {
		out.Classes = append(out.Classes, x.DeepCopy())
	}
	for _, r := range c.TaintRules {
		out.TaintRules = append(out.TaintRules, r.DeepCopy())
	}
	for _, x := range c.Allocated {
		out.Allocated = append(out.Allocated, x.DeepCopy())
	}
	for _, x := range c.Claims {
		out.Claims = append(out.Claims, x.DeepCopy())
	}
	return out
}
