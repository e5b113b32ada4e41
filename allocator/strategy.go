package allocator

import (
	"math"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
)

// ranked is one candidate device of a request under a strategy other than FirstFit, with the keys the
// strategy sorts by.
type ranked struct {
	at location
	// whole: the device consumes every counter of a counter set in full (a whole GPU next to its
	// partitions).
	whole bool
	// fill is how much of what the device draws on is already in use, from 0 (untouched) to 1: the
	// counter sets it consumes from, or the capacity of a device that already serves shares.
	fill float64
	// size is the share of its counter sets the device consumes, from 0 to 1.
	size float64
	// blocks counts the devices of the same pool that fit now and would no longer fit once this device
	// takes its counters: the placements this one rules out. Fewer keeps larger free blocks together.
	blocks int
}

// rankCandidates lists the devices the first-fit scan of allocateOne would visit for request r, in the
// order of the snapshot's strategy. Devices that no selector admits are left out; every other device is
// kept, so the search that walks this list (taking the devices of one request in list order, as the
// first-fit scan takes them in upstream order) explores the same combinations and finds an allocation
// exactly when FirstFit does. Ties keep upstream order.
//
// Selectors are evaluated for every device before the search takes any, so a selector that fails at run
// time on some device fails the allocation even where FirstFit would have found a fit before reaching it.
func (a *allocation) rankCandidates(r *request) ([]location, error) {
	list, err := a.rankKeys(r)
	if err != nil {
		return nil, err
	}
	// The comparisons are called directly, not through a func value, so that x and y stay on the stack.
	switch a.strategy {
	case Spread:
		slices.SortStableFunc(list, func(x, y ranked) int { return compareBy(spreadLess(&x, &y), spreadLess(&y, &x)) })
	case BestFit:
		slices.SortStableFunc(list, func(x, y ranked) int { return compareBy(bestFitLess(&x, &y), bestFitLess(&y, &x)) })
	}
	if a.prefersTopology() {
		a.preferTopology(r, list)
	}
	a.preferDevices(list)
	order := make([]location, len(list))
	for i := range list {
		order[i] = list[i].at
	}
	a.rankBuf = list[:0]
	return order, nil
}

// rankKeys lists the candidates of request r with their ranking keys, in upstream order, in a.rankBuf
// (scratch: only rankCandidates' order outlives the call).
func (a *allocation) rankKeys(r *request) ([]ranked, error) {
	list := a.rankBuf[:0]
	for pi, p := range a.pools {
		if p.incomplete || p.invalid {
			continue
		}
		var sets *poolSets
		for si, e := range p.slices {
			for di, d := range e.devices() {
				ok, err := a.selectable(r, d)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				c := ranked{at: location{pool: pi, slice: si, device: di}}
				if len(d.api.ConsumesCounters) > 0 && len(p.counterSets) > 0 {
					if sets == nil {
						sets = newPoolSets(p)
					}
					a.rankCounters(&c, p, d, sets)
				} else if a.f.DRAConsumableCapacity && a.sharesInUse(d.id) {
					c.fill = a.capacityFill(d)
				}
				list = append(list, c)
			}
		}
	}
	a.rankBuf = list[:0]
	return list, nil
}

