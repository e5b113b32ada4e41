package allocator_test

import (
	"context"
	"errors"
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

func ExampleSnapshot_ExplainOnNode() {
	snap := allocator.NewSnapshot(allocator.Options{})
	check(snap.AddOrUpdateNode(node("node-a", nil)))
	check(snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 3)))
	check(snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}))
	// Two claims of a pod want two GPUs each; each alone would fit.
	a, b := gpuClaim("train", 2), gpuClaim("eval", 2)
	e, err := snap.ExplainOnNode(context.Background(), "node-a", []*resourceapi.ResourceClaim{a, b})
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Obstacles[0].Reason, e.Obstacles[0].Needed, e.Obstacles[0].Largest)

	// Err carries the explanation for callers that pass errors on.
	var ue *allocator.UnsatisfiableError
	if errors.As(e.Err(), &ue) {
		fmt.Println(ue.Reasons[0])
		fmt.Println(ue.Explanation == e)
	}
	// Output:
	// CompetingRequests 4 3
	// claim default/train, request "gpus"; claim default/eval, request "gpus": together need 4 devices and share 3 candidates
	// true
}
