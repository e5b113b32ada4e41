package allocator

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/capacity"
)

// The shared counters of a pool in dense form. capacity.Counters keeps them in maps keyed by name and
// computes with resource.Quantity; a search asks them once per device it tries, so building them per call
// and doing map and decimal arithmetic per device was most of the time (and every allocation) of a call on
// a partitionable node. A counterLayout numbers the pool's counters, counter sets and (set, compatibility
// group) pairs once per pool, and compiles every device's consumesCounters into indices and int64
// amounts; a tallyState is then a few int slices, copied from the pool's prepared base at the start of a
// call and changed in place as the search takes and gives back devices.
//
// The rules are capacity.Counters' (which documents them and reproduces Kubernetes 1.37): a device fits
// when its groups are admitted on every set it draws on and no counter of the pool ends up overdrawn.
// A pool whose quantities are not all exact int64 values that pass capacity.ValidateQuantity, or whose
// amounts could overflow int64 in sum, keeps using capacity.Counters (layout.dense false).

// counterLayout is the dense numbering of one pool's shared counters and its devices' consumption. It
// depends on the pool's slices only and is immutable once built.
type counterLayout struct {
	dense bool
	// capacity is the value of every counter (last definition wins, as in capacity.NewCounters).
	capacity []int64
	nsets    int // counter sets: the defined ones and those devices name
	npairs   int // (counter set, compatibility group) pairs
	// sets numbers the counter sets by name and, within each, the counters the pool defines.
	sets map[string]*setLayout
	// bySlice holds, for each slice of the pool (node slices and others) whose devices consume
	// counters, every device's compiled consumption by index in the slice (see dev). An array per slice
	// rather than a map per device: a DGX node in dynamic MIG has over two hundred devices, and a pool's
	// first pass reads each of them.
	bySlice []sliceCounters
	// sliceIdx indexes bySlice by entry when the pool has many consuming slices; nil otherwise (a scan
	// of a few pointers is cheaper than a lookup).
	sliceIdx map[*sliceEntry]int
	// names are the distinct counter names of the pool's sets, sorted, and nameOf the index in names
	// of every defined counter's name: countersShort sums a name over the sets ("multiprocessors" of
	// every GPU of a node).
	names  []string
	nameOf []int32
	nnames int
}

// nameCounters numbers the distinct counter names of the layout (names, nameOf, nnames).
func (l *counterLayout) nameCounters() {
	l.nameOf = make([]int32, len(l.capacity))
	l.eachCounter(func(_, name string, _ int32) {
		if !slices.Contains(l.names, name) {
			l.names = append(l.names, name)
		}
	})
	slices.Sort(l.names)
	l.eachCounter(func(_, name string, i int32) {
		j, _ := slices.BinarySearch(l.names, name)
		l.nameOf[i] = int32(j)
	})
	l.nnames = len(l.names)
}

// scanSlices is the most consuming slices a layout finds by a scan rather than through sliceIdx.
const scanSlices = 8

// sliceCounters is the compiled consumption of one slice's devices, indexed like its devices; a device
// that consumes nothing has the zero devCounters.
type sliceCounters struct {
	e    *sliceEntry
	devs []devCounters
}

// dev returns d's compiled consumption, nil when d is not a device of the layout's pool.
func (l *counterLayout) dev(d *deviceEntry) *devCounters {
	if devs := l.slice(d.slice); devs != nil {
		return &devs[d.idx]
	}
	return nil
}

// slice returns the compiled consumption of e's devices, nil when none of them consumes.
func (l *counterLayout) slice(e *sliceEntry) []devCounters {
	if l.sliceIdx != nil {
		if i, ok := l.sliceIdx[e]; ok {
			return l.bySlice[i].devs
		}
		return nil
	}
	for i := range l.bySlice {
		if sc := &l.bySlice[i]; sc.e == e {
			return sc.devs
		}
	}
	return nil
}

// devCounters is one device's consumesCounters, compiled.
type devCounters struct {
	amounts []counterAmount // counters the pool defines, in the order listed
	sets    []setDraw       // one per consumesCounters entry, in order
}

