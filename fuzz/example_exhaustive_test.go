package fuzz_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// Exhaustive answers "does it fit?" for a small cluster without any allocator: one GPU serves a claim for one
// GPU, not a claim for two.
func ExampleExhaustive() {
	node := &v1.Node{}
	node.Name = "node-0"
	slice := &resourceapi.ResourceSlice{}
	slice.Name = "node-0-gpu"
	slice.Spec = resourceapi.ResourceSliceSpec{Driver: fuzz.GPUDriver, NodeName: ptr.To("node-0"),
		Pool:    resourceapi.ResourcePool{Name: "node-0-gpu", Generation: 1, ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "gpu-0"}}}
	class := &resourceapi.DeviceClass{}
	class.Name = fuzz.ClassAny
	claimFor := func(count int64) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{}
		c.Name, c.Namespace = "train", "default"
		c.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: fuzz.ClassAny, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}}
		return c
	}
	for _, count := range []int64{1, 2} {
		c := &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node, Slices: []*resourceapi.ResourceSlice{slice},
			Classes: []*resourceapi.DeviceClass{class}, Claims: []*resourceapi.ResourceClaim{claimFor(count)}, Features: new(verify.AllFeatures())}
		v, found := fuzz.Exhaustive(context.Background(), c, 1000)
		fmt.Printf("%d GPUs: fits %v", count, v == fuzz.Fits)
		if v == fuzz.Fits {
			fmt.Printf(" with %s", found[0].Devices.Results[0].Device)
		}
		fmt.Println()
	}
	// Output:
	// 1 GPUs: fits true with gpu-0
	// 2 GPUs: fits false
}
