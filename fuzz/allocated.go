package fuzz

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
)

type devRef struct {
	slice  *resourceapi.ResourceSlice
	device *resourceapi.Device
}

type poolKey struct{ driver, pool string }

// drawAllocated draws claims that already hold devices. The state is valid: exclusive devices are held once,
// shares of a shareable device fit its capacity, counters are not overdrawn and compatibility groups agree.
// Admin access allocations may hold any device.
func drawAllocated(t *rapid.T, opts Options, slices []*resourceapi.ResourceSlice) []*resourceapi.ResourceClaim {
	// Only the newest generation of each pool holds allocatable devices.
	newest := map[poolKey]int64{}
	for _, s := range slices {
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		newest[k] = max(newest[k], s.Spec.Pool.Generation)
	}
	var devices []devRef
	counters := map[poolKey]map[string]map[string]resource.Quantity{}
	for _, s := range slices {
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		if s.Spec.Pool.Generation != newest[k] {
			continue
		}
		for i := range s.Spec.Devices {
			devices = append(devices, devRef{s, &s.Spec.Devices[i]})
		}
		for _, cs := range s.Spec.SharedCounters {
			if counters[k] == nil {
				counters[k] = map[string]map[string]resource.Quantity{}
			}
			m := map[string]resource.Quantity{}
			for name, c := range cs.Counters {
				m[name] = c.Value.DeepCopy()
			}
			counters[k][cs.Name] = m
		}
	}
	if len(devices) == 0 {
		return nil
	}
	used := map[string]bool{}
	groups := map[string][][]string{} // counter set key → groups of the devices drawing on it
	shared := map[string]resource.Quantity{}
	n := rapid.IntRange(0, 3).Draw(t, "allocatedClaims")
	var claims []*resourceapi.ResourceClaim
	share := 0
	for i := 0; i < n; i++ {
		c := &resourceapi.ResourceClaim{}
		c.Name = fmt.Sprintf("allocated-%d", i)
		c.Namespace = Namespace
		c.UID = types.UID("uid-" + c.Name)
		admin := opts.AdminAccess && rapid.IntRange(0, 3).Draw(t, "allocatedAdmin") == 0
		req := &resourceapi.ExactDeviceRequest{DeviceClassName: ClassAny, AllocationMode: resourceapi.DeviceAllocationModeExactCount}
		if admin {
			req.AdminAccess = ptr.To(true)
		}
		alloc := &resourceapi.AllocationResult{}
		m := rapid.IntRange(1, 2).Draw(t, "allocatedDevices")
		for j := 0; j < m; j++ {
			d := devices[rapid.IntRange(0, len(devices)-1).Draw(t, "allocatedDevice")]
			k := poolKey{d.slice.Spec.Driver, d.slice.Spec.Pool.Name}
			id := k.driver + "/" + k.pool + "/" + d.device.Name
			res := resourceapi.DeviceRequestAllocationResult{Request: "req-0", Driver: k.driver, Pool: k.pool, Device: d.device.Name}
			if admin {
				if used["admin/"+id] {
					continue
				}
				used["admin/"+id] = true
				res.AdminAccess = ptr.To(true)
				alloc.Devices.Results = append(alloc.Devices.Results, res)
				continue
			}
			if ptr.Deref(d.device.AllowMultipleAllocations, false) {
				bw, ok := d.device.Capacity["bandwidth"]
				if !ok || bw.RequestPolicy == nil || bw.RequestPolicy.Default == nil {
					continue
				}
				next := shared[id].DeepCopy()
				next.Add(*bw.RequestPolicy.Default)
				if next.Cmp(bw.Value) > 0 {
					continue
				}
				shared[id] = next
				share++
				res.ShareID = ptr.To(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", share)))
				res.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"bandwidth": bw.RequestPolicy.Default.DeepCopy()}
				alloc.Devices.Results = append(alloc.Devices.Results, res)
				continue
			}
			if used[id] || !fitsCounters(counters[k], groups, k, d.device) {
				continue
			}
			used[id] = true
			takeCounters(counters[k], groups, k, d.device)
			alloc.Devices.Results = append(alloc.Devices.Results, res)
		}
		if len(alloc.Devices.Results) == 0 {
			continue
		}
		req.Count = int64(len(alloc.Devices.Results))
		c.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "req-0", Exactly: req}}
		c.Status.Allocation = alloc
		claims = append(claims, c)
	}
	return claims
}

func fitsCounters(sets map[string]map[string]resource.Quantity, groups map[string][][]string, k poolKey, d *resourceapi.Device) bool {
	for _, cc := range d.ConsumesCounters {
		avail := sets[cc.CounterSet]
		for name, c := range cc.Counters {
			a := avail[name]
			if a.Cmp(c.Value) < 0 {
				return false
			}
		}
		if !compatible(append(groups[k.driver+"/"+k.pool+"/"+cc.CounterSet], cc.CompatibilityGroups)) {
			return false
		}
	}
	return true
}

func takeCounters(sets map[string]map[string]resource.Quantity, groups map[string][][]string, k poolKey, d *resourceapi.Device) {
	for _, cc := range d.ConsumesCounters {
		avail := sets[cc.CounterSet]
		for name, c := range cc.Counters {
			a := avail[name]
			a.Sub(c.Value)
			avail[name] = a
		}
		key := k.driver + "/" + k.pool + "/" + cc.CounterSet
		groups[key] = append(groups[key], cc.CompatibilityGroups)
	}
}

// compatible reports whether devices with these compatibility groups may draw on one counter set together: all
// declare no groups, or all declare groups and share at least one.
func compatible(members [][]string) bool {
	empty, grouped := 0, 0
	common := map[string]int{}
	for _, g := range members {
		if len(g) == 0 {
			empty++
			continue
		}
		grouped++
		for _, name := range g {
			common[name]++
		}
	}
	if grouped == 0 {
		return true
	}
	if empty > 0 {
		return false
	}
	for _, n := range common {
		if n == grouped {
			return true
		}
	}
	return false
}
