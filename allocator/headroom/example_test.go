package headroom_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// How many more pods of one shape fit, where, and what stops the next one.
func ExampleCount() {
	// a: 4 GPUs and 8 CPUs; b: 2 GPUs and 32 CPUs; c: no GPUs.
	c := cluster(pods.Options{}, "a 8 4 0", "b 32 2 0", "c 32 0 0")
	res, err := headroom.Count(context.Background(), c, pod("train", "3", "one-gpu"), headroom.Options{Max: 100})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Total, res.Stop)
	for _, n := range res.Nodes {
		fmt.Println(n.Node, n.Copies)
	}
	for _, l := range res.Limits {
		fmt.Println(l.Nodes, l.Reason)
	}
	// Output:
	// 4 Full
	// a 2
	// b 2
	// 2 cannot allocate all claims
	// 1 Insufficient cpu
}

// Fragmentation of a node with one GPU shared to 90%, for a mix of whole GPUs and quarter shares.
func ExampleInventory_Fragmentation() {
	specs := []string{"a 32 2 1000"}
	c := cluster(pods.Options{}, specs...)
	for i := range 3 { // three shares of 300 on gpu-0: 100 left, a tenth of the GPU
		p, _ := c.Place(context.Background(), pod(fmt.Sprint("s", i), "1", "third-gpu"))
		_ = c.Assume(p)
	}
	inv, err := headroom.NewInventory(slicesOf(specs...))
	if err != nil {
		panic(err)
	}
	quarter := headroom.Request{Capacity: "shares", Amount: resource.MustParse("250")}
	rep, err := inv.Fragmentation(c, []headroom.Shape{
		{Name: "whole", Weight: 0.5, Requests: []headroom.Request{{Count: 1}}},
		{Name: "quarter", Weight: 0.5, Requests: []headroom.Request{quarter}},
	})
	if err != nil {
		panic(err)
	}
	// Neither shape can use gpu-0's tenth: F = ½·0.1 + ½·0.1, and it is stranded.
	fmt.Println(rep)
	// Output:
	// a: free 1.1 F 0.1 stranded 1 (0.1)
	// total: free 1.1 F 0.1 stranded 0.1
}

// FGD places a share where it fragments least: on the unused GPU rather than the one it would leave too
// small for the mix's half GPUs, whether that GPU is on another node or on the same one.
func ExampleInventory_FGD() {
	specs := []string{"a 32 2 1000"}
	inv, err := headroom.NewInventory(slicesOf(specs...))
	if err != nil {
		panic(err)
	}
	half := headroom.Request{Capacity: "shares", Amount: resource.MustParse("500")}
	cost, prefer, err := inv.FGD([]headroom.Shape{{Name: "half", Weight: 1, Requests: []headroom.Request{half}}})
	if err != nil {
		panic(err)
	}
	for _, opts := range []pods.Options{{}, {Cost: cost, Prefer: prefer}} {
		c := cluster(opts, specs...)
		first := pod("first", "1", "third-gpu")
		first.Spec.NodeName = "a" // a/gpu-0: 700 of 1000 shares left
		p, _ := c.Place(context.Background(), first)
		_ = c.Assume(p)
		// 300 more on a/gpu-0 would leave 400, too little for a half; on a/gpu-1 700 are left.
		p, _ = c.Place(context.Background(), pod("second", "1", "third-gpu"))
		fmt.Println(opts.Cost != nil, p.Node, p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Device)
	}
	// Output:
	// false a gpu-0
	// true a gpu-1
}

// ShapeOf reads a mix's shape from a pod and its claim templates.
func ExampleShapeOf() {
	c := cluster(pods.Options{}, "a 32 1 1000")
	s, err := headroom.ShapeOf(c, pod("infer", "1", "third-gpu"), 0.25)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Name, s.Weight, s.Requests[0].Capacity, s.Requests[0].Amount.String())
	// Output: default/infer 0.25 shares 300
}
