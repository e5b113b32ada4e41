package allocator_test

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

func ExampleSnapshot_Explain() {
	snap := allocator.NewSnapshot(allocator.Options{})
	slice := gpuSlice("node-a", "A100", 4)
	for i := 2; i < 4; i++ {
		m := "H100"
		slice.Spec.Devices[i].Attributes["model"] = resourceapi.DeviceAttribute{StringValue: &m}
	}
	check(snap.AddOrUpdateSlice(slice))
	check(snap.AddOrUpdateClass(&resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-h100"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.example.com"].model == "H100"`},
		}}},
	}))
	busy := gpuClaim("inference", 1)
	busy.Spec.Devices.Requests[0].Exactly.DeviceClassName = "gpu-h100"
	busy.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpus", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-2"}},
	}}
	check(snap.AddOrUpdateClaim(busy))

	train := gpuClaim("train", 2)
	train.Spec.Devices.Requests[0].Exactly.DeviceClassName = "gpu-h100"
	e, err := snap.Explain(context.Background(), node("node-a", nil), []*resourceapi.ResourceClaim{train})
	if err != nil {
		panic(err)
	}
	fmt.Print(e)
	fmt.Println(e.Dominant())
	fmt.Println(e.Headline())
	// Output:
	// node node-a: claims do not fit (0 search steps)
	//   claim default/train
	//     request "gpus" (class gpu-h100): needs 2 devices, 1 of 4 is a candidate
	//       - 2 rejected by DeviceClass gpu-h100 spec.selectors[0] (device.attributes["gpu.example.com"].model == "H100")
	//       - 1 allocated to ResourceClaim default/inference
	// claim default/train, request "gpus": needs 2 devices, 1 of 4 is a candidate: 2 rejected by DeviceClass gpu-h100 spec.selectors[0] (device.attributes["gpu.example.com"].model == "H100"), 1 allocated to ResourceClaim default/inference
	// claim default/train, request "gpus": 1 of 2 matching devices allocated to ResourceClaim default/inference
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
