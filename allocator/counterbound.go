package allocator

import (
	"math"
	"strconv"
)

// counterBound is the scratch state of countersShort, reused across calls.
type counterBound struct {
	offset []int   // per call pool: where its counter names start in need and free; -1 for none
	end    []int   // per call pool: the index visitCandidates gives the first device after its own
	need   []int64 // per (pool, counter name): what the requests counted so far draw at least
	free   []int64 // per (pool, counter name): what the allocated state leaves of it in all sets
	minv   []int64 // one request alternative's least draw per counter name of its pool
	slot   []int64 // one request slot's least draw (the least over its alternatives)
	dev    []int64 // one candidate's draw per counter name
	// counted are the slots counted so far, and least their devices' least draw per counter name of
	// their pool (counted[i].at on), for the threshold bound (see roomShort).
	counted []countedSlot
	least   []int64
}

// countedSlot is one request slot the bound counts: its claim, pool, the fewest devices it takes, and
// where the least draw of one of them lies in counterBound.least.
type countedSlot struct {
	cs   *claimState
	pool int
	n    int64
	at   int
}

// countersShort counts across requests what they draw on shared counters: every device a request may
// take from a pool draws at least the least that any of its candidates draws of each counter, so n
// devices draw n times that, and what all requests draw of a counter name (summed over the pool's
// counter sets: "multiprocessors" of every GPU) cannot exceed what the pool's sets have left of it.
// Whole GPUs and their MIG partitions draw on the same sets, a whole GPU on all of one GPU's, so
// requests for both that need more than the node has are refused here, where the search would try
// every way of placing the partitions on the GPUs the whole ones leave before failing. It is a
// necessary condition only: passing it says nothing, and a call it refuses fits under no choice of
// devices, wherever the requests are in the search order (allocateDevice admits a device only while no
// counter of its pool is overdrawn, and the search takes each request's devices distinct).
//
// A request counts only when all its candidates lie in one pool whose counters are dense; a candidate
// that takes shares (it draws once for every share) or a request with admin access draws nothing here.
// As pigeonholeShort, it runs after failFast found every request servable on its own, and a candidate
// whose evaluation fails leaves the decision to the search.
func (a *allocation) countersShort() (shortfall, bool) {
	if !a.f.DRAPartitionableDevices {
		return shortfall{}, false
	}
	cb := &a.ctrBound
	cb.offset, cb.end = cb.offset[:0], cb.end[:0]
	total, devices := 0, 0
	for _, p := range a.pools {
		off := -1
		if !p.incomplete && !p.invalid {
			for _, e := range p.slices {
				devices += len(e.devices())
			}
			if p.layout != nil && p.layout.dense && p.layout.nnames > 0 {
				off = total
				total += p.layout.nnames
			}
		}
		cb.offset = append(cb.offset, off)
		cb.end = append(cb.end, devices)
	}
	if total == 0 {
		return shortfall{}, false
	}
	cb.need = append(cb.need[:0], make([]int64, total)...)
	cb.counted, cb.least = cb.counted[:0], cb.least[:0]
	cb.free = cb.free[:0]
	for pi, p := range a.pools {
		if cb.offset[pi] < 0 {
			continue
		}
		l := p.layout
		cb.free = append(cb.free, make([]int64, l.nnames)...)
		free := cb.free[cb.offset[pi]:]
		for i, r := range a.baseCounters(p).state.remaining {
			if r > 0 {
				free[l.nameOf[i]] = satAdd(free[l.nameOf[i]], r)
			}
		}
	}
	for ci := range a.perClaim {
		cs := &a.perClaim[ci]
		for ri := range cs.slots {
			slot := &cs.slots[ri]
			pool := -1
			at := len(cb.least)
			fewest := int64(math.MaxInt64)
			for ai, r := range slot.alts {
				p, ok := a.leastDraw(r)
				if !ok {
					return shortfall{}, false
				}
				if p < 0 || ai > 0 && p != pool {
					pool = -1
					break
				}
				n := int64(max(r.numDevices, 0))
				fewest = min(fewest, n)
				if ai == 0 {
					pool = p
					cb.slot = append(cb.slot[:0], cb.minv...)
					for g := range cb.slot {
						cb.slot[g] = satMul(cb.slot[g], n)
					}
					cb.least = append(cb.least, cb.minv...)
					continue
				}
				for g := range cb.slot {
					cb.slot[g] = min(cb.slot[g], satMul(cb.minv[g], n))
					cb.least[at+g] = min(cb.least[at+g], cb.minv[g])
				}
			}
			if pool < 0 {
				cb.least = cb.least[:at]
				continue
			}
			cb.counted = append(cb.counted, countedSlot{cs: cs, pool: pool, n: fewest, at: at})
			off := cb.offset[pool]
			for g, v := range cb.slot {
				cb.need[off+g] = satAdd(cb.need[off+g], v)
				if cb.need[off+g] > cb.free[off+g] {
					return shortfall{cs: cs, counters: true, pool: pool, counter: g}, true
				}
			}
		}
	}
	return a.roomShort()
}

