package allocator

// interchangeable reports whether the search, having failed after taking x at some position, can skip y
// at that position: every choice after taking y maps onto one after taking x by swapping the two, so it
// fails too. Both must first be in the same state of use (see sameUse): the published device is only half
// of what the checks read. Then it holds for twins of one slice (equal but for the name, see
// sliceEntry.twins) and, for this call, for any two devices that no check of the call tells apart:
//
//   - every request of the call (every alternative) gets the same selector verdict for both;
//   - both have the same capacities (so the same consumption), no shared counters, no binding
//     conditions, no per-device node selection, no effective taints, the same skipNodeOperations;
//   - devices that take shares (allowMultipleAllocations) both do;
//   - every attribute a constraint of the call compares has the same value on both.
//
// The checks of a device scan, and what each reads of a device: in use (the cluster's exclusive
// allocations, the devices this call took and for which claim: sameUse), binding conditions, selectors
// and per-device node selection (selectable: verdicts, plainDevice), capacity (capacityFits: capacities,
// the shares' ledger: sameUse), skipNodeOperations, shared counters and taints (plainDevice),
// constraints (attributes), allowMultipleAllocations (sameShareState).
//
// Once a search with a Topology preference found a placement and looks for a closer one, the two must
// also lie in the same topology domains (sameTopology): the measure tells such devices apart.
//
// Calls with derived attributes or requests for all devices keep to twins, and before the last request
// for all devices nothing is skipped (see failuresAt). A device whose selectors
// cannot be evaluated is interchangeable with none (the error stays for the search to report).
func (a *allocation) interchangeable(x, y *deviceEntry) bool {
	if !a.sameUse(x, y) || a.found && !a.sameTopology(x, y) {
		return false
	}
	if twinsOf(x, y) {
		return true
	}
	if a.twinsOnly || !plainDevice(x) || !plainDevice(y) || x.skipNodeOps != y.skipNodeOps ||
		!sameCapacity(x.api.Capacity, y.api.Capacity) || !a.sameShareState(x, y) {
		return false
	}
	for ci := range a.perClaim {
		cs := &a.perClaim[ci]
		for si := range cs.slots {
			for _, r := range cs.slots[si].alts {
				vx, err := a.selectable(r, x)
				if err != nil {
					return false
				}
				vy, err := a.selectable(r, y)
				if err != nil || vx != vy {
					return false
				}
			}
		}
		for _, c := range cs.constraints {
			ax, okx := staticAttribute(x, c.attribute())
			ay, oky := staticAttribute(y, c.attribute())
			if okx != oky || okx && !sameAttribute(ax, ay) {
				return false
			}
		}
	}
	return true
}

// failures are the devices the search failed after taking at one position; a later candidate
// interchangeable with one of them is skipped there. A few are kept: most positions meet few kinds.
type failures struct {
	devs [8]*deviceEntry
	n    int
	off  bool // no device is skipped at this position (see failuresAt)
}

// failuresAt starts the record of failures of a device scan at pos. It stays empty, so that no device is
// skipped, where a request for all devices comes later in the search: that request takes its devices in
// a fixed order and stops at the first it cannot add, silently when the device is in use, with an error
// when it breaks a constraint (or fails a capacity or derived attribute check). Taking x rather than its
// twin y here decides which of the two it finds in use, so it can meet an error after one and not after
// the other; Kubernetes tries both and reports the error (allocateOne and allocateDevice in
// k8s.io/dynamic-resource-allocation/structured/internal/experimental, v0.37.2).
func (a *allocation) failuresAt(pos position) failures {
	l := a.lastAll
	return failures{off: pos.claim < l.claim || pos.claim == l.claim && pos.req < l.req}
}

// cover: d is interchangeable with a device that failed at this position.
func (f *failures) cover(a *allocation, d *deviceEntry) bool {
	for _, x := range f.devs[:f.n] {
		if a.interchangeable(x, d) {
			return true
		}
	}
	return false
}

// add records that the search failed after taking d, when some other device may be interchangeable
// with it.
func (f *failures) add(a *allocation, d *deviceEntry) {
	if !f.off && f.n < len(f.devs) && !a.taken.has(d) && (d.hasTwins() || !a.twinsOnly && plainDevice(d)) {
		f.devs[f.n] = d
		f.n++
	}
}

// plainDevice: nothing but its attributes, capacities and shares ties the device to the search's state.
func plainDevice(d *deviceEntry) bool {
	return !d.counters && !d.perDevice && len(d.taints) == 0 &&
		d.api.BindingConditions == nil && d.api.BindingFailureConditions == nil
}

// sameShareState: both devices are taken exclusively, or both take shares.
func (a *allocation) sameShareState(x, y *deviceEntry) bool {
	return (a.f.DRAConsumableCapacity && x.multi) == (a.f.DRAConsumableCapacity && y.multi)
}

// sameUse: x and y are in the same state of use, as every check of the search reads it: both allocated
// exclusively in the cluster or both not (a request with admin access may take an allocated device, one
// without may not), neither taken by this call (which claim took a device decides whether an admin
// access request of a claim may take it again), and both serving shares with the same capacity used or
// neither serving any (capacityFits checks a share against what the others use). Their capacities are
// compared by the caller.
func (a *allocation) sameUse(x, y *deviceEntry) bool {
	if a.inClusterUse(x) != a.inClusterUse(y) || a.taken.has(x) || a.taken.has(y) {
		return false
	}
	sx, sy := a.sharedNow(x.id), a.sharedNow(y.id)
	if sx != sy {
		return false
	}
	if !sx {
		return true
	}
	if len(x.api.Capacity) != len(y.api.Capacity) {
		return false
	}
	lx, ly := a.ledger(x), a.ledger(y)
	for name := range x.api.Capacity {
		ux, uy := lx.Used(name), ly.Used(name)
		if ux.Cmp(uy) != 0 {
			return false
		}
	}
	return true
}
