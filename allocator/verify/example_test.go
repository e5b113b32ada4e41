package verify_test

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator/verify"
)

// An admission webhook or an auditor checks an allocation written by someone else: here a claim for one a100
// got the tainted h100, and its node selector is missing.
func ExampleCheck() {
	in := verify.Input{
		Slices:  fixtureSlices(),
		Classes: classes(),
		Node:    node("node-a", "a"),
	}
	c := claim("train", exact("gpu", "gpu", 1, `device.attributes["gpu.example.com"].model == "a100"`))
	proposed := resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-1"}},
	}}
	violations, err := verify.Check(context.Background(), in, []*resourceapi.ResourceClaim{c}, []resourceapi.AllocationResult{proposed})
	if err != nil {
		fmt.Println("cannot check:", err)
		return
	}
	for _, v := range violations {
		fmt.Println(v)
	}

	// The right device, with the node selector Kubernetes writes, passes.
	proposed.Devices.Results[0].Device = "gpu-0"
	proposed.NodeSelector = onNode("node-a")
	violations, _ = verify.Check(context.Background(), in, []*resourceapi.ResourceClaim{c}, []resourceapi.AllocationResult{proposed})
	fmt.Println(len(violations), "violations")
	// Output:
	// claim default/train, request gpu, device gpu.example.com/node-a/gpu-1: Selector: selector #0 of the request is false: device.attributes["gpu.example.com"].model == "a100"
	// claim default/train, request gpu, device gpu.example.com/node-a/gpu-1: Taint: taint example.com/broken=:NoSchedule is not tolerated
	// claim default/train: NodeSelector: node selector none, expected {field metadata.name In [node-a]}
	// 0 violations
}
