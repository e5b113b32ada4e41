package capacity_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

const (
	driver = "cap.example.com"
	node   = "node-1"
	class  = "any"
)

// allFeatures makes NewAllocator pick the experimental implementation, which has every 1.37 feature.
func allFeatures(fractional bool) structured.Features {
	return structured.Features{
		AdminAccess: true, CompatibilityGroups: true, ConsumableCapacity: true, DerivedAttributes: true,
		DeviceBindingAndStatus: true, DeviceTaints: true, FractionalCapacityRange: fractional,
		ListTypeAttributes: true, OptionalNodeOperations: true, PartitionableDevices: true, PrioritizedList: true,
	}
}

var celCache = cel.NewCache(10, cel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})

type classes []*resourceapi.DeviceClass

func (l classes) List() ([]*resourceapi.DeviceClass, error) { return l, nil }
func (l classes) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("deviceclass %q not found", name)
}

var anyClass = classes{{ObjectMeta: metav1.ObjectMeta{Name: class}}}

// nodeSlices publishes the devices of pool node-1 in one ResourceSlice, and its counter sets, if any, in a
// second one (the API does not allow both in one slice).
func nodeSlices(counterSets []resourceapi.CounterSet, devices ...resourceapi.Device) []*resourceapi.ResourceSlice {
	n := node
	count := int64(1)
	if counterSets != nil {
		count = 2
	}
	mk := func(name string) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.ResourceSliceSpec{
				Driver: driver, NodeName: &n,
				Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: count},
			},
		}
	}
	devs := mk("devices")
	devs.Spec.Devices = devices
	out := []*resourceapi.ResourceSlice{devs}
	if counterSets != nil {
		c := mk("counters")
		c.Spec.SharedCounters = counterSets
		out = append(out, c)
	}
	return out
}

func claimFor(capacity map[resourceapi.QualifiedName]resource.Quantity, tolerations []resourceapi.DeviceToleration) *resourceapi.ResourceClaim {
	req := resourceapi.DeviceRequest{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1, Tolerations: tolerations}}
	if capacity != nil {
		req.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: capacity}
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim", UID: "claim-uid"},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}},
	}
}

// allocateUpstream runs the upstream allocator on node-1 with the given slices, already allocated devices
// (exclusive) and shares (with their consumed capacity), for one claim.
func allocateUpstream(fractional bool, slices []*resourceapi.ResourceSlice, exclusive []string,
	shares []map[resourceapi.QualifiedName]resource.Quantity, claim *resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, d := range exclusive {
		state.AllocatedDevices.Insert(structured.MakeDeviceID(driver, node, d))
	}
	for i, s := range shares {
		id := structured.MakeDeviceID(driver, node, slices[0].Spec.Devices[0].Name)
		uid := types.UID(fmt.Sprintf("share-%d", i))
		state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, &uid))
		state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, s))
	}
	ctx := context.Background()
	a, err := structured.NewAllocator(ctx, allFeatures(fractional), state, anyClass, slices, celCache)
	if err != nil {
		return nil, err
	}
	return a.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, []*resourceapi.ResourceClaim{claim})
}