// setLayout is one counter set of a layout: its number and its defined counters, sorted by name and
// numbered from first on (none for a set that devices name and the pool does not define). Numbering in
// name order rather than in map order gives pools with the same counters the same compiled lists, which
// they then share (see counterBlocks). slots finds a name's position: an open-addressing table of
// 1+position (0 is empty) whose length is a power of two at least twice the names', so that a probe
// ends; every counter of every consumption is looked up, and a table hashed on a few bytes of the name
// costs less than a map or a binary search.
type setLayout struct {
	idx   int32
	first int32
	names []string
	slots []int32
}

// index is the index of the set's counter name.
func (sl *setLayout) index(name string) (int32, bool) {
	if len(sl.slots) == 0 {
		return 0, false
	}
	mask := len(sl.slots) - 1
	for i := nameHash(name) & mask; ; i = (i + 1) & mask {
		k := sl.slots[i]
		if k == 0 {
			return 0, false
		}
		if sl.names[k-1] == name {
			return sl.first + k - 1, true
		}
	}
}

// fillSlots builds sl.slots in table, which has the length slotsFor(len(sl.names)) and is zero.
func (sl *setLayout) fillSlots(table []int32) {
	sl.slots = table
	mask := len(table) - 1
	for k, name := range sl.names {
		i := nameHash(name) & mask
		for table[i] != 0 {
			i = (i + 1) & mask
		}
		table[i] = int32(k + 1)
	}
}

// slotsFor is the length of the table for n names (0 for none).
func slotsFor(n int) int {
	if n == 0 {
		return 0
	}
	size := 4
	for size < 2*n {
		size *= 2
	}
	return size
}

// nameHash hashes a counter name on its length and three of its bytes: counter names of one set tend
// to differ there ("decoders" and "encoders", "memory-slice-0" to "memory-slice-7"), and a collision
// costs one more comparison (a set has at most 32 counters).
func nameHash(s string) int {
	n := len(s)
	if n == 0 {
		return 0
	}
	return n*131 ^ int(s[0])*31 ^ int(s[n-1])*7 ^ int(s[n/2])*3
}

// eachCounter calls fn with every defined counter's set, name and index.
func (l *counterLayout) eachCounter(fn func(set, name string, i int32)) {
	for set, sl := range l.sets {
		for j, name := range sl.names {
			fn(set, name, sl.first+int32(j))
		}
	}
}

// counter is the index of a defined counter.
func (l *counterLayout) counter(set, name string) (int32, bool) {
	sl := l.sets[set]
	if sl == nil {
		return 0, false
	}
	return sl.index(name)
}

type counterAmount struct {
	idx int32
	v   int64
}

// setDraw is one consumesCounters entry: the set it draws on and its compatibility groups as pairs, as
// listed (for admitting) and without repeats (for counting members), one list split at n: a DGX node
// has a draw per device, so the record is kept small.
type setDraw struct {
	set   int32
	n     int32   // len(groups)
	pairs []int32 // groups then uniq
}

// groups are the draw's compatibility groups as listed.
func (sd *setDraw) groups() []int32 { return sd.pairs[:sd.n] }

// uniq are the draw's compatibility groups without repeats.
func (sd *setDraw) uniq() []int32 { return sd.pairs[sd.n:] }

// tallyState is the counter state of a pool: what is left of every counter, how many of them are
// overdrawn, and per counter set the devices drawing on it, those without groups, and per pair the
// devices declaring the group.
type tallyState struct {
	remaining []int64
	overdrawn int
	members   []int32 // per set
	noGroup   []int32 // per set
	pairs     []int32 // per (set, group) pair
}

func (t *tallyState) copyFrom(o *tallyState) {
	t.remaining = append(t.remaining[:0], o.remaining...)
	t.members = append(t.members[:0], o.members...)
	t.noGroup = append(t.noGroup[:0], o.noGroup...)
	t.pairs = append(t.pairs[:0], o.pairs...)
	t.overdrawn = o.overdrawn
}

