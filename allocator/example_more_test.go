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

func ExampleSnapshot_AllocateOnNode() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 4))
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})

	results, err := snap.AllocateOnNode(context.Background(), "node-a", []*resourceapi.ResourceClaim{gpuClaim("a", 1), gpuClaim("b", 2)})
	if err != nil {
		panic(err)
	}
	for i, r := range results {
		for _, d := range r.Devices.Results {
			fmt.Println("claim", i, d.Device)
		}
	}
	// Output:
	// claim 0 gpu-0
	// claim 1 gpu-1
	// claim 1 gpu-2
}

func ExampleSnapshot_AddOrUpdateTaintRule() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 1))
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})
	driver, pool, dev := "gpu.example.com", "node-a", "gpu-0"
	_ = snap.AddOrUpdateTaintRule(&resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "maintenance"},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &driver, Pool: &pool, Device: &dev},
			Taint:          resourceapi.DeviceTaint{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
		},
	})
	nodeA := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}

	_, err := snap.Allocate(context.Background(), nodeA, []*resourceapi.ResourceClaim{gpuClaim("plain", 1)})
	fmt.Println("without toleration:", errors.Is(err, allocator.ErrUnsatisfiable))

	tolerant := gpuClaim("tolerant", 1)
	tolerant.Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{
		Key: "example.com/maintenance", Operator: resourceapi.DeviceTolerationOpExists,
	}}
	results, err := snap.Allocate(context.Background(), nodeA, []*resourceapi.ResourceClaim{tolerant})
	fmt.Println("with toleration:", err == nil, results[0].Devices.Results[0].Tolerations[0].Key)
	// Output:
	// without toleration: true
	// with toleration: true example.com/maintenance
}

func ExampleSnapshot_Discard() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 1))
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})

	what := snap.Fork()
	_ = what.DeleteSlice("node-a-gpus") // what if the node lost its GPUs?
	nodeA := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	_, err := what.Allocate(context.Background(), nodeA, []*resourceapi.ResourceClaim{gpuClaim("c", 1)})
	fmt.Println("in the fork:", errors.Is(err, allocator.ErrUnsatisfiable))
	what.Discard()

	_, err = snap.Allocate(context.Background(), nodeA, []*resourceapi.ResourceClaim{gpuClaim("c", 1)})
	fmt.Println("in the snapshot:", err == nil)
	// Output:
	// in the fork: true
	// in the snapshot: true
}

func ExampleDefaultFeatures() {
	f := allocator.DefaultFeatures()
	f.DRAListTypeAttributes = true // opt into an alpha gate
	snap := allocator.NewSnapshot(allocator.Options{Features: &f})
	fmt.Println(snap.Features().DRAListTypeAttributes, snap.Features().DRAConsumableCapacity)
	// Output: true true
}
