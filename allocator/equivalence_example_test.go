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

// A whole-fleet filter classifies all its nodes at once and asks Fits once per class; the snapshot
// remembers the classes, so the next pass over the unchanged fleet finds them at the cost of a lookup
// per node, and a change (here a GPU of node-2 in use) is seen by the next pass.
func ExampleNodeClasses_AppendClasses() {
	ctx := context.Background()
	snap := allocator.NewSnapshot(allocator.Options{})
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(snap.AddOrUpdateClass(class("gpu", `device.driver == "gpu.example.com"`)))
	for i := range 4 {
		name := fmt.Sprintf("node-%d", i)
		must(snap.AddOrUpdateNode(node(name, nil)))
		must(snap.AddOrUpdateSlice(nodeSlice(name+"-gpus", name, "gpu.example.com", name,
			device(name+"-gpu-0", nil), device(name+"-gpu-1", nil))))
	}
	claims := []*resourceapi.ResourceClaim{claim("train", exact("gpus", "gpu", 2))}
	filter := func() {
		nc, err := snap.NodeClasses(ctx, claims)
		must(err)
		nodes := snap.Nodes()
		classes, err := nc.AppendClasses(nil, nodes)
		must(err)
		// Nodes of one class get one answer.
		answers := map[int]bool{}
		var line []string
		for i, n := range nodes {
			fits, ok := answers[classes[i]]
			if !ok {
				fits, err = snap.Fits(ctx, n, claims)
				must(err)
				answers[classes[i]] = fits
			}
			line = append(line, fmt.Sprintf("%s:%d:%v", n.Name, classes[i], fits))
		}
		fmt.Println("Fits asked:", len(answers), "|", strings.Join(line, " "))
	}
	filter()
	filter()
	must(snap.AddOrUpdateClaim(allocatedClaim("busy", result("gpu.example.com", "node-2", "node-2-gpu-0"))))
	filter()
	// Output:
	// Fits asked: 1 | node-0:0:true node-1:0:true node-2:0:true node-3:0:true
	// Fits asked: 1 | node-0:0:true node-1:0:true node-2:0:true node-3:0:true
	// Fits asked: 2 | node-0:0:true node-1:0:true node-2:1:false node-3:0:true
}

// Nodes of one class take the same devices up to names: the allocation found on one node, renamed, is
// the allocation on the others, without a search on each.
func ExampleNodeClasses_Rename() {
	ctx := context.Background()
	snap := allocator.NewSnapshot(allocator.Options{})
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(snap.AddOrUpdateClass(class("gpu", `device.driver == "gpu.example.com"`)))
	for i := range 2 {
		name := fmt.Sprintf("node-%d", i)
		must(snap.AddOrUpdateNode(node(name, nil)))
		must(snap.AddOrUpdateSlice(nodeSlice(name+"-gpus", name, "gpu.example.com", name,
			device(name+"-gpu-0", nil), device(name+"-gpu-1", nil))))
	}
	claims := []*resourceapi.ResourceClaim{claim("train", exact("gpus", "gpu", 1))}
	nc, err := snap.NodeClasses(ctx, claims)
	must(err)
	nodes := snap.Nodes()
	results, err := snap.Allocate(ctx, nodes[0], claims)
	must(err)
	renamed, err := nc.Rename(results, nodes[0], nodes[1])
	must(err)
	d := renamed[0].Devices.Results[0]
	fmt.Println(d.Pool, d.Device, renamed[0].NodeSelector.NodeSelectorTerms[0].MatchFields[0].Values)
	// Output: node-1 node-1-gpu-0 [node-1]
}
