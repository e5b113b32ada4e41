package allocator

import (
	"errors"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/capacity"
)

// failFast looks, before searching, for a request that cannot be satisfied whatever the other requests
// get: a request without alternatives that has fewer candidate devices (matching, free in the cluster,
// not blocked by a taint) than it needs. The search would otherwise try every combination of the earlier
// requests before finding out.
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
				if r.mode == resourceapi.DeviceAllocationModeAll || len(r.derived) > 0 {
					return shortfall{}, false
				}
			}
			if slot.hasSubs {
				// Any alternative may be searched: it must not hide an error either.
				for _, r := range slot.alts {
					if _, ok := a.countCandidates(r, 0); !ok {
						return shortfall{}, false
					}
				}
				continue
			}
			r := slot.alts[0]
			if r.numDevices <= 0 {
				continue
			}
			// After the last request nothing is checked any more: once it has enough candidates the
			// answer is "search", so counting the rest (and seeing their errors) changes nothing.
			limit := 0
			if ci == len(a.perClaim)-1 && ri == len(cs.slots)-1 {
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
	}
	return shortfall{}, false
}

// shortfall is a request with fewer candidates (n) than it needs; cs is nil for none.
type shortfall struct {
	cs *claimState
	r  *request
	n  int
}

// countCandidates counts devices that could serve r; false when evaluating one failed. It visits every
// device the search could visit for r, in the search's order of checks, so that an error the search
// would report is seen here too; with limit > 0 it stops once limit devices are found.
func (a *allocation) countCandidates(r *request, limit int) (int, bool) {
	n := 0
	anyInUse := len(a.st.inUse) > 0
	for _, p := range a.pools {
		if p.incomplete || p.invalid {
			continue
		}
		for _, e := range p.slices {
			for _, d := range e.devices() {
				if anyInUse && !r.adminAccess && a.st.inUse[d.id] > 0 {
					continue
				}
				ok, err := a.selectable(r, d)
				if err != nil {
					return 0, false
				}
				if ok && a.f.DRAConsumableCapacity {
					_, err := a.consumed(r, d)
					if err != nil && !errors.Is(err, capacity.ErrUnsuitable) {
						return 0, false
					}
					ok = err == nil
				}
				if ok && a.f.DRADeviceTaints && blocked(d.taints, r.tolerations) {
					ok = false
				}
				if ok && d.counters && !a.countersAdmit(p, d) {
					ok = false
				}
				if ok {
					n++
					if n == limit {
						return n, true
					}
				}
			}
		}
	}
	return n, true
}

// countersAdmit: the device's shared counters fit what the cluster left of its pool's counter sets.
// Counters only shrink during a call, so a device they do not admit now is never taken (allocateDevice
// refuses it); counting it as a candidate would let a request that cannot be served search every
// combination of the others first.
func (a *allocation) countersAdmit(p *pool, d *deviceEntry) bool {
	if !a.f.DRAPartitionableDevices {
		return false // allocateDevice refuses devices with counters without the gate
	}
	if a.f.DRAConsumableCapacity && d.multi && a.sharesInUse(d.id) {
		return true // its first share consumed the counters already
	}
	return a.poolCounters(p).Fits(d.api.ConsumesCounters)
}

// tooFewReason is `claim <namespace>/<name>, request "<name>": needs N devices, M match and are free`
// (naming the request as Kubernetes does, "request/subrequest" for a subrequest), built in the call's
// buffer so that the string is the only allocation.
func (a *allocation) tooFewReason(sf shortfall) string {
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
