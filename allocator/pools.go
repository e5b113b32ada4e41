package allocator

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// pool is a resource pool as one Allocate call sees it for one node.
type pool struct {
	id PoolID
	// incomplete: not all slices of the pool's newest generation are published yet. Its devices are not
	// used, and a request for all devices fails.
	incomplete bool
	// invalid: the pool's slices contradict each other (duplicate device names, a counter set defined
	// twice, a device consuming an unknown counter). Its devices are not used.
	invalid       bool
	invalidReason string
	// slices holds the slices with devices for this node, sorted by name; a single one (a node's usual
	// pool) lies in oneSlice, next to the list, so that reaching it reads no other cache line.
	slices   []*sliceEntry
	oneSlice [1]*sliceEntry
	// others are the pool's remaining device slices (other nodes); their allocated devices draw on the
	// same shared counters.
	others      []*sliceEntry
	counterSets []resourceapi.CounterSet
	counterIdx  map[string]int // counter set name → index in counterSets
	// layout is the pool's counters compiled (with DRAPartitionableDevices, and devices drawing on
	// counters; see tally.go).
	layout *counterLayout
	// binding: a device for this node lists binding conditions; such pools are visited last.
	binding bool
	// base is the pool's shared counters as the allocated state leaves them (see baseCounters).
	base atomic.Pointer[counterBase]
	// class is the pool's class under the signature last asked for (see NodeClasses).
	class atomic.Pointer[sigClass]
}

// gatherPools collects the pools with devices for a node in the order the Kubernetes allocator visits
// them: sorted by driver and pool name, pools with binding conditions last.
//
// With only GA gates enabled Kubernetes uses its stable implementation, which visits pools in map order
// (so its choice among pools is random) and takes node-local slices with shared counters of every node;
// dralloc keeps the sorted order and reproduces the latter.
func (a *allocation) gatherPools(node *v1.Node) ([]*pool, error) {
	pools, _, err := a.gatherPoolsOf(node)
	return pools, err
}

// gatherKey is what the pools gathered for the node depend on in the state, but for the node itself:
// its slices, the shared ones and, in the stable implementation, those with shared counters. byNode:
// slices that select nodes make the answer depend on the node's name and labels as well.
func gatherKey(st *state, f Features, local []*sliceEntry) (key gathered, byNode bool) {
	key = gathered{local: listID(local), shared: listID(st.sharedSlices), f: f}
	if f.Implementation() == implStable && len(st.counterPools) > 0 {
		key.counters = st.counterRev
	}
	return key, len(st.sharedSlices) > 0 || key.counters != 0
}

// gatherPoolsOf is gatherPools; cacheable is true when the pools depend on nothing but what gatherKey
// names and the node (an incomplete pool is checked against slices of other nodes).
func (a *allocation) gatherPoolsOf(node *v1.Node) ([]*pool, bool, error) {
	st, f := a.st, a.f
	stable := f.Implementation() == implStable
	local := st.nodeSlices[node.Name]
	// Slices that select nodes make the answer depend on the node: on its name and its labels, which
	// the caller may change in the object it passes again, so they are compared by value.
	key, byNode := gatherKey(st, f, local)
	var slot *nodeSlot
	if len(local) > 0 {
		slot = &local[0].caches.node
		if g := slot.p.Load(); g != nil && g.local == key.local && g.shared == key.shared &&
			g.counters == key.counters && g.f == f && g.byNode == byNode &&
			(!byNode || g.nodeName == node.Name && maps.Equal(g.labels, node.Labels)) {
			return g.pools, true, nil
		}
	}
	pools, cacheable, err := a.gatherPoolsFrom(node, local, stable)
	if err == nil && cacheable && slot != nil {
		g := key
		if byNode {
			g.byNode, g.nodeName, g.labels = true, node.Name, maps.Clone(node.Labels)
		}
		if len(pools) <= len(g.one) {
			// A node's usual one pool is kept with the key: a hit reads one allocation.
			g.pools = append(g.one[:0:len(pools)], pools...)
		} else {
			g.pools = slices.Clone(pools)
		}
		slot.p.Store(&g)
	}
	return pools, cacheable, err
}

