package allocator_test

import (
	"context"
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// exampleRequeue returns a Requeue with two classes, one node's GPUs and two pending claims.
func exampleRequeue(ctx context.Context) *allocator.Requeue {
	r, err := allocator.NewRequeue(allocator.RequeueOptions{})
	if err != nil {
		panic(err)
	}
	for _, model := range []string{"h100", "a100"} {
		class := &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: model},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.attributes["gpu.example.com"].model == %q`, model),
			}}}},
		}
		if _, err := r.AddOrUpdateClass(ctx, class); err != nil {
			panic(err)
		}
	}
	for _, claim := range []struct{ name, class string }{{"train", "h100"}, {"infer", "a100"}} {
		err := r.AddPending(&resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: claim.name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name:    "gpu",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: claim.class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
			}}}},
		})
		if err != nil {
			panic(err)
		}
	}
	return r
}

func exampleGPUSlice(node string, models ...string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.example.com"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   "gpu.example.com",
			Pool:     resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
			NodeName: &node,
		},
	}
	for i, model := range models {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name:       fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: &model}},
		})
	}
	return s
}

// A scheduler feeds the Requeue what its informers see and retries only the pods whose claims an event
// may let fit.
func ExampleNewRequeue() {
	ctx := context.Background()
	r := exampleRequeue(ctx)

	// A node with an H100 appears: only the claim that asks for an H100 is worth retrying.
	woken, err := r.AddOrUpdateSlice(ctx, exampleGPUSlice("node-1", "h100"))
	if err != nil {
		panic(err)
	}
	fmt.Println("new slice:", woken)

	// The same slice again changes nothing.
	woken, err = r.AddOrUpdateSlice(ctx, exampleGPUSlice("node-1", "h100"))
	if err != nil {
		panic(err)
	}
	fmt.Println("unchanged slice:", woken)

	// "train" was allocated and leaves the queue.
	r.RemovePending("ml", "train")
	fmt.Println("pending:", r.Len())
	// Output:
	// new slice: [ml/train]
	// unchanged slice: []
	// pending: 1
}

// When a claim's devices are freed, the pending claims those devices can serve are worth retrying.
func ExampleRequeue_ClaimDeallocated() {
	ctx := context.Background()
	r := exampleRequeue(ctx)
	if _, err := r.AddOrUpdateSlice(ctx, exampleGPUSlice("node-1", "h100", "a100")); err != nil {
		panic(err)
	}
	done := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "finished"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-1",
			}}},
		}},
	}
	woken, err := r.ClaimDeallocated(ctx, done)
	if err != nil {
		panic(err)
	}
	fmt.Println(woken)
	// Output:
	// [ml/infer]
}

// A changed class wakes the claims for the devices it selects now and did not before; a pending claim
// that names a class that does not exist yet wakes when the class is created.
func ExampleRequeue_AddOrUpdateClass() {
	ctx := context.Background()
	r := exampleRequeue(ctx)
	if _, err := r.AddOrUpdateSlice(ctx, exampleGPUSlice("node-1", "h200")); err != nil {
		panic(err)
	}
	// The h100 class now takes H200s as well.
	woken, err := r.AddOrUpdateClass(ctx, &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "h100"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.attributes["gpu.example.com"].model in ["h100", "h200"]`,
		}}}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(woken)
	// Output:
	// [ml/train]
}

// Removing a DeviceTaintRule that kept devices from being allocated wakes the claims those devices serve.
func ExampleRequeue_DeleteTaintRule() {
	ctx := context.Background()
	r := exampleRequeue(ctx)
	if _, err := r.AddOrUpdateSlice(ctx, exampleGPUSlice("node-1", "a100")); err != nil {
		panic(err)
	}
	driver, pool, device := "gpu.example.com", "node-1", "gpu-0"
	rule := &resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "maintenance"},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &driver, Pool: &pool, Device: &device},
			Taint:          resourceapi.DeviceTaint{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
		},
	}
	// A new rule only adds a taint: nobody wakes.
	woken, err := r.AddOrUpdateTaintRule(ctx, rule)
	if err != nil {
		panic(err)
	}
	fmt.Println("rule added:", woken)
	fmt.Println("rule deleted:", r.DeleteTaintRule(ctx, "maintenance"))
	// Output:
	// rule added: []
	// rule deleted: [ml/infer]
}

// A driver that clears a device's taint in its ResourceSlice wakes the claims the device serves; a
// request for all devices of a class also wakes when a device of the class goes away.
func ExampleRequeue_AddOrUpdateSlice() {
	ctx := context.Background()
	r := exampleRequeue(ctx)
	err := r.AddPending(&resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "every-a100"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name:    "gpus",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "a100", AllocationMode: resourceapi.DeviceAllocationModeAll},
		}}}},
	})
	if err != nil {
		panic(err)
	}
	tainted := exampleGPUSlice("node-1", "h100", "a100")
	for i := range tainted.Spec.Devices {
		tainted.Spec.Devices[i].Taints = []resourceapi.DeviceTaint{{Key: "gpu.example.com/unhealthy", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	}
	if _, err := r.AddOrUpdateSlice(ctx, tainted); err != nil {
		panic(err)
	}

	// The H100 is healthy again.
	healed := tainted.DeepCopy()
	healed.Spec.Devices[0].Taints = nil
	woken, err := r.AddOrUpdateSlice(ctx, healed)
	if err != nil {
		panic(err)
	}
	fmt.Println("taint cleared:", woken)

	// The tainted A100 is no longer published: "every-a100" has one device fewer to take, and because the
	// slice's device list changed, the pool's other devices count as available again (the change may have
	// made an invalid pool valid), which wakes "train" too.
	healed.Spec.Devices = healed.Spec.Devices[:1]
	woken, err = r.AddOrUpdateSlice(ctx, healed)
	if err != nil {
		panic(err)
	}
	fmt.Println("device removed:", woken)
	// Output:
	// taint cleared: [ml/train]
	// device removed: [ml/every-a100 ml/train]
}

// A pending claim is checked when it is registered; invalid input names the claim and the field.
func ExampleRequeue_AddPending() {
	r, err := allocator.NewRequeue(allocator.RequeueOptions{})
	if err != nil {
		panic(err)
	}
	err = r.AddPending(&resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "h100",
				Selectors:       []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.example.com"].memory >`}}},
			},
		}}}},
	})
	var ie *allocator.InputError
	if errors.As(err, &ie) {
		fmt.Println(ie.Object)
		fmt.Println(ie.Field)
	}
	fmt.Println("pending:", r.Len())
	// Output:
	// ResourceClaim ml/train
	// spec.devices.requests[0].exactly.selectors[0].cel.expression
	// pending: 0
}

// A deleted class puts the claims that name it to sleep: devices it would select wake nobody until the
// class is back. Like every class event, a deletion under a context that has ended changes nothing and
// returns the context's error.
func ExampleRequeue_DeleteClass() {
	ctx := context.Background()
	r := exampleRequeue(ctx)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	fmt.Println(r.DeleteClass(cancelled, "h100"))
	if err := r.DeleteClass(ctx, "h100"); err != nil {
		panic(err)
	}
	woken, err := r.AddOrUpdateSlice(ctx, exampleGPUSlice("node-1", "h100"))
	if err != nil {
		panic(err)
	}
	fmt.Println("new H100s wake:", woken)
	// Output:
	// requeue: DeviceClass h100: context canceled
	// new H100s wake: []
}
