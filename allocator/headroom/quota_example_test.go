package headroom_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// How many more copies fit within the tenant's quota: two nodes with two shared GPUs each (1000 shares
// a GPU) would take eight copies of a pod asking for half a GPU, and namespace default may hold 1500
// shares of class gpu, so three fit; the next is refused for the quota on every node.
func ExampleCount_quota() {
	q := &allocator.Quota{Limits: []allocator.QuotaLimit{
		{Owner: "default", Class: "gpu", Kind: allocator.QuotaCapacity, Name: "shares", Max: resource.MustParse("1500")},
	}}
	snap := allocator.NewSnapshot(allocator.Options{Quota: q})
	for _, name := range []string{"node-a", "node-b"} {
		_ = snap.AddOrUpdateNode(node(name, "64"))
		_ = snap.AddOrUpdateSlice(gpus(name, 2, 1000))
	}
	_ = snap.AddOrUpdateClass(gpuClass())
	c := pods.New(snap, pods.Options{})
	addTemplates(c)

	r, err := headroom.Count(context.Background(), c, pod("infer", "1", "half-gpu"), headroom.Options{Explain: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Total, r.Stop)
	for _, l := range r.Limits {
		fmt.Println(l.Nodes, l.Reason)
	}
	// Output:
	// 3 Full
	// 2 quota owner default, DeviceClass gpu, capacity shares ≤ 1500: holds 1500, asks for 500 more
}