// newCounterLayout compiles the counters of p. It visits p's node slices and then its other slices;
// invalid is, for the first consumption in that order that names a counter set or a counter p does not
// define, the reason that makes the pool invalid (empty when there is none). buildPool compiles the
// layout as it checks the pool, so that each consumption is read once. A pool without consumption has
// no layout (nil). Each consuming slice's compiled block is taken from blocks when another pool's slice
// compiled to the same lists (see counterBlocks); nil blocks gives every slice a block of its own.
func newCounterLayout(p *pool, sc *poolScratch, blocks *counterBlocks) (l *counterLayout, invalid string) {
	// slots[i] is where consumption i lies in the block of every consuming slice's devices.
	slots, cons := sc.slots[:0], sc.cons[:0]
	defer func() { sc.slots, sc.cons = slots, cons }() // kept for the next build, emptied by putPoolScratch
	var consumers []*sliceEntry                        // the slices with a device that consumes, in order
	n := 0                                             // devices of consumers
	for _, list := range [][]*sliceEntry{p.slices, p.others} {
		for _, e := range list {
			// The API objects, indexed like the slice's device entries: the entries of p.others (other
			// nodes' slices) need not be prepared.
			devs := e.obj.Spec.Devices
			for i := range devs {
				cc := devs[i].ConsumesCounters
				if len(cc) == 0 {
					continue
				}
				if len(consumers) == 0 || consumers[len(consumers)-1] != e {
					consumers = append(consumers, e)
					n += len(devs)
				}
				slots = append(slots, n-len(devs)+i)
				cons = append(cons, cc)
			}
		}
	}
	if len(cons) == 0 {
		return nil, "" // nothing draws on counters: no call asks for the layout (whole GPUs)
	}
	// Every device of a consuming slice has its place in one block of the scratch; compileCounters fills
	// those of the devices that consume, and each slice's part is then interned out of it.
	block := slices.Grow(sc.buf.block[:0], n)[:n]
	clear(block)
	sc.buf.block = block
	l, bad := compileCounters(p.counterSets, cons, func(i int) *devCounters { return &block[slots[i]] }, &sc.buf)
	if bad.found {
		c := &cons[bad.dev][bad.cons]
		i, defined := p.counterIdx[c.CounterSet]
		if !defined {
			return nil, fmt.Sprintf("counter set %s not found", c.CounterSet)
		}
		return nil, fmt.Sprintf("counter %s not found in counter set %s", firstUndefined(c.Counters, p.counterSets[i].Counters), c.CounterSet)
	}
	if l.dense {
		l.nameCounters()
		l.bySlice = make([]sliceCounters, len(consumers))
		at := 0
		for i, e := range consumers {
			k := len(e.obj.Spec.Devices)
			l.bySlice[i] = sliceCounters{e: e, devs: blocks.intern(block[at : at+k])}
			at += k
		}
		if len(consumers) > scanSlices {
			l.sliceIdx = make(map[*sliceEntry]int, len(consumers))
			for i, e := range consumers {
				l.sliceIdx[e] = i
			}
		}
	}
	return l, ""
}

// undefinedRef is the first consumption (device dev's entry cons) that names a counter set or a counter
// the sets do not define.
type undefinedRef struct {
	found     bool
	dev, cons int
}

// firstUndefined is the first counter, in name order (so that the reason is the same on every call),
// that consumed names and defined lacks. It runs only for a pool found invalid.
func firstUndefined(consumed, defined map[string]resourceapi.Counter) string {
	for _, name := range slices.Sorted(maps.Keys(consumed)) {
		if _, ok := defined[name]; !ok {
			return name
		}
	}
	return ""
}

// compileBuf is the working memory of compileCounters, kept between pool builds (see poolScratch).
type compileBuf struct {
	defs    []counterDef
	draws   []setDraw
	amounts []counterAmount
	groups  []int32
	block   []devCounters // newCounterLayout's
}

