package pods_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

func TestPlaceOnNode(t *testing.T) {
	ctx := context.Background()
	c := exampleCluster(pods.Options{}) // node-a and node-b, one GPU each
	p, err := c.PlaceOnNode(ctx, pod("first", "gpu=template:one-gpu"), "node-b")
	if err != nil || p.Node != "node-b" {
		t.Fatalf("placed %v, %v; want node-b", p, err)
	}
	must(t, c.Assume(p))
	// node-b is full; node-a is free but not looked at.
	_, err = c.PlaceOnNode(ctx, pod("second", "gpu=template:one-gpu"), "node-b")
	var nn *pods.NoNodeError
	if !errors.As(err, &nn) || len(nn.Nodes) != 1 || nn.Nodes[0].Node != "node-b" {
		t.Fatalf("err = %v, want a NoNodeError naming node-b alone", err)
	}
	if _, err := c.PlaceOnNode(ctx, pod("third"), "node-z"); err == nil || err.Error() != "Pod default/third: node node-z not found" {
		t.Fatalf("unknown node: %v", err)
	}
	var in *allocator.InputError
	if _, err := c.PlaceOnNode(ctx, nil, "node-a"); !errors.As(err, &in) {
		t.Fatalf("nil pod: %v", err)
	}
}

// PlaceOnNode asks one node, whatever the Choice.
func ExampleCluster_PlaceOnNode() {
	c := exampleCluster(pods.Options{})
	p, err := c.PlaceOnNode(context.Background(), pod("train", "gpu=template:one-gpu"), "node-b")
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Node)
	// Output: node-b
}
