package allocator_test

import (
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// A claim read from YAML with a negative count is refused when it is added, naming the field; the whole
// validation result is in InputError.Errors. Objects from an informer can skip the check with
// Options.TrustAPIServer.
func ExampleSnapshot_AddOrUpdateClaim() {
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "train"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com",
				AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: -1},
		}}}},
	}
	err := allocator.NewSnapshot(allocator.Options{}).AddOrUpdateClaim(claim)
	fmt.Println(err)
	var ie *allocator.InputError
	if errors.As(err, &ie) {
		fmt.Println(errors.Is(err, allocator.ErrInvalidInput), len(ie.Errors))
	}
	// Output:
	// ResourceClaim default/train: spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero
	// true 1
}
