package validation_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/allocator/validation"
)

func print(errs field.ErrorList) {
	if len(errs) == 0 {
		fmt.Println("valid")
	}
	for _, e := range errs {
		fmt.Println(e.Error())
	}
}

// A claim written by hand with a negative count: the API server refuses it, and so does validation.
func ExampleResourceClaim() {
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "train"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com",
				AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: -1},
		}}}},
	}
	print(validation.ResourceClaim(claim, validation.Options{}))
	// Output:
	// spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero
}

// A template's claim spec is validated like a claim's, under spec.spec.
func ExampleResourceClaimTemplate() {
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "train"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "gpu.example.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}},
			Constraints: []resourceapi.DeviceConstraint{{Requests: []string{"nic"}, MatchAttribute: ptr(resourceapi.FullyQualifiedName("example.com/numa"))}},
		}}},
	}
	print(validation.ResourceClaimTemplate(tmpl, validation.Options{}))
	// Output:
	// spec.spec.devices.constraints[0].requests[0]: Invalid value: "nic": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'
}

// A class whose selector does not compile.
func ExampleDeviceClass() {
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{
			{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}},
			{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver = "gpu.example.com"`}},
		}},
	}
	errs := validation.DeviceClass(class, validation.Options{})
	for _, e := range errs {
		fmt.Println(e.Field, e.Type)
	}
	// Output:
	// spec.selectors[1].cel.expression Invalid value
}

// A slice whose device capacity is a quantity that parses but on which arithmetic would not end.
func ExampleResourceSlice() {
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   "gpu.example.com",
			Pool:     resourceapi.ResourcePool{Name: "node-1", ResourceSliceCount: 1},
			NodeName: ptr("node-1"),
			Devices: []resourceapi.Device{{Name: "gpu-0", Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": {Value: resource.MustParse("1E100000000")}}}},
		},
	}
	print(validation.ResourceSlice(slice, validation.Options{}))
	// Output:
	// spec.devices[0].capacity[memory].value: Invalid value: "<omitted>": quantity out of bounds: decimal exponent 100000000 is outside [-9, 36]
}

// A rule whose taint has no effect.
func ExampleDeviceTaintRule() {
	rule := &resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "maintenance"},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr("gpu.example.com")},
			Taint:          resourceapi.DeviceTaint{Key: "example.com/maintenance"},
		},
	}
	print(validation.DeviceTaintRule(rule, validation.Options{}))
	// Output:
	// spec.taint.effect: Required value
}

// Taint checks one taint at the path given.
func ExampleTaint() {
	print(validation.Taint(resourceapi.DeviceTaint{Effect: resourceapi.DeviceTaintEffectNoSchedule},
		field.NewPath("spec", "devices").Index(0).Child("taints").Index(0)))
	// Output:
	// spec.devices[0].taints[0].key: Required value
}

// Objects of mixed kinds, as a loader reads them: each is validated by the function for its kind, and
// kinds outside the package (a Node here) are not checked.
func ExampleObject() {
	objects := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "GPU"}},
	}
	for _, obj := range objects {
		print(validation.Object(obj, validation.Options{}))
	}
	// Output:
	// valid
	// metadata.name: Invalid value: "GPU": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
}

// A driver's status entry for a device the claim was not allocated, with an address that is no CIDR.
func ExampleDeviceStatuses() {
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "train"},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "nic", Driver: "nic.example.com", Pool: "node-1", Device: "eth-0"},
			}}},
			Devices: []resourceapi.AllocatedDeviceStatus{{
				Driver: "nic.example.com", Pool: "node-1", Device: "eth-1",
				NetworkData: &resourceapi.NetworkDeviceData{IPs: []string{"10.0.0.7"}},
			}},
		},
	}
	print(validation.DeviceStatuses(claim))
	// Output:
	// status.devices[0]: Invalid value: "nic.example.com/node-1/eth-1": must be an allocated device in the claim
	// status.devices[0].networkData.ips[0]: Invalid value: "10.0.0.7": must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)
}