// roomShort is the bound of countersShort set by set: a device that draws at least d of a counter
// name fits only in a counter set with at least d of it left (what a set has left only shrinks during
// a call), and a set with f left holds at most f/d such devices. So for every counter name and every
// least draw d of a counted request, the requests that draw at least d of it on every device need no
// more devices than the sets hold (the sum of f/d) and draw no more than the sets with at least d left
// have. Where summing over all sets finds room, this finds what whole GPUs and MIG partitions leave
// apart: a whole GPU (or a 7g partition) fits only on an untouched GPU, two 3g partitions of 88 GB
// never on one GPU of 141 GB.
func (a *allocation) roomShort() (shortfall, bool) {
	cb := &a.ctrBound
	for pi, p := range a.pools {
		if cb.offset[pi] < 0 {
			continue
		}
		l := p.layout
		remaining := a.baseCounters(p).state.remaining
		for g := range l.nnames {
			for _, t := range cb.counted {
				d := cb.least[t.at+g]
				if t.pool != pi || d <= 0 {
					continue
				}
				var devices, draw int64
				var last *claimState
				for _, u := range cb.counted {
					if u.pool == pi && cb.least[u.at+g] >= d {
						devices = satAdd(devices, u.n)
						draw = satAdd(draw, satMul(cb.least[u.at+g], u.n))
						last = u.cs
					}
				}
				var room, left int64
				for i, r := range remaining {
					if l.nameOf[i] == int32(g) && r >= d {
						room = satAdd(room, r/d)
						left = satAdd(left, r)
					}
				}
				if devices > room || draw > left {
					if devices <= room {
						room = left / d // the devices' draw exceeds what is left: fewer of them fit
					}
					return shortfall{cs: last, counters: true, room: true, pool: pi, counter: g, devices: devices, least: d, n: int(min(room, math.MaxInt32))}, true
				}
			}
		}
	}
	return shortfall{}, false
}

// leastDraw computes in a.ctrBound.minv the least that a candidate of r draws of each counter name of
// the pool all of r's candidates lie in, and returns that pool's index; -1 when the candidates lie in
// several pools or in one the bound does not count, when r has none, or when r has admin access. ok is
// false when evaluating a candidate failed.
func (a *allocation) leastDraw(r *request) (pool int, ok bool) {
	if r.adminAccess {
		return -1, true
	}
	cb := &a.ctrBound
	pool, next := -1, 0
	mixed := false
	ok = a.visitCandidates(r, func(i int, d *deviceEntry) bool {
		for next < len(cb.end) && i >= cb.end[next] {
			next++
		}
		if pool < 0 {
			pool = next
			if pool >= len(a.pools) || cb.offset[pool] < 0 {
				mixed = true
				return false
			}
			cb.minv = append(cb.minv[:0], make([]int64, a.pools[pool].layout.nnames)...)
			for g := range cb.minv {
				cb.minv[g] = math.MaxInt64
			}
		} else if next != pool {
			mixed = true
			return false
		}
		l := a.pools[pool].layout
		var dc *devCounters
		if !(a.f.DRAConsumableCapacity && d.multi) && d.counters {
			dc = l.dev(d)
		}
		// The device's draw per name (0 for names it does not draw on), folded into minv.
		if dc == nil || len(dc.amounts) == 0 {
			clear(cb.minv)
			return true
		}
		cb.dev = append(cb.dev[:0], make([]int64, len(cb.minv))...)
		for _, am := range dc.amounts {
			g := l.nameOf[am.idx]
			if am.v < 0 {
				cb.dev[g] = math.MinInt64 // a negative draw: the name counts for nothing
				continue
			}
			if cb.dev[g] >= 0 {
				cb.dev[g] = satAdd(cb.dev[g], am.v)
			}
		}
		for g, v := range cb.dev {
			cb.minv[g] = min(cb.minv[g], max(v, 0))
		}
		return true
	})
	if !ok {
		return -1, false
	}
	if mixed || pool < 0 {
		return -1, true
	}
	return pool, true
}

func satAdd(x, y int64) int64 {
	if x > math.MaxInt64-y {
		return math.MaxInt64
	}
	return x + y
}

func satMul(x, n int64) int64 {
	if n != 0 && x > math.MaxInt64/n {
		return math.MaxInt64
	}
	return x * n
}

// countersReason is "ResourceClaim <ns>/<name>: together with the requests before it, draws at least N
// of counter C of pool P's counter sets, M are left", built in the call's buffer.
func (a *allocation) countersReason(sf shortfall) string {
	cb := &a.ctrBound
	p := a.pools[sf.pool]
	off := cb.offset[sf.pool] + sf.counter
	b := a.textBuf[:0]
	b = append(b, "ResourceClaim "...)
	b = append(b, sf.cs.claim.Namespace...)
	b = append(b, '/')
	b = append(b, sf.cs.claim.Name...)
	if sf.room {
		// "...: together with the requests before it, needs N devices that draw at least D of counter C
		// each, the counter sets of pool P hold M"
		b = append(b, ": together with the requests before it, needs "...)
		b = strconv.AppendInt(b, sf.devices, 10)
		b = append(b, " devices that draw at least "...)
		b = strconv.AppendInt(b, sf.least, 10)
		b = append(b, " of counter "...)
		b = append(b, p.layout.names[sf.counter]...)
		b = append(b, " each, the counter sets of pool "...)
		b = append(b, p.id.Driver...)
		b = append(b, '/')
		b = append(b, p.id.Pool...)
		b = append(b, " have room for "...)
		b = strconv.AppendInt(b, int64(sf.n), 10)
		b = append(b, " of them"...)
		a.textBuf = b
		return string(b)
	}
	b = append(b, ": together with the requests before it, draws at least "...)
	b = strconv.AppendInt(b, cb.need[off], 10)
	b = append(b, " of counter "...)
	b = append(b, p.layout.names[sf.counter]...)
	b = append(b, " of the counter sets of pool "...)
	b = append(b, p.id.Driver...)
	b = append(b, '/')
	b = append(b, p.id.Pool...)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, cb.free[off], 10)
	b = append(b, " left"...)
	a.textBuf = b
	return string(b)
}