// gatherPoolsFrom does the work of gatherPools. cacheable is false when the answer depends on more
// than the node's slices, the shared ones and the node (a pool that is incomplete for the node is
// checked against all its slices).
func (a *allocation) gatherPoolsFrom(node *v1.Node, local []*sliceEntry, stable bool) (pools []*pool, cacheable bool, err error) {
	st, f := a.st, a.f
	cacheable = true
	// A node sees few pools: a slice searched linearly beats a map.
	byPool := a.byPool[:0]
	consider := func(e *sliceEntry) error {
		spec := &e.obj.Spec
		if !f.DRAPartitionableDevices && (spec.PerDeviceNodeSelection != nil || len(spec.SharedCounters) > 0) {
			return nil
		}
		if !f.DRADeviceCompatibilityGroups && e.usesCompatibilityGroups {
			// As Kubernetes: the slice is ignored, which leaves its pool incomplete.
			return nil
		}
		// The stable implementation takes every slice with shared counters, whatever node it is for.
		if !(stable && len(spec.SharedCounters) > 0) {
			ok, err := e.sliceFor(node)
			if err != nil || !ok {
				return err
			}
		}
		var c *poolCandidates
		for i := range byPool {
			if byPool[i].id == e.pool {
				c = &byPool[i]
				break
			}
		}
		switch {
		case c == nil:
			byPool = append(byPool, poolCandidates{id: e.pool, gen: e.generation(), slices: a.oneEntry(e)})
		case e.generation() > c.gen:
			c.gen, c.slices = e.generation(), a.oneEntry(e)
		case e.generation() == c.gen:
			c.slices = append(c.slices, e)
		}
		return nil
	}
	for _, e := range local {
		if err := consider(e); err != nil {
			return nil, false, err
		}
	}
	for _, e := range st.sharedSlices {
		if err := consider(e); err != nil {
			return nil, false, err
		}
	}
	if stable {
		// Pools do not interact here (byPool is sorted below), so visiting them in map order gives the
		// same pools as visiting all such slices in insertion order; within a pool, poolSlices keeps it.
		for id := range st.counterPools {
			for _, e := range st.poolSlices[id] {
				if e.nodeName != "" && e.nodeName != node.Name && len(e.obj.Spec.SharedCounters) > 0 {
					if err := consider(e); err != nil {
						return nil, false, err
					}
				}
			}
		}
	}

	a.byPool = byPool
	pools = a.poolBuf[:0]
	var withBinding []*pool
	for i := range byPool {
		c := &byPool[i]
		id := c.id
		want := c.slices[0].obj.Spec.Pool.ResourceSliceCount
		var p *pool
		if int64(len(c.slices)) == want {
			p = a.s.pools.pool(id, c.slices, f)
		} else {
			cacheable = false
			obsolete, all := a.poolGeneration(id, c.gen)
			if obsolete {
				// A newer generation exists but publishes nothing for this node: the pool is gone here.
				continue
			}
			if int64(len(all)) != want {
				pools = append(pools, &pool{id: id, incomplete: true})
				continue
			}
			p = buildPool(id, c.slices, all, f, &a.s.pools.blocks)
		}
		if p.hasBindingConditions() {
			withBinding = append(withBinding, p)
		} else {
			pools = append(pools, p)
		}
	}
	sortPools(pools)
	sortPools(withBinding)
	pools = append(pools, withBinding...)
	a.poolBuf = pools
	return pools, cacheable, nil
}

// poolGeneration returns whether a pool has slices newer than gen, and otherwise all its slices of that
// generation (those with compatibility groups left out when the gate is off).
func (a *allocation) poolGeneration(id PoolID, gen int64) (bool, []*sliceEntry) {
	var all []*sliceEntry
	for _, e := range a.st.poolSlices[id] {
		switch {
		case e.generation() > gen:
			return true, nil
		case e.generation() == gen:
			if !a.f.DRADeviceCompatibilityGroups && e.usesCompatibilityGroups {
				continue
			}
			all = append(all, e)
		}
	}
	return false, all
}

