package allocator

import (
	"errors"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/capacity"
)

// failFast looks, before searching, for a request that cannot be satisfied whatever the other requests
// get: a request that has fewer candidate devices (matching, free in the cluster, not blocked by a taint)
// than it needs, in every one of its alternatives. The search would otherwise try every combination of
// the earlier requests before finding out.
//
// Kubernetes reports some input errors only when its search reaches them (a selector or capacity
// request failing on one device, a derived attribute failing, a constraint that "all devices" break).
// To keep its answers, the check looks at requests in the order the search does and gives up as soon as
// one of them could produce such an error before the unserved request is reached.
func (a *allocation) failFast() (shortfall, bool) {
	for ci := range a.perClaim {
		cs := &a.perClaim[ci]
		for ri := range cs.slots {
			slot := &cs.slots[ri]
			for _, r := range slot.alts {
				if r.mode == resourceapi.DeviceAllocationModeAll || !a.derivedSafe(r) {
					return shortfall{}, false
				}
			}
			// After the last request nothing is checked any more: once it has enough candidates the
			// answer is "search", so counting the rest (and seeing their errors) changes nothing. The
			// search reaches the last request only once the requests before it are served, so a
			// constraint on those found unmeetable below keeps it from seeing them too (the pigeonhole
			// bound gives up on an error of its own).
			last := ci == len(a.perClaim)-1 && ri == len(cs.slots)-1
			if slot.hasSubs {
				// Any alternative may be searched: it must not hide an error either. When every
				// alternative is short, the request fails whatever the others take, as a request
				// without alternatives does. Kubernetes tries the alternatives in order and stops at
				// the first that serves (allocateOne in
				// k8s.io/dynamic-resource-allocation/structured/internal/experimental, v0.37.2): of
				// the last request, the alternatives after one with enough candidates are reached
				// only when that one fails in the search, which then reports their errors itself.
				var first shortfall
				short := true
				for i, r := range slot.alts {
					limit := 0
					if last {
						limit = r.numDevices
					}
					n, ok := a.countCandidates(r, limit)
					if !ok {
						return shortfall{}, false
					}
					if i == 0 {
						first = shortfall{cs: cs, r: r, n: n}
					}
					short = short && n < r.numDevices
					if last && !short {
						break
					}
				}
				if short {
					return first, true
				}
				continue
			}
			r := slot.alts[0]
			if r.numDevices <= 0 {
				continue
			}
			limit := 0
			if last {
				limit = r.numDevices
			}
			n, ok := a.countCandidates(r, limit)
			if !ok {
				return shortfall{}, false
			}
			if n < r.numDevices {
				return shortfall{cs: cs, r: r, n: n}, true
			}
		}
		if len(cs.constraints) > 0 {
			sf, short, ok := a.constraintShort(ci)
			if !ok {
				return shortfall{}, false
			}
			if short {
				return sf, true
			}
		}
	}
	if sf, short := a.pigeonholeShort(); short {
		return sf, true
	}
	return a.countersShort()
}

// shortfall is a request with fewer candidates (n) than it needs, or a constraint (index+1) no choice of
// candidates meets; cs is nil for none.
type shortfall struct {
	cs         *claimState
	r          *request
	n          int
	constraint int
	// need > n: requests of the call together need need devices from a set of n (see pigeonholeShort).
	need int
	// counters: requests of the call together draw more of counter name counter of call pool pool
	// than its counter sets have left (see countersShort).
	counters      bool
	pool, counter int
	// room: devices requests of the call need that draw at least least of the counter each, more than
	// fit in the counter sets that have that much left, or draw more than those sets have (see roomShort).
	room           bool
	devices, least int64
}

// countCandidates counts devices that could serve r; false when evaluating one failed. It visits every
// device the search could visit for r, in the search's order of checks, so that an error the search
// would report is seen here too; with limit > 0 it stops once limit devices are found.
func (a *allocation) countCandidates(r *request, limit int) (int, bool) {
	n := 0
	ok := a.visitCandidates(r, func(int, *deviceEntry) bool {
		n++
		return n != limit
	})
	return n, ok
}

