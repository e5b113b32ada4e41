package allocator_test

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// halvedGPUs publishes two GPUs on node-a, each with two memory halves: a counter set per GPU, and per GPU
// a partition for each half and the whole GPU.
func halvedGPUs() []*resourceapi.ResourceSlice {
	node := "node-a"
	newSlice := func(name string) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:   "gpu.example.com",
				NodeName: &node,
				Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 2},
			},
		}
	}
	one := resourceapi.Counter{Value: resource.MustParse("1")}
	counters, devices := newSlice("node-a-counters"), newSlice("node-a-devices")
	for g := range 2 {
		set := fmt.Sprintf("gpu-%d", g)
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, resourceapi.CounterSet{
			Name: set, Counters: map[string]resourceapi.Counter{"half-0": one, "half-1": one},
		})
		partition := func(name, kind string, halves ...string) resourceapi.Device {
			used := map[string]resourceapi.Counter{}
			for _, h := range halves {
				used[h] = one
			}
			return resourceapi.Device{
				Name:             set + "-" + name,
				Attributes:       map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"kind": {StringValue: &kind}},
				ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: used}},
			}
		}
		devices.Spec.Devices = append(devices.Spec.Devices,
			partition("half-0", "half", "half-0"), partition("half-1", "half", "half-1"),
			partition("whole", "whole", "half-0", "half-1"))
	}
	return []*resourceapi.ResourceSlice{counters, devices}
}

// ExampleStrategy shows where each strategy puts a half GPU when half of gpu-1 is already in use: FirstFit
// takes the first half in upstream order, BestFit fills gpu-1 and keeps gpu-0 whole, Spread takes the least
// used GPU.
func ExampleStrategy() {
	halfClass := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "half-gpu"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.attributes["gpu.example.com"].kind == "half"`,
		}}}},
	}
	inUse := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "running"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-1-half-0"}},
		}}},
	}
	pending := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name:    "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "half-gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
	inUse.Spec = *pending.Spec.DeepCopy() // the running claim asked for what the new one asks for
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	for _, strategy := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit, allocator.Spread} {
		snap := allocator.NewSnapshot(allocator.Options{Strategy: strategy})
		for _, s := range halvedGPUs() {
			if err := snap.AddOrUpdateSlice(s); err != nil {
				panic(err)
			}
		}
		if err := snap.AddOrUpdateClass(halfClass); err != nil {
			panic(err)
		}
		if err := snap.AddOrUpdateClaim(inUse); err != nil {
			panic(err)
		}
		res, err := snap.Allocate(context.Background(), node, []*resourceapi.ResourceClaim{pending})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s\n", strategy, res[0].Devices.Results[0].Device)
	}
	// Output:
	// FirstFit: gpu-0-half-0
	// BestFit: gpu-1-half-1
	// Spread: gpu-0-half-0
}

// ExampleSnapshot_AllocateWith asks one FirstFit snapshot for the same claim with each strategy: the
// strategy of one call replaces the snapshot's for that call only.
func ExampleSnapshot_AllocateWith() {
	halfClass := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "half-gpu"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.attributes["gpu.example.com"].kind == "half"`,
		}}}},
	}
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name:    "gpu",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "half-gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
	}}}}
	inUse := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "running"},
		Spec:       spec,
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-1-half-0"}},
		}}},
	}
	pending := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new"}, Spec: spec}
	snap := allocator.NewSnapshot(allocator.Options{}) // FirstFit
	for _, s := range halvedGPUs() {
		if err := snap.AddOrUpdateSlice(s); err != nil {
			panic(err)
		}
	}
	if err := snap.AddOrUpdateClass(halfClass); err != nil {
		panic(err)
	}
	if err := snap.AddOrUpdateClaim(inUse); err != nil {
		panic(err)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	claims := []*resourceapi.ResourceClaim{pending}
	res, err := snap.Allocate(context.Background(), node, claims)
	if err != nil {
		panic(err)
	}
	fmt.Println("Allocate:", res[0].Devices.Results[0].Device)
	res, err = snap.AllocateWith(context.Background(), allocator.BestFit, node, claims)
	if err != nil {
		panic(err)
	}
	fmt.Println("AllocateWith BestFit:", res[0].Devices.Results[0].Device)
	_, err = snap.AllocateWith(context.Background(), allocator.Strategy(7), node, claims)
	fmt.Println(errors.Is(err, allocator.ErrInvalidInput), err)
	// Output:
	// Allocate: gpu-0-half-0
	// AllocateWith BestFit: gpu-1-half-1
	// true invalid input: unsupported strategy Strategy(7)
}
