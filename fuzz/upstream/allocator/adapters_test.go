package allocator_test

import (
	"fmt"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// classLister serves DeviceClasses to the upstream allocator.
type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, c := range l {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("deviceclass %q not found", name)
}

func listerOf(classes []*resourceapi.DeviceClass) classLister {
	l := classLister{}
	for _, c := range classes {
		l[c.Name] = c
	}
	return l
}

// allocatedState gathers the allocated state of claims as kube-scheduler does (foreachAllocatedDevice in its
// DRA plugin): admin access holds nothing; a shareID holds a share and its consumed capacity only while
// DRAConsumableCapacity is on; anything else, shares written while the gate was on included, holds the device.
func allocatedState(claims []*resourceapi.ResourceClaim, consumableCapacity bool) structured.AllocatedState {
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if ptr.Deref(r.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID == nil || !consumableCapacity {
				state.AllocatedDevices.Insert(id)
				continue
			}
			state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			if r.ConsumedCapacity != nil {
				state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
			}
		}
	}
	return state
}

// taintedSlices applies DeviceTaintRules to copies of the slices, as the scheduler's slice tracker does before
// the upstream allocator sees them: every rule whose selector matches a device adds its taint.
func taintedSlices(c *fuzz.Cluster) []*resourceapi.ResourceSlice {
	out := make([]*resourceapi.ResourceSlice, len(c.Slices))
	rules := append([]*resourceapi.DeviceTaintRule(nil), c.TaintRules...)
	sort.Slice(rules, func(i, j int) bool { return rules[i].Name < rules[j].Name })
	for i, s := range c.Slices {
		s = s.DeepCopy()
		for d := range s.Spec.Devices {
			dev := &s.Spec.Devices[d]
			for _, r := range rules {
				sel := r.Spec.DeviceSelector
				if sel == nil ||
					(sel.Driver != nil && *sel.Driver != s.Spec.Driver) ||
					(sel.Pool != nil && *sel.Pool != s.Spec.Pool.Name) ||
					(sel.Device != nil && *sel.Device != dev.Name) {
					continue
				}
				dev.Taints = append(dev.Taints, r.Spec.Taint)
			}
		}
		out[i] = s
	}
	return out
}

// upstreamFeatures maps the Kubernetes gates onto the upstream allocator's features.
func upstreamFeatures(f verify.Features) structured.Features {
	return structured.Features{
		AdminAccess:             f.DRAAdminAccess,
		CompatibilityGroups:     f.DRADeviceCompatibilityGroups,
		ConsumableCapacity:      f.DRAConsumableCapacity,
		DerivedAttributes:       f.DRADerivedAttributes,
		DeviceBindingAndStatus:  f.DRADeviceBindingConditions && f.DRAResourceClaimDeviceStatus,
		DeviceTaints:            f.DRADeviceTaints,
		FractionalCapacityRange: f.DRAFractionalCapacityRange,
		ListTypeAttributes:      f.DRAListTypeAttributes,
		OptionalNodeOperations:  f.DRAOptionalNodeOperations,
		PartitionableDevices:    f.DRAPartitionableDevices,
		PrioritizedList:         f.DRAPrioritizedList,
	}
}
