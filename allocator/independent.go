package allocator

import (
	"errors"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/capacity"
)

// errDoomed ends a search that cannot succeed: a group of requests failed in a way that no choice made
// before them can change (see independent).
var errDoomed = errors.New("the remaining requests cannot be satisfied whatever the earlier ones take")

// independent reports whether the requests from slot (claim, req) on are independent of every request
// before them, so that when they fail after one choice of the earlier requests they fail after every
// other choice too, and the search can stop instead of trying the earlier requests' other combinations
// (which is exponential in their size). It holds when:
//
//   - no device could serve both an earlier and a later request (ignoring what is in use: a superset);
//   - no earlier and later device draw on the shared counters of the same pool;
//   - no constraint of the claim the boundary falls in names requests on both sides;
//   - the earlier requests of that claim take a fixed number of devices (no "all", and alternatives only
//     when the claim's largest choice of every request fits the limit of results per claim), so the later
//     ones meet the same limit.
//
// So that answers stay those of the exhaustive search, which would go on to try the earlier requests'
// other devices and could meet an input error there, it also requires that the earlier requests cannot
// produce one: no "all" mode, no derived attributes, every selector and capacity request evaluates
// without error on every device. Otherwise, and for the first slot (nothing before it), it is false.
// The answer is computed once per slot and call, and only once the search failed at that slot.
func (a *allocation) independent(claim, req int) bool {
	k := a.slotIndex(claim, req)
	// Under a quota the requests before the slot draw on the owner's quota, which the slot may need.
	if k == 0 || a.quotaOn() {
		return false
	}
	if len(a.indep) == 0 {
		a.indep = grow(a.indep, a.slotCount())
		clear(a.indep)
	}
	switch a.indep[k] {
	case 1:
		return true
	case 2:
		return false
	}
	ok := a.computeIndependent(claim, req)
	a.indep[k] = 2
	if ok {
		a.indep[k] = 1
	}
	return ok
}

func (a *allocation) slotIndex(claim, req int) int {
	k := 0
	for ci := 0; ci < claim; ci++ {
		k += len(a.perClaim[ci].slots)
	}
	return k + req
}

func (a *allocation) slotCount() int {
	return a.slotIndex(len(a.perClaim), 0)
}

// sideOf is what one side of the boundary can take.
type sideOf struct {
	devices  map[*deviceEntry]bool
	counters map[*pool]bool // pools whose shared counters a candidate draws on
}

func (a *allocation) computeIndependent(claim, req int) bool {
	cs := &a.perClaim[claim]
	// Alternatives before the boundary change how many results the later requests have room for, unless
	// the claim's largest choice stays within the limit.
	most := 0
	for ri := range cs.slots {
		slot := &cs.slots[ri]
		n := 0
		for _, r := range slot.alts {
			if r.mode == resourceapi.DeviceAllocationModeAll {
				if ri < req {
					return false
				}
				n = resourceapi.AllocationResultsMaxSize + 1
			}
			n = max(n, r.numDevices)
		}
		most += n
	}
	for ri := 0; ri < req; ri++ {
		if cs.slots[ri].hasSubs && most > resourceapi.AllocationResultsMaxSize {
			return false
		}
	}
	for _, c := range cs.constraints {
		before, after := false, false
		for ri := range cs.slots {
			for _, r := range cs.slots[ri].alts {
				if c.appliesTo(r) {
					before = before || ri < req
					after = after || ri >= req
				}
			}
		}
		if before && after {
			return false
		}
	}

	earlier, later := a.side(0), a.side(1)
	for ci := range a.perClaim {
		for ri := range a.perClaim[ci].slots {
			isEarlier := ci < claim || (ci == claim && ri < req)
			side := later
			if isEarlier {
				side = earlier
			}
			for _, r := range a.perClaim[ci].slots[ri].alts {
				if isEarlier && (r.mode == resourceapi.DeviceAllocationModeAll || !a.derivedSafe(r)) {
					return false
				}
				if !a.collectCandidates(r, side) {
					return false
				}
			}
		}
	}
	for d := range later.devices {
		if earlier.devices[d] {
			return false
		}
	}
	for p := range later.counters {
		if earlier.counters[p] {
			return false
		}
	}
	return true
}

// side returns the call's i-th side, empty; its maps are reused across calls.
func (a *allocation) side(i int) *sideOf {
	s := &a.sides[i]
	if s.devices == nil {
		s.devices, s.counters = map[*deviceEntry]bool{}, map[*pool]bool{}
	}
	clear(s.devices)
	clear(s.counters)
	return s
}

// collectCandidates adds the devices r could take to side; false when evaluating a selector or capacity
// request failed.
func (a *allocation) collectCandidates(r *request, side *sideOf) bool {
	for _, p := range a.pools {
		if p.incomplete || p.invalid {
			continue
		}
		for _, e := range p.slices {
			for _, d := range e.devices() {
				ok, err := a.selectable(r, d)
				if err != nil {
					return false
				}
				if !ok {
					continue
				}
				if a.f.DRAConsumableCapacity {
					if _, err := a.consumed(r, d); err != nil && !errors.Is(err, capacity.ErrUnsuitable) {
						return false
					}
				}
				side.devices[d] = true
				if d.counters {
					side.counters[p] = true
				}
			}
		}
	}
	return true
}