func sortPools(pools []*pool) {
	slices.SortFunc(pools, func(x, y *pool) int {
		if c := cmp.Compare(x.id.Driver, y.id.Driver); c != 0 {
			return c
		}
		return cmp.Compare(x.id.Pool, y.id.Pool)
	})
}

// buildPool sorts and validates the slices of a complete pool. all, when set, is every slice of the
// pool's generation; those not in forNode only contribute counters and allocated devices. The pool's
// compiled counters share the blocks of other pools where they are the same (see counterBlocks).
func buildPool(id PoolID, forNode, all []*sliceEntry, f Features, blocks *counterBlocks) *pool {
	p := buildPoolSlices(id, forNode, all, f, blocks)
	if len(p.slices) == 1 {
		p.oneSlice[0] = p.slices[0]
		p.slices = p.oneSlice[:1:1]
	}
	return computeBinding(p)
}

func buildPoolSlices(id PoolID, forNode, all []*sliceEntry, f Features, blocks *counterBlocks) *pool {
	forNode = slices.Clone(forNode)
	slices.SortFunc(forNode, func(x, y *sliceEntry) int { return cmp.Compare(x.name(), y.name()) })
	p := &pool{id: id}
	var counterSlices []*sliceEntry
	isCounterSlice := func(e *sliceEntry) bool {
		return f.DRAPartitionableDevices && len(e.obj.Spec.SharedCounters) > 0
	}
	for _, e := range forNode {
		if isCounterSlice(e) {
			counterSlices = append(counterSlices, e)
		} else {
			p.slices = append(p.slices, e)
		}
	}
	if len(forNode) < len(all) {
		seen := make(map[string]bool, len(forNode))
		for _, e := range forNode {
			seen[e.name()] = true
		}
		for _, e := range all {
			switch {
			case seen[e.name()]:
			case isCounterSlice(e):
				counterSlices = append(counterSlices, e)
			default:
				p.others = append(p.others, e)
			}
		}
	}
	sc := getPoolScratch()
	defer putPoolScratch(sc)
	// The device entries of the node's slices are prepared here, together and in order, rather than when
	// a search first reaches each slice: prepared between a search's other first-use allocations (CEL
	// views, verdicts) they lie apart in memory, and a later search that visits every device of the node
	// ran some 20% slower (BenchmarkDGX dgxa100 whole-2: 760-780 against 640-665 us per 100 nodes). The
	// checks below read the API objects, which need no entry.
	for _, e := range p.slices {
		e.devices()
	}
	names := sc.names
	for _, e := range p.slices {
		for i := range e.obj.Spec.Devices {
			name := e.obj.Spec.Devices[i].Name
			if names[name] {
				return p.markInvalid(fmt.Sprintf("duplicate device name %s", name))
			}
			names[name] = true
		}
	}
	if !f.DRAPartitionableDevices {
		return p
	}
	p.counterIdx = map[string]int{}
	for _, e := range counterSlices {
		for _, cs := range e.obj.Spec.SharedCounters {
			if _, dup := p.counterIdx[cs.Name]; dup {
				return p.markInvalid(fmt.Sprintf("duplicate counter set name %s", cs.Name))
			}
			p.counterIdx[cs.Name] = len(p.counterSets)
			p.counterSets = append(p.counterSets, cs)
		}
	}
	l, invalid := newCounterLayout(p, sc, blocks)
	if invalid != "" {
		return p.markInvalid(invalid)
	}
	p.layout = l
	return p
}

// poolScratch is the working memory of building a pool, kept between builds: a fleet's first pass
// builds a pool per node, each with hundreds of devices on a DGX node, and what the build only looks
// through (the names seen, the devices' consumption lists) would otherwise be garbage per pool.
type poolScratch struct {
	names map[string]bool
	slots []int
	cons  [][]resourceapi.DeviceCounterConsumption
	buf   compileBuf
}

