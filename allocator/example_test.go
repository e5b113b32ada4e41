package allocator_test

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// gpuSlice publishes n GPUs of one model on a node.
func gpuSlice(nodeName, model string, n int) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   "gpu.example.com",
			NodeName: &nodeName,
			Pool:     resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range n {
		m := model
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name:       fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: &m}},
		})
	}
	return s
}

func gpuClaim(name string, count int64) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpus",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "gpu",
				AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
				Count:           count,
			},
		}}}},
	}
}

func ExampleNewSnapshot() {
	snap := allocator.NewSnapshot(allocator.Options{}) // FirstFit, Kubernetes 1.37 default gates
	if err := snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 2)); err != nil {
		panic(err)
	}
	if err := snap.AddOrUpdateClass(&resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`},
		}}},
	}); err != nil {
		panic(err)
	}
	fmt.Println(snap.Features().DRAPrioritizedList, snap.Features().DRAListTypeAttributes)
	// Output: true false
}

func ExampleSnapshot_Allocate() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 2))
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.example.com"].model == "H100"`},
		}}},
	})
	nodeA := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}

	results, err := snap.Allocate(context.Background(), nodeA, []*resourceapi.ResourceClaim{gpuClaim("train", 2)})
	if err != nil {
		panic(err)
	}
	for _, r := range results[0].Devices.Results {
		fmt.Println(r.Request, r.Driver, r.Pool, r.Device)
	}
	fmt.Println(results[0].NodeSelector.NodeSelectorTerms[0].MatchFields[0].Values)

	_, err = snap.Allocate(context.Background(), nodeA, []*resourceapi.ResourceClaim{gpuClaim("big", 3)})
	var unsat *allocator.UnsatisfiableError
	fmt.Println(errors.Is(err, allocator.ErrUnsatisfiable), errors.As(err, &unsat) && unsat.Node == "node-a")
	// Output:
	// gpus gpu.example.com node-a gpu-0
	// gpus gpu.example.com node-a gpu-1
	// [node-a]
	// true true
}

func ExampleSnapshot_Fork() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 1))
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})
	nodeA := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	ctx := context.Background()

	// What if pod "first" got the GPU? Record its allocation in a fork only.
	what := snap.Fork()
	first := gpuClaim("first", 1)
	results, _ := what.Allocate(ctx, nodeA, []*resourceapi.ResourceClaim{first})
	first.Status.Allocation = &results[0]
	_ = what.AddOrUpdateClaim(first)

	_, errFork := what.Allocate(ctx, nodeA, []*resourceapi.ResourceClaim{gpuClaim("second", 1)})
	_, errSnap := snap.Allocate(ctx, nodeA, []*resourceapi.ResourceClaim{gpuClaim("second", 1)})
	fmt.Println("fork full:", errors.Is(errFork, allocator.ErrUnsatisfiable), "snapshot full:", errSnap != nil)

	// Keep the decision.
	if err := what.Commit(); err != nil {
		panic(err)
	}
	_, errSnap = snap.Allocate(ctx, nodeA, []*resourceapi.ResourceClaim{gpuClaim("second", 1)})
	fmt.Println("after commit, snapshot full:", errors.Is(errSnap, allocator.ErrUnsatisfiable))
	// Output:
	// fork full: true snapshot full: false
	// after commit, snapshot full: true
}
