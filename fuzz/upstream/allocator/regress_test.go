package allocator_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// Minimal cases of disagreements the generated comparison found, kept as fixed regression cases.

func nicCluster(gates verify.Features) *fuzz.Cluster {
	n := &v1.Node{}
	n.Name = "node-0"
	slice := &resourceapi.ResourceSlice{}
	slice.Name = "fabric"
	slice.Spec = resourceapi.ResourceSliceSpec{Driver: fuzz.NICDriver, AllNodes: ptr.To(true),
		Pool: resourceapi.ResourcePool{Name: "fabric", Generation: 1, ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "nic-0", AllowMultipleAllocations: ptr.To(true),
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"bandwidth": {Value: resource.MustParse("100G"),
				RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("10G"))}}}}}}
	nic := &resourceapi.DeviceClass{}
	nic.Name = fuzz.ClassNIC
	nic.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "nic.example.com"`}}}
	held := &resourceapi.ResourceClaim{}
	held.Name, held.Namespace = "allocated-0", "default"
	held.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fuzz.ClassNIC, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
	held.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "req-0", Driver: fuzz.NICDriver, Pool: "fabric", Device: "nic-0", ShareID: ptr.To(types.UID("7f6e4c1a-0000-4000-8000-000000000001")),
		ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"bandwidth": resource.MustParse("10G")}}}}}
	pending := &resourceapi.ResourceClaim{}
	pending.Name, pending.Namespace = "claim-0", "default"
	pending.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fuzz.ClassNIC, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
	return &fuzz.Cluster{Nodes: []*v1.Node{n}, Node: n, Slices: []*resourceapi.ResourceSlice{slice}, Classes: []*resourceapi.DeviceClass{nic},
		Allocated: []*resourceapi.ResourceClaim{held}, Claims: []*resourceapi.ResourceClaim{pending}, Features: gates}
}

func TestDifferentialRegressions(t *testing.T) {
	gateOff := verify.AllFeatures()
	gateOff.DRAConsumableCapacity = false
	for _, tc := range []struct {
		name    string
		cluster *fuzz.Cluster
	}{
		// D1: upstream's in-use check only sees exclusive allocations; with DRAConsumableCapacity off the
		// device is allocated exclusively although the state holds a share of it.
		{"a share in the state does not block a device while DRAConsumableCapacity is off", nicCluster(gateOff)},
		{"a share in the state leaves room for another share", nicCluster(verify.AllFeatures())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compare(t, tc.cluster)
		})
	}
}
