package allocator

import (
	resourceapi "k8s.io/api/resource/v1"
)

// A matchAttribute constraint fixes its value with the first device it takes: every further device must
// share it. When fewer devices with that value could ever serve the request than it asks for, no choice
// after the first device can complete it, yet the depth-first search (upstream's too) tries every
// combination of the devices that do share it before it moves on. On a node whose first NUMA node is
// short of k free GPUs that is every subset of them, each failing only when a device of the next NUMA
// node meets the constraint.
//
// matchAttribute.enough counts, once per call, the devices of the node that could serve the request under each
// value of the attribute (selectable, not in use in the cluster, allowed on the node, not tainted
// against the request), and the constraint refuses a first device whose value has fewer than the
// request's count. The count is an upper bound of what the search can take (devices that other claims of
// the call take, shared counters and capacity only lower it), so a refused device is one the search
// would only have tried and given back: answers, and the devices FirstFit picks, are unchanged.
//
// The bound is kept to the shape it is exact for: one exact-count request under the constraint (no
// firstAvailable, no admin access), scalar attributes (the list-type gate off), the attribute a device's
// own (not derived), no multi-allocatable device among the candidates. It is not used in the greedy
// descent, which stops at the first disagreement anyway, so calls the descent decides pay nothing.

// scalarKey is the key (bounds.go's valueKey) of a scalar attribute; false for none or a list value, which never equals a
// scalar one (see sameScalar).
func scalarKey(attr *resourceapi.DeviceAttribute) (valueKey, bool) {
	switch {
	case attr == nil:
		return valueKey{}, false
	case attr.IntValue != nil:
		return valueKey{kind: 'i', i: *attr.IntValue}, true
	case attr.BoolValue != nil:
		return valueKey{kind: 'b', b: *attr.BoolValue}, true
	case attr.StringValue != nil:
		return valueKey{kind: 's', s: *attr.StringValue}, true
	case attr.VersionValue != nil:
		return valueKey{kind: 'v', s: *attr.VersionValue}, true
	}
	return valueKey{}, false
}

// The states of matchAttribute.count for one call.
const (
	countUnknown  byte = iota // not computed yet
	countOff                  // the bound does not apply to this call
	countComputed             // counts holds the candidates per value
)

// enough reports whether the request r can still find its devices when d, whose attribute is attr, is
// the constraint's first device; true whenever the bound does not apply.
func (m *matchAttribute) enough(r *request, d *deviceEntry, attr *resourceapi.DeviceAttribute) (bool, error) {
	a := m.a
	if a.greedy || r.numDevices < 2 || m.count == countOff {
		return true, nil
	}
	if m.count == countUnknown {
		if err := m.countValues(r); err != nil {
			return false, err
		}
		if m.count == countOff {
			return true, nil
		}
	}
	if m.countReq != r {
		return true, nil
	}
	key, ok := scalarKey(attr)
	if !ok {
		return true, nil
	}
	for _, c := range m.counts {
		if c.k == key {
			return c.n >= r.numDevices, nil
		}
	}
	return false, nil
}

// valueCount is one value of the attribute with its candidates.
type valueCount struct {
	k valueKey
	n int
}

// maxCountedValues bounds the values countValues keeps, which are searched linearly: a node has a few
// NUMA nodes or PCIe roots; past that the bound is not worth its cost and is turned off.
const maxCountedValues = 64

// countValues fills counts for request r, or sets countOff when the bound does not apply. An error is
// only the call's context ending; a selector that fails on a device turns the bound off instead, so that
// the search meets (or does not meet) that error as it would without the bound.
func (m *matchAttribute) countValues(r *request) error {
	a := m.a
	m.count = countOff
	if a.f.DRAListTypeAttributes || r.mode != resourceapi.DeviceAllocationModeExactCount || r.adminAccess || r.sub {
		return nil
	}
	if _, derived := r.derived[m.name]; derived {
		return nil
	}
	// r must be the constraint's only request: the claim's other requests share the value too.
	cs := &a.perClaim[r.claimIdx]
	for si := range cs.slots {
		if si == r.reqIdx {
			continue
		}
		for _, alt := range cs.slots[si].alts {
			if m.appliesTo(alt) {
				return nil
			}
		}
	}
	m.counts = m.counts[:0]
	for _, p := range a.pools {
		if p.incomplete || p.invalid {
			continue
		}
		for _, e := range p.slices {
			for _, d := range e.devices() {
				if a.f.DRAConsumableCapacity && d.multi {
					return nil
				}
				if a.inClusterUse(d) || !a.nodeOpsAllowed(d) || !a.f.DRAPartitionableDevices && d.counters {
					continue
				}
				ok, err := a.selectable(r, d)
				if err != nil {
					if a.ctx.Err() != nil {
						return aborted(a.ctx)
					}
					return nil
				}
				if !ok || a.f.DRADeviceTaints && blocked(d.taints, r.tolerations) {
					continue
				}
				attr, err := m.attr(r, d, m.name)
				if err != nil {
					return nil
				}
				if key, ok := scalarKey(attr); ok && !m.countValue(key) {
					return nil
				}
			}
		}
	}
	m.count, m.countReq = countComputed, r
	return nil
}

// countValue adds one candidate with the value; false when there are too many values to keep.
func (m *matchAttribute) countValue(key valueKey) bool {
	for i := range m.counts {
		if m.counts[i].k == key {
			m.counts[i].n++
			return true
		}
	}
	if len(m.counts) == maxCountedValues {
		return false
	}
	m.counts = append(m.counts, valueCount{k: key, n: 1})
	return true
}
