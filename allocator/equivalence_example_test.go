package allocator_test

import (
	"context"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// A fleet filter asks Fits once per class of nodes: three nodes publish the same GPUs under their own
// names and serial numbers, which no selector reads, so they are one class until one of them has a GPU
// in use.
func ExampleSnapshot_NodeClasses() {
	ctx := context.Background()
	snap := allocator.NewSnapshot(allocator.Options{})
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(snap.AddOrUpdateClass(class("gpu", `device.driver == "gpu.example.com"`)))
	for i := range 3 {
		name := fmt.Sprintf("node-%d", i)
		must(snap.AddOrUpdateNode(node(name, nil)))
		must(snap.AddOrUpdateSlice(nodeSlice(name+"-gpus", name, "gpu.example.com", name,
			device(name+"-gpu-0", map[string]any{"serial": name + "-a"}),
			device(name+"-gpu-1", map[string]any{"serial": name + "-b"}))))
	}
	claims := []*resourceapi.ResourceClaim{claim("train", exact("gpus", "gpu", 2))}
	show := func() {
		nc, err := snap.NodeClasses(ctx, claims)
		must(err)
		var line []string
		for _, n := range snap.Nodes() {
			class, err := nc.Class(n)
			must(err)
			line = append(line, fmt.Sprintf("%s:%d", n.Name, class))
		}
		fmt.Println(strings.Join(line, " "))
	}
	show()
	must(snap.AddOrUpdateClaim(allocatedClaim("busy", result("gpu.example.com", "node-1", "node-1-gpu-0"))))
	show()
	// Output:
	// node-0:0 node-1:0 node-2:0
	// node-0:0 node-1:1 node-2:0
}

// A caller keeps what it derived from a snapshot until the revision moves.
func ExampleSnapshot_Revision() {
	snap := allocator.NewSnapshot(allocator.Options{})
	before := snap.Revision()
	if err := snap.AddOrUpdateNode(node("node-0", nil)); err != nil {
		panic(err)
	}
	after := snap.Revision()
	fmt.Println(before == after, after.Changes-before.Changes)
	// Output: false 1
}