// compareBy turns the two answers of a less function into a comparison.
func compareBy(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// bestFitLess packs: devices whose counter sets are already partly used first (the fullest first), whole
// counter sets last, then the smallest device, then the one that rules out the fewest other placements.
func bestFitLess(x, y *ranked) bool {
	if x.whole != y.whole {
		return !x.whole
	}
	if x.fill != y.fill {
		return x.fill > y.fill
	}
	if x.size != y.size {
		return x.size < y.size
	}
	return x.blocks < y.blocks
}

// spreadLess spreads: the least used counter sets and devices first.
func spreadLess(x, y *ranked) bool {
	return x.fill < y.fill
}

// poolSets is what ranking needs of a pool's counter sets: the devices on this node that consume from each
// set, and each set's counter names in sorted order, so that sums over counters come out the same on every
// call.
type poolSets struct {
	users map[string][]*deviceEntry
	names [][]string // by index in pool.counterSets
	// fitting caches, per counter set, the users that fit the counters as they stand before the request
	// takes a device; ranking happens before that, so the counters do not change meanwhile.
	fitting map[string][]*deviceEntry
	// buf is rankCounters' scratch list of the devices a candidate could rule out.
	buf []*deviceEntry
	// totals are the capacities of each set's counters, in the order of names; usedSum, positive and
	// usedDone cache per set what used computes (the same for every device drawing on the set).
	totals   [][]float64
	usedSum  []float64
	positive []int
	usedDone []bool
}

// used is the sum over a set's counters with a capacity above zero of the share consumed, and the number
// of those counters, as the counters stand when ranking (computed once per set and call).
func (ps *poolSets) used(ctr *tally, idx int, set string) (float64, int) {
	if ps.usedDone[idx] {
		return ps.usedSum[idx], ps.positive[idx]
	}
	var sum float64
	n := 0
	for k, name := range ps.names[idx] {
		t := ps.totals[idx][k]
		if t <= 0 {
			continue
		}
		n++
		if rem, ok := ctr.remaining(set, name); ok {
			sum += 1 - rem/t
		}
	}
	ps.usedSum[idx], ps.positive[idx], ps.usedDone[idx] = sum, n, true
	return sum, n
}

// open returns the devices consuming from a counter set that fit now.
func (ps *poolSets) open(ctr *tally, set string) []*deviceEntry {
	if list, ok := ps.fitting[set]; ok {
		return list
	}
	list := make([]*deviceEntry, 0, len(ps.users[set]))
	for _, o := range ps.users[set] {
		if ctr.fits(o) {
			list = append(list, o)
		}
	}
	if ps.fitting == nil {
		ps.fitting = map[string][]*deviceEntry{}
	}
	ps.fitting[set] = list
	return list
}

// seenBefore: the device consumes from one of the counter sets already looked at, so it was counted there.
func seenBefore(done []resourceapi.DeviceCounterConsumption, o *deviceEntry) bool {
	for _, dc := range done {
		for _, oc := range o.api.ConsumesCounters {
			if oc.CounterSet == dc.CounterSet {
				return true
			}
		}
	}
	return false
}

func newPoolSets(p *pool) *poolSets {
	ps := &poolSets{users: map[string][]*deviceEntry{}, names: make([][]string, len(p.counterSets))}
	// Counted first, so that each set's list is allocated once: a node of eight GPUs in dynamic MIG has
	// some 30 devices per set.
	counts := map[string]int{}
	for _, e := range p.slices {
		for _, d := range e.devices() {
			for _, dc := range d.api.ConsumesCounters {
				counts[dc.CounterSet]++
			}
		}
	}
	for _, e := range p.slices {
		for _, d := range e.devices() {
			for _, dc := range d.api.ConsumesCounters {
				users := ps.users[dc.CounterSet]
				if users == nil {
					users = make([]*deviceEntry, 0, counts[dc.CounterSet])
				}
				ps.users[dc.CounterSet] = append(users, d)
			}
		}
	}
	k := len(p.counterSets)
	ps.totals, ps.usedSum, ps.positive, ps.usedDone = make([][]float64, k), make([]float64, k), make([]int, k), make([]bool, k)
	for i, set := range p.counterSets {
		names := make([]string, 0, len(set.Counters))
		for name := range set.Counters {
			names = append(names, name)
		}
		slices.Sort(names)
		ps.names[i] = names
		totals := make([]float64, len(names))
		for j, name := range names {
			total := set.Counters[name]
			totals[j] = total.Value.AsApproximateFloat64()
		}
		ps.totals[i] = totals
	}
	return ps
}

// roundKey rounds a ranking key so that float sums equal in exact arithmetic compare equal, and ties fall
// to upstream order.
func roundKey(x float64) float64 { return math.Round(x*1e9) / 1e9 }

// rankCounters fills in the keys of a device that consumes shared counters.
func (a *allocation) rankCounters(c *ranked, p *pool, d *deviceEntry, sets *poolSets) {
	ctr := a.tally(p)
	var fill, size float64
	counted := 0
	for _, dc := range d.api.ConsumesCounters {
		idx, ok := p.counterIdx[dc.CounterSet]
		if !ok {
			continue
		}
		names, totals := sets.names[idx], sets.totals[idx]
		setUsed, n := sets.used(ctr, idx, dc.CounterSet)
		var setSize float64
		full := len(names) > 0
		for k, name := range names {
			t := totals[k]
			if t <= 0 {
				continue
			}
			want, ok := dc.Counters[name]
			if !ok {
				full = false
				continue
			}
			w := want.Value.AsApproximateFloat64()
			setSize += w / t
			if w < t {
				full = false
			}
		}
		if n == 0 {
			continue
		}
		counted++
		fill += setUsed / float64(n)
		size += setSize / float64(n)
		c.whole = c.whole || full
	}
	if counted > 0 {
		c.fill = roundKey(fill / float64(counted))
		c.size = roundKey(size / float64(counted))
	}
	// Only BestFit breaks ties by the placements a device rules out.
	if a.strategy != BestFit || !ctr.fits(d) {
		return
	}
	open := sets.buf[:0]
	for i, dc := range d.api.ConsumesCounters {
		for _, o := range sets.open(ctr, dc.CounterSet) {
			if o != d && !seenBefore(d.api.ConsumesCounters[:i], o) {
				open = append(open, o)
			}
		}
	}
	ctr.add(d)
	for _, o := range open {
		if !ctr.fits(o) {
			c.blocks++
		}
	}
	ctr.remove(d)
	sets.buf = open[:0]
}

// capacityFill is the mean share of a shared device's capacity already consumed.
func (a *allocation) capacityFill(d *deviceEntry) float64 {
	l := a.ledger(d)
	var sum float64
	n := 0
	for name, c := range d.api.Capacity {
		t := c.Value.AsApproximateFloat64()
		if t <= 0 {
			continue
		}
		used := l.Used(name)
		sum += used.AsApproximateFloat64() / t
		n++
	}
	if n == 0 {
		return 0
	}
	return roundKey(sum / float64(n))
}

// allocateRanked is the device scan of allocateOne for strategies other than FirstFit: it walks the
// request's candidates in the strategy's order, from start.rank on, with the same checks as the
// first-fit scan (tryDevice; selectors were evaluated when ranking). The order is computed when the search reaches the request's first device and is kept
// for the request's further devices, so that each combination is tried once.
func (a *allocation) allocateRanked(pos position, allocSub bool, r *request, next position, start location) (bool, error) {
	order := start.order
	if order == nil {
		var err error
		if order, err = a.rankCandidates(r); err != nil {
			return false, err
		}
	}
	// As in allocateOne: a device interchangeable with one that failed here fails too. Exploring in
	// another order does not change whether the rest can be satisfied, so the argument holds for any
	// ranking.
	failed := a.failuresAt(pos)
	for k := start.rank; k < len(order); k++ {
		at := order[k]
		p := a.pools[at.pool]
		d := p.slices[at.slice].devices()[at.device]
		if failed.cover(a, d) {
			continue
		}
		done, tried, err := a.tryDevice(pos, next, allocSub, r, candidate{dev: d, pool: p}, false, location{order: order, rank: k + 1})
		if err != nil || done {
			return done, err
		}
		if tried {
			failed.add(a, d)
		}
	}
	return false, nil
}