// counterDef is one defined counter as compileCounters numbers it.
type counterDef struct {
	set  int32
	name string
	v    int64
}

// compileCounters numbers the counters of sets and compiles each consumption list; the layout is dense
// when every quantity is an exact int64 that passes capacity.ValidateQuantity and no sum can overflow.
// The compiled lists lie in a few blocks sized by a first count, rather than several allocations per
// device: a DGX node in dynamic MIG has over two hundred devices drawing on its counters. With buf the
// blocks are buf's, to be copied out before its next use (newCounterLayout interns them); without, they
// are allocated.
//
// bad is the first consumption that names a counter set or a counter that sets do not define; its
// undefined counters are left out of the compiled list.
func compileCounters(sets []resourceapi.CounterSet, cons [][]resourceapi.DeviceCounterConsumption, at func(i int) *devCounters, buf *compileBuf) (l *counterLayout, bad undefinedRef) {
	nCounters := 0
	for _, s := range sets {
		nCounters += len(s.Counters)
	}
	nDraws, nAmounts, nGroups := 0, 0, 0
	for _, list := range cons {
		nDraws += len(list)
		for _, c := range list {
			nAmounts += len(c.Counters)
			nGroups += len(c.CompatibilityGroups)
		}
	}
	if buf == nil {
		buf = new(compileBuf)
	}
	l = &counterLayout{sets: make(map[string]*setLayout, len(sets))}
	setBlock := make([]setLayout, 0, len(sets))
	internSet := func(name string) *setLayout {
		sl := l.sets[name]
		if sl == nil {
			if len(setBlock) < cap(setBlock) {
				setBlock = setBlock[:len(setBlock)+1]
				sl = &setBlock[len(setBlock)-1]
			} else {
				sl = new(setLayout)
			}
			sl.idx = int32(l.nsets)
			l.sets[name] = sl
			l.nsets++
		}
		return sl
	}
	var pairIdx map[[2]string]int32
	// Magnitudes of every amount that could be summed: when their total fits, no sum overflows.
	var total uint64
	exact := func(q resource.Quantity) (int64, bool) {
		if capacity.ValidateQuantity(q) != nil {
			return 0, false
		}
		v, ok := q.AsInt64()
		if !ok || v == math.MinInt64 {
			return 0, false
		}
		m := uint64(v)
		if v < 0 {
			m = uint64(-v)
		}
		if total+m < total || total+m > math.MaxInt64/2 {
			return 0, false
		}
		total += m
		return v, true
	}
	dense := true
	// The defined counters are numbered by set (in order of definition) and within a set by name. A set
	// defined twice has the counters of both definitions, a counter's value its last definition's, as
	// in capacity.NewCounters (a pool with such a set is invalid; the tests compare with it all the same).
	defs := slices.Grow(buf.defs[:0], nCounters)
	for _, s := range sets {
		sl := internSet(s.Name)
		for name, c := range s.Counters {
			v, ok := exact(c.Value)
			dense = dense && ok
			defs = append(defs, counterDef{set: sl.idx, name: name, v: v})
		}
	}
	slices.SortStableFunc(defs, func(x, y counterDef) int {
		if x.set != y.set {
			return cmp.Compare(x.set, y.set)
		}
		return strings.Compare(x.name, y.name)
	})
	names := make([]string, 0, len(defs))
	l.capacity = make([]int64, 0, len(defs))
	for i := 0; i < len(defs); {
		set := defs[i].set
		sl := &setBlock[set] // defined sets are the first ones interned
		sl.first = int32(len(names))
		for ; i < len(defs) && defs[i].set == set; i++ {
			d := &defs[i]
			if len(names) > int(sl.first) && names[len(names)-1] == d.name {
				l.capacity[len(l.capacity)-1] = d.v
				continue
			}
			names = append(names, d.name)
			l.capacity = append(l.capacity, d.v)
		}
		sl.names = names[sl.first:len(names):len(names)]
	}
	nSlots := 0
	for i := range setBlock {
		nSlots += slotsFor(len(setBlock[i].names))
	}
	table := make([]int32, nSlots)
	for i := range setBlock {
		k := slotsFor(len(setBlock[i].names))
		setBlock[i].fillSlots(table[:k:k])
		table = table[k:]
	}
	clear(defs) // the names are the snapshot's
	buf.defs = defs[:0]

	definedSets := int32(l.nsets)
	if cap(buf.draws) < nDraws {
		buf.draws = make([]setDraw, nDraws)
	}
	if cap(buf.amounts) < nAmounts {
		buf.amounts = make([]counterAmount, 0, nAmounts)
	}
	if cap(buf.groups) < 2*nGroups {
		buf.groups = make([]int32, 0, 2*nGroups)
	}
	draws := buf.draws[:nDraws]
	amounts := buf.amounts[:0]
	groups := buf.groups[:0]
	for di, list := range cons {
		dc := at(di)
		dc.sets, draws = draws[:len(list):len(list)], draws[len(list):]
		first := len(amounts)
		for i, c := range list {
			sl := internSet(c.CounterSet)
			sd := setDraw{set: sl.idx}
			if n := len(c.CompatibilityGroups); n > 0 {
				if pairIdx == nil {
					pairIdx = map[[2]string]int32{}
				}
				at := len(groups)
				for _, g := range c.CompatibilityGroups {
					k := [2]string{c.CounterSet, g}
					pi, ok := pairIdx[k]
					if !ok {
						pi = int32(l.npairs)
						pairIdx[k] = pi
						l.npairs++
					}
					groups = append(groups, pi)
				}
				listed := groups[at : at+n : at+n]
				for _, pi := range listed {
					if !containsInt32(groups[at+n:], pi) {
						groups = append(groups, pi)
					}
				}
				sd.n, sd.pairs = int32(n), groups[at:len(groups):len(groups)]
			}
			dc.sets[i] = sd
			if sl.idx >= definedSets && !bad.found {
				bad = undefinedRef{found: true, dev: di, cons: i}
			}
			from := len(amounts)
			for name, v := range c.Counters {
				ci, defined := sl.index(name)
				if !defined {
					if !bad.found {
						bad = undefinedRef{found: true, dev: di, cons: i}
					}
					continue
				}
				amount, ok := exact(v.Value)
				if !ok {
					dense = false
					continue
				}
				amounts = append(amounts, counterAmount{idx: ci, v: amount})
			}
			// In counter order rather than map order, so that equal consumptions compile alike.
			sortAmounts(amounts[from:])
		}
		if len(amounts) > first {
			dc.amounts = amounts[first:len(amounts):len(amounts)]
		}
	}
	l.dense = dense
	return l, bad
}

