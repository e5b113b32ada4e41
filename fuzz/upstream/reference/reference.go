package reference

import (
	"fmt"
	"slices"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
)

// ClassLister serves DeviceClasses to the upstream allocator, by name.
type ClassLister map[string]*resourceapi.DeviceClass

// Classes is a ClassLister of classes.
func Classes(classes []*resourceapi.DeviceClass) ClassLister {
	l := ClassLister{}
	for _, c := range classes {
		l[c.Name] = c
	}
	return l
}

// List returns the classes sorted by name.
func (l ClassLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, c := range l {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Get returns the class of that name.
func (l ClassLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("deviceclass %q not found", name)
}

// AllocatedState gathers the allocated state of claims as kube-scheduler does (foreachAllocatedDevice in its
// DRA plugin): admin access holds nothing; a shareID holds a share and its consumed capacity only while
// DRAConsumableCapacity is on; anything else, shares written while the gate was on included, holds the device.
func AllocatedState(claims []*resourceapi.ResourceClaim, consumableCapacity bool) structured.AllocatedState {
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

// TaintedSlices applies DeviceTaintRules to copies of the slices, as the scheduler's slice tracker does before
// the upstream allocator sees them: every rule whose selector matches a device adds its taint, rules in name
// order.
func TaintedSlices(in []*resourceapi.ResourceSlice, rules []*resourceapi.DeviceTaintRule) []*resourceapi.ResourceSlice {
	out := make([]*resourceapi.ResourceSlice, len(in))
	rules = slices.Clone(rules)
	sort.Slice(rules, func(i, j int) bool { return rules[i].Name < rules[j].Name })
	for i, s := range in {
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

// Features maps the Kubernetes gates onto the upstream allocator's features.
func Features(f verify.Features) structured.Features {
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

// Normalized copies results with every share ID replaced by one marker: upstream draws random share IDs, so
// otherwise identical results differ only there.
func Normalized(rs []resourceapi.AllocationResult) []resourceapi.AllocationResult {
	out := make([]resourceapi.AllocationResult, len(rs))
	for i := range rs {
		out[i] = *rs[i].DeepCopy()
		for j := range out[i].Devices.Results {
			if out[i].Devices.Results[j].ShareID != nil {
				id := types.UID("share")
				out[i].Devices.Results[j].ShareID = &id
			}
		}
	}
	return out
}
