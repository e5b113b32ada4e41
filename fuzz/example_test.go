package fuzz_test

import (
	"context"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/fuzz"
)

// Draw one cluster with every feature, and check an allocation for it with the verifier: leaving every pending
// claim without devices is never valid, since each claim has at least one request.
func ExampleClusterGen() {
	c := fuzz.ClusterGen(fuzz.AllOptions()).Example(1)
	fmt.Println(len(c.Classes), "classes; the node is one of the nodes:", slices.Contains(c.Nodes, c.Node))

	empty := make([]resourceapi.AllocationResult, len(c.Claims))
	violations, err := c.Verify(context.Background(), empty)
	fmt.Println("valid:", err == nil && len(violations) == 0)
	// Output:
	// 4 classes; the node is one of the nodes: true
	// valid: false
}
