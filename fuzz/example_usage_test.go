package fuzz_test

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// Two claims hold shares of one NIC whose bandwidth is 100G: 60G each is 20G too much.
func ExampleCheckUsage() {
	nic := resourceapi.Device{
		Name:                     "nic-0",
		AllowMultipleAllocations: ptr.To(true),
		Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"bandwidth": {Value: resource.MustParse("100G")}},
	}
	slice := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
		Driver: fuzz.NICDriver, Pool: resourceapi.ResourcePool{Name: "fabric", ResourceSliceCount: 1},
		AllNodes: ptr.To(true), Devices: []resourceapi.Device{nic},
	}}
	share := func(name, id string) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{}
		c.Namespace, c.Name = "default", name
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
			Request: "net", Driver: fuzz.NICDriver, Pool: "fabric", Device: "nic-0", ShareID: ptr.To(types.UID(id)),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"bandwidth": resource.MustParse("60G")},
		}}}}
		return c
	}
	claims := []*resourceapi.ResourceClaim{share("a", "1"), share("b", "2")}
	for _, line := range fuzz.CheckUsage([]*resourceapi.ResourceSlice{slice}, claims, verify.AllFeatures()) {
		fmt.Println(line)
	}
	// Output:
	// device nic.example.com/fabric/nic-0: capacity bandwidth consumed 120G by shares [default/a default/b], 100G available
}