// visitCandidates calls fn for every device that could serve r, as countCandidates counts them, with the
// device's index among the devices of the call's pools, until fn returns false; it returns false when
// evaluating a device failed.
func (a *allocation) visitCandidates(r *request, fn func(int, *deviceEntry) bool) bool {
	idx := -1
	for _, p := range a.pools {
		if p.incomplete || p.invalid {
			continue
		}
		j := -1 // index in the pool
		for _, e := range p.slices {
			for _, d := range e.devices() {
				idx++
				j++
				if !r.adminAccess && a.inClusterUse(d) {
					continue
				}
				ok, err := a.selectable(r, d)
				if err != nil {
					return false
				}
				if ok && a.f.DRAConsumableCapacity {
					_, err := a.consumed(r, d)
					if err != nil && !errors.Is(err, capacity.ErrUnsuitable) {
						return false
					}
					ok = err == nil
				}
				if ok && a.f.DRADeviceTaints && blocked(d.taints, r.tolerations) {
					ok = false
				}
				if ok && d.counters && !a.countersAdmitAt(p, j, d) {
					ok = false
				}
				if ok && !a.nodeOpsAllowed(d) {
					ok = false // allocateDevice refuses it on this node
				}
				if ok && !fn(idx, d) {
					return true
				}
			}
		}
	}
	return true
}

// countersAdmitAt: the shared counters of the j-th device of p's node slices fit what the cluster and
// the call left of its pool's counter sets. Counters only shrink during a call, so a device they do not
// admit now is never taken (allocateDevice refuses it); counting it as a candidate would let a request
// that cannot be served search every combination of the others first. While the call has taken nothing
// from the pool's counters the answer is the prepared one of the allocated state.
func (a *allocation) countersAdmitAt(p *pool, j int, d *deviceEntry) bool {
	if !a.f.DRAPartitionableDevices {
		return false // allocateDevice refuses devices with counters without the gate
	}
	if a.f.DRAConsumableCapacity && d.multi && a.sharesInUse(d.id) {
		return true // its first share consumed the counters already
	}
	for _, t := range a.tallies {
		if t.p == p {
			return t.fits(d)
		}
	}
	return a.baseCounters(p).admits[j]
}

// tooFewReason is `claim <namespace>/<name>, request "<name>": needs N devices, M match and are free`
// (naming the request as Kubernetes does, "request/subrequest" for a subrequest), built in the call's
// buffer so that the string is the only allocation.
func (a *allocation) tooFewReason(sf shortfall) string {
	if sf.constraint > 0 {
		return a.constraintReason(sf)
	}
	if sf.need > 0 {
		return a.pigeonholeReason(sf)
	}
	if sf.counters {
		return a.countersReason(sf)
	}
	cs, r, n := sf.cs, sf.r, sf.n
	b := a.textBuf[:0]
	b = append(b, "claim "...)
	b = append(b, cs.claim.Namespace...)
	b = append(b, '/')
	b = append(b, cs.claim.Name...)
	b = append(b, ", request "...)
	if r.parent != "" {
		b = strconv.AppendQuote(b, r.parent+"/"+r.name)
	} else {
		b = strconv.AppendQuote(b, r.name)
	}
	b = append(b, ": needs "...)
	b = strconv.AppendInt(b, int64(r.numDevices), 10)
	if r.numDevices == 1 {
		b = append(b, " device, "...)
	} else {
		b = append(b, " devices, "...)
	}
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		b = append(b, " matches and is free"...)
	} else {
		b = append(b, " match and are free"...)
	}
	a.textBuf = b
	return string(b)
}

// derivedSafe: the derived attributes of r that the constraints of its claim compare evaluate without
// error on every device the search could add for r (they are evaluated only there, when a constraint
// looks at a device), so the search cannot stop with such an error; the values are kept for the call.
func (a *allocation) derivedSafe(r *request) bool {
	if len(r.derived) == 0 {
		return true
	}
	for _, c := range a.perClaim[r.claimIdx].constraints {
		name := c.attribute()
		if _, ok := r.derived[name]; !ok || !c.appliesTo(r) {
			continue
		}
		failed := false
		ok := a.visitCandidates(r, func(_ int, d *deviceEntry) bool {
			_, _, err := a.attributeOf(r, d, name)
			failed = err != nil
			return !failed
		})
		if !ok || failed {
			return false
		}
	}
	return true
}