// sortAmounts sorts one consumption's amounts by counter (each counter is listed once): an insertion
// sort, as a consumption lists a few counters.
func sortAmounts(a []counterAmount) {
	for i := 1; i < len(a); i++ {
		x := a[i]
		j := i
		for ; j > 0 && a[j-1].idx > x.idx; j-- {
			a[j] = a[j-1]
		}
		a[j] = x
	}
}

func containsInt32(s []int32, x int32) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// emptyState is the state of the pool with nothing allocated.
func (l *counterLayout) emptyState() tallyState {
	t := tallyState{
		remaining: append([]int64(nil), l.capacity...),
		members:   make([]int32, l.nsets),
		noGroup:   make([]int32, l.nsets),
		pairs:     make([]int32, l.npairs),
	}
	for _, v := range t.remaining {
		if v < 0 {
			t.overdrawn++
		}
	}
	return t
}

// fits is capacity.Counters.Fits for a device of the layout.
func (t *tallyState) fits(dc *devCounters) bool {
	for i := range dc.sets {
		if !t.admits(&dc.sets[i]) {
			return false
		}
	}
	over := t.overdrawn
	for _, a := range dc.amounts {
		// Amounts of one counter listed twice are applied in turn, as capacity.Counters does.
		if r := t.remaining[a.idx]; r >= 0 && r-a.v < 0 {
			over++
		} else if r < 0 && r-a.v >= 0 {
			over--
		}
		t.remaining[a.idx] -= a.v
	}
	for _, a := range dc.amounts {
		t.remaining[a.idx] += a.v
	}
	return over == 0
}

