package headroom_test

import (
	"context"
	"fmt"

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
	// 1 Insufficient cpu
	// 1 claim default/train-headroom-5-gpu-s0006, request "gpu": 1 of 2 matching devices allocated to ResourceClaim default/train-headroom-3-gpu-s0003
	// 1 claim default/train-headroom-5-gpu-s0006, request "gpu": no device of the node's pools
}
