package fuzz_test

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// Load a cluster into an allocator snapshot with the cluster's gates, allocate its claim, and check the answer
// with the verifier; then ask for more GPUs than the node has.
func ExampleCluster_Snapshot() {
	node := &v1.Node{}
	node.Name = "node-0"
	slice := &resourceapi.ResourceSlice{}
	slice.Name = "node-0-gpu"
	slice.Spec = resourceapi.ResourceSliceSpec{Driver: fuzz.GPUDriver, NodeName: ptr.To("node-0"),
		Pool:    resourceapi.ResourcePool{Name: "node-0-gpu", Generation: 1, ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}
	class := &resourceapi.DeviceClass{}
	class.Name = fuzz.ClassAny
	claim := &resourceapi.ResourceClaim{}
	claim.Name, claim.Namespace = "train", "default"
	claim.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: fuzz.ClassAny, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2}}}
	c := &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node, Slices: []*resourceapi.ResourceSlice{slice},
		Classes: []*resourceapi.DeviceClass{class}, Claims: []*resourceapi.ResourceClaim{claim}, Features: new(verify.AllFeatures())}

	ctx := context.Background()
	s, err := c.Snapshot(allocator.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	results, err := s.Allocate(ctx, c.Node, c.Claims)
	if err != nil {
		fmt.Println(err)
		return
	}
	violations, err := c.Verify(ctx, results)
	fmt.Println(len(results[0].Devices.Results), "devices,", len(violations), "violations, error:", err)

	claim.Spec.Devices.Requests[0].Exactly.Count = 3
	_, err = s.Allocate(ctx, c.Node, c.Claims)
	fmt.Println("3 GPUs:", errors.Is(err, allocator.ErrUnsatisfiable))
	// Output:
	// 2 devices, 0 violations, error: <nil>
	// 3 GPUs: true
}