// admits is the compatibility-group rule of one counter set (capacity.Counters.admits).
func (t *tallyState) admits(sd *setDraw) bool {
	members := t.members[sd.set]
	if members == 0 {
		return true
	}
	noGroup := t.noGroup[sd.set]
	if noGroup > 0 && noGroup < members {
		return false
	}
	if sd.n == 0 {
		return noGroup == members
	}
	if noGroup > 0 {
		return false
	}
	for _, p := range sd.groups() {
		if t.pairs[p] == members {
			return true
		}
	}
	return false
}

// add records a device (sign 1) or takes it back (sign -1), as capacity.Counters.Add and Remove.
func (t *tallyState) add(dc *devCounters, sign int64) {
	for _, a := range dc.amounts {
		r := t.remaining[a.idx]
		n := r - sign*a.v
		switch {
		case r < 0 && n >= 0:
			t.overdrawn--
		case r >= 0 && n < 0:
			t.overdrawn++
		}
		t.remaining[a.idx] = n
	}
	d := int32(sign)
	for i := range dc.sets {
		sd := &dc.sets[i]
		t.members[sd.set] += d
		if sd.n == 0 {
			t.noGroup[sd.set] += d
			continue
		}
		for _, p := range sd.uniq() {
			t.pairs[p] += d
		}
	}
}

// tally is the running counter state of one pool in one call: dense, or capacity.Counters for a pool
// whose layout is not.
type tally struct {
	p     *pool
	lay   *counterLayout
	state tallyState
	slow  *capacity.Counters
}

func (t *tally) fits(d *deviceEntry) bool {
	if len(d.api.ConsumesCounters) == 0 {
		return true
	}
	if t.slow != nil {
		return t.slow.Fits(d.api.ConsumesCounters)
	}
	dc := t.lay.dev(d)
	return dc != nil && t.state.fits(dc)
}

func (t *tally) add(d *deviceEntry) {
	if t.slow != nil {
		t.slow.Add(d.api.ConsumesCounters)
	} else if dc := t.lay.dev(d); dc != nil {
		t.state.add(dc, 1)
	}
}

func (t *tally) remove(d *deviceEntry) {
	if t.slow != nil {
		t.slow.Remove(d.api.ConsumesCounters)
	} else if dc := t.lay.dev(d); dc != nil {
		t.state.add(dc, -1)
	}
}

// remaining is what is left of one counter as a float (the strategies' ranking keys), false when the pool
// does not define it.
func (t *tally) remaining(set, name string) (float64, bool) {
	if t.slow != nil {
		q, ok := t.slow.Remaining(set, name)
		return q.AsApproximateFloat64(), ok
	}
	i, ok := t.lay.counter(set, name)
	if !ok {
		return 0, false
	}
	return float64(t.state.remaining[i]), true
}

// tally returns the call's running counter state of p, starting it from the pool's prepared base.
func (a *allocation) tally(p *pool) *tally {
	for _, t := range a.tallies {
		if t.p == p {
			return t
		}
	}
	base := a.baseCounters(p)
	var t *tally
	if n := len(a.tallies); n < cap(a.tallies) && a.tallies[:n+1][n] != nil {
		t = a.tallies[:n+1][n]
	} else {
		t = new(tally)
	}
	a.tallies = append(a.tallies, t)
	t.p, t.lay, t.slow = p, base.layout, nil
	if base.layout.dense {
		t.state.copyFrom(&base.state)
	} else {
		t.slow = a.freshCounters(p)
	}
	return t
}

// resetTallies forgets the call's counter states, keeping their buffers.
func (a *allocation) resetTallies() {
	for _, t := range a.tallies {
		t.p, t.lay, t.slow = nil, nil, nil
	}
	a.tallies = a.tallies[:0]
}