var poolScratches = sync.Pool{New: func() any { return &poolScratch{names: map[string]bool{}} }}

func getPoolScratch() *poolScratch { return poolScratches.Get().(*poolScratch) }

// putPoolScratch empties sc, so that it holds no object of the snapshot, and keeps it for the next build.
// A scratch grown by an unusually large pool is dropped instead: clearing its map would cost every
// later build the large pool's size.
func putPoolScratch(sc *poolScratch) {
	const keep = 4096
	if len(sc.names) > keep || cap(sc.cons) > keep || cap(sc.buf.amounts) > 16*keep {
		return
	}
	clear(sc.names)
	clear(sc.cons)
	sc.slots, sc.cons = sc.slots[:0], sc.cons[:0]
	poolScratches.Put(sc)
}

func (p *pool) markInvalid(reason string) *pool {
	return &pool{id: p.id, invalid: true, invalidReason: reason}
}

// hasBindingConditions: a device for this node lists binding conditions (even an empty, non-nil list).
// It is computed when the pool is built.
func (p *pool) hasBindingConditions() bool { return p.binding }

func computeBinding(p *pool) *pool {
	for _, e := range p.slices {
		for i := range e.obj.Spec.Devices {
			if e.obj.Spec.Devices[i].BindingConditions != nil {
				p.binding = true
				return p
			}
		}
	}
	return p
}

// poolCache keeps pools built from the complete set of slices a node sees, so that the many nodes of a
// filter pass do not rebuild them on every call. An entry is used only for exactly the slice entries it
// was built from and the same features; entries are immutable, so a changed slice never meets a stale
// pool. The cached pool hangs off the first slice entry: a lookup is an atomic load and a comparison of
// a few pointers. blocks holds the compiled counter blocks the pools share.
type poolCache struct {
	blocks counterBlocks
}

// entryCaches are the caches that hang off a slice entry.
type entryCaches struct {
	pool    poolSlot
	node    nodeSlot
	devices deviceList                  // see sliceEntry.devices
	twins   atomic.Pointer[[]int]       // see sliceEntry.twins
	usage   atomic.Pointer[sliceUsage]  // see allocation.inClusterUse
	columns atomic.Pointer[attrColumns] // see sliceEntry.column
}

// poolSlot holds the pool last built from a slice entry and the slices that came with it.
type poolSlot struct {
	p atomic.Pointer[cachedPool]
}

// nodeSlot holds the pools last gathered for the node whose node-local slice list starts with the entry,
// and what they were gathered from. Slice lists are never modified: a change builds a new list, in a new
// array, so the address of a list's array tells whether it is the same list (the cache keeps the array
// alive, so the address cannot be reused meanwhile).
type nodeSlot struct {
	p atomic.Pointer[gathered]
}

type gathered struct {
	local, shared listKey
	counters      uint64 // state.counterRev when the stable implementation took slices with counters
	// byNode: slices that select nodes were considered, so the pools are those of the node with this
	// name and these labels (a copy: the caller's map may change).
	byNode   bool
	nodeName string
	labels   map[string]string
	f        Features
	pools    []*pool
	one      [1]*pool // holds pools when there is one
}

// listKey identifies an immutable slice list: its array and its length.
type listKey struct {
	array **sliceEntry
	n     int
}

func listID(l []*sliceEntry) listKey {
	if len(l) == 0 {
		return listKey{}
	}
	return listKey{array: &l[0], n: len(l)}
}

type cachedPool struct {
	slices []*sliceEntry
	f      Features
	pool   *pool
}

func (c *poolCache) pool(id PoolID, entries []*sliceEntry, f Features) *pool {
	slot := &entries[0].caches.pool
	if cp := slot.p.Load(); cp != nil && cp.f == f && slices.Equal(cp.slices, entries) {
		return cp.pool
	}
	p := buildPool(id, entries, nil, f, &c.blocks)
	slot.p.Store(&cachedPool{slices: slices.Clone(entries), f: f, pool: p})
	return p
}
