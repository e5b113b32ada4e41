package allocator_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// Rename refuses nodes that are not of one class (a GPU of one in use; the snapshot changed since the
// NodeClasses was made) and a nil node, and does not modify the results it renames.
func TestRenameRefusesNodesOfDifferentClasses(t *testing.T) {
	ctx := context.Background()
	snap := allocator.NewSnapshot(allocator.Options{})
	must(t, snap.AddOrUpdateClass(class("gpu", `device.driver == "gpu.example.com"`)))
	for _, name := range []string{"node-0", "node-1", "node-2"} {
		must(t, snap.AddOrUpdateNode(node(name, nil)))
		must(t, snap.AddOrUpdateSlice(nodeSlice(name+"-gpus", name, "gpu.example.com", name,
			device(name+"-gpu-0", nil), device(name+"-gpu-1", nil))))
	}
	must(t, snap.AddOrUpdateClaim(allocatedClaim("busy", result("gpu.example.com", "node-2", "node-2-gpu-0"))))
	claims := []*resourceapi.ResourceClaim{claim("train", exact("gpus", "gpu", 1))}
	nc, err := snap.NodeClasses(ctx, claims)
	must(t, err)
	nodes := snap.Nodes()
	results, err := snap.Allocate(ctx, nodes[0], claims)
	must(t, err)
	before := results[0].DeepCopy()
	if _, err := nc.Rename(results, nodes[0], nodes[2]); err == nil || err.Error() != "nodes node-0 and node-2 are not of one class" {
		t.Errorf("node-2 with a GPU in use: err = %v", err)
	}
	if _, err := nc.Rename(results, nodes[0], nil); err == nil {
		t.Error("nil node: no error")
	}
	if got, err := nc.Rename(results, nodes[0], nodes[1]); err != nil || got[0].Devices.Results[0].Device != "node-1-gpu-0" {
		t.Errorf("node-1: %v, %v", got, err)
	}
	if results[0].Devices.Results[0].Device != before.Devices.Results[0].Device || results[0].NodeSelector.NodeSelectorTerms[0].MatchFields[0].Values[0] != "node-0" {
		t.Errorf("results modified: %+v", results[0])
	}
	must(t, snap.AddOrUpdateClaim(allocatedClaim("more", result("gpu.example.com", "node-1", "node-1-gpu-1"))))
	if _, err := nc.Rename(results, nodes[0], nodes[1]); err == nil {
		t.Error("after the snapshot changed: no error")
	}
}
