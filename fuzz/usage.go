package fuzz

import (
	"fmt"
	"slices"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
)

// CheckUsage counts, over every allocated claim of a cluster, each device's users and returns what is
// overdrawn, one line each (none when the cluster's allocated state is sound): a device held exclusively by
// more than one result, or exclusively and shared at once; a share of a device that does not allow multiple
// allocations; shares whose consumed capacity adds up to more than the device has; and shared counters of a
// pool drawn beyond their counter set by its allocated devices (each device counted once, however many
// shares it has). Results count as kube-scheduler gathers its allocated state: adminAccess results hold
// nothing, a result with a share ID holds a share while DRAConsumableCapacity is on, anything else holds its
// device exclusively. Devices no longer published are not counted (their capacity is unknown).
//
// It shares no code with the allocator or the verifier: property tests of sequences of operations (place,
// assume, remove, fork, commit) call it after every step on the whole cluster.
func CheckUsage(slicesIn []*resourceapi.ResourceSlice, claims []*resourceapi.ResourceClaim, f verify.Features) []string {
	type pool struct{ driver, name string }
	newest := map[pool]int64{}
	for _, s := range slicesIn {
		p := pool{s.Spec.Driver, s.Spec.Pool.Name}
		if g, ok := newest[p]; !ok || s.Spec.Pool.Generation > g {
			newest[p] = s.Spec.Pool.Generation
		}
	}
	devices := map[verify.DeviceID]*resourceapi.Device{}
	sets := map[pool]map[string]map[string]resource.Quantity{}
	for _, s := range slicesIn {
		p := pool{s.Spec.Driver, s.Spec.Pool.Name}
		if s.Spec.Pool.Generation != newest[p] {
			continue
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			devices[verify.DeviceID{Driver: p.driver, Pool: p.name, Device: d.Name}] = d
		}
		for _, cs := range s.Spec.SharedCounters {
			if sets[p] == nil {
				sets[p] = map[string]map[string]resource.Quantity{}
			}
			m := map[string]resource.Quantity{}
			for n, c := range cs.Counters {
				m[n] = c.Value
			}
			sets[p][cs.Name] = m
		}
	}

	exclusive := map[verify.DeviceID][]string{}
	shared := map[verify.DeviceID][]string{}
	consumed := map[verify.DeviceID]map[resourceapi.QualifiedName]resource.Quantity{}
	for _, c := range claims {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		who := c.Namespace + "/" + c.Name
		for _, r := range c.Status.Allocation.Devices.Results {
			id := verify.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			switch {
			case ptr.Deref(r.AdminAccess, false):
			case r.ShareID != nil && f.DRAConsumableCapacity:
				shared[id] = append(shared[id], who)
				sum := consumed[id]
				if sum == nil {
					sum = map[resourceapi.QualifiedName]resource.Quantity{}
					consumed[id] = sum
				}
				for n, q := range r.ConsumedCapacity {
					v := sum[n]
					v.Add(q)
					sum[n] = v
				}
			default:
				exclusive[id] = append(exclusive[id], who)
			}
		}
	}

	var out []string
	used := map[verify.DeviceID]bool{}
	for id, who := range exclusive {
		used[id] = true
		if devices[id] == nil {
			continue
		}
		if len(who) > 1 {
			out = append(out, fmt.Sprintf("device %s held exclusively by %d results (%v)", id, len(who), who))
		}
		if len(shared[id]) > 0 {
			out = append(out, fmt.Sprintf("device %s held exclusively by %v and shared by %v", id, who, shared[id]))
		}
	}
	for id, who := range shared {
		used[id] = true
		d := devices[id]
		if d == nil {
			continue
		}
		if !ptr.Deref(d.AllowMultipleAllocations, false) {
			out = append(out, fmt.Sprintf("device %s does not allow multiple allocations but is shared by %v", id, who))
		}
		for n, q := range consumed[id] {
			c, ok := d.Capacity[n]
			if !ok {
				continue
			}
			if q.Cmp(c.Value) > 0 {
				out = append(out, fmt.Sprintf("device %s: capacity %s consumed %s by shares %v, %s available", id, n, q.String(), who, c.Value.String()))
			}
		}
	}
	if f.DRAPartitionableDevices {
		drawn := map[pool]map[string]map[string]resource.Quantity{}
		for id := range used {
			d := devices[id]
			if d == nil {
				continue
			}
			p := pool{id.Driver, id.Pool}
			for _, cc := range d.ConsumesCounters {
				if drawn[p] == nil {
					drawn[p] = map[string]map[string]resource.Quantity{}
				}
				if drawn[p][cc.CounterSet] == nil {
					drawn[p][cc.CounterSet] = map[string]resource.Quantity{}
				}
				for n, c := range cc.Counters {
					v := drawn[p][cc.CounterSet][n]
					v.Add(c.Value)
					drawn[p][cc.CounterSet][n] = v
				}
			}
		}
		for p, bySet := range drawn {
			for set, counters := range bySet {
				for n, q := range counters {
					have, ok := sets[p][set][n]
					if ok && q.Cmp(have) > 0 {
						out = append(out, fmt.Sprintf("pool %s/%s: counter %s/%s drawn %s, %s in the set", p.driver, p.name, set, n, q.String(), have.String()))
					}
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
