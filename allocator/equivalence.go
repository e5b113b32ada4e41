package allocator

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/celenv"
)

// NodeClasses sorts nodes into classes that one set of claims cannot tell apart, so that a filter over a
// whole fleet asks [Snapshot.Fits] once per class instead of once per node. Two nodes are in one class
// only when the search, run for the claims on either, meets the same thing at every step but for names:
// their pools, in the order the search visits them, are either the same network-attached pools or
// node-local pools whose slices and devices are equal position by position in everything a check reads —
// selector verdicts of every request of the call (so attributes that no selector reads may differ, as
// the inventory's uuid and pciBusID do), the attributes the call's constraints compare, capacities,
// shared counters, taints (DeviceTaintRules included), binding conditions, node operations — and in
// their allocated state (devices in use, shares and consumed capacity). The node's declared features
// count too where a device skips node operations. Fits then answers alike on both, and Allocate returns the same allocation with each node's
// own device, pool and node names ([NodeClasses.Rename] turns one into the other).
//
// Nodes whose pools cannot be compared this way (per-device node selection, pools spanning nodes) and
// calls that derive attributes or ask for all devices get a class of their own. A NodeClasses belongs to
// the snapshot's state when it was made: once the snapshot changes, every node gets a class of its own.
// It is safe for concurrent use.
type NodeClasses struct {
	s   *Snapshot
	st  *state
	rev uint64
	ctx context.Context
	off bool // the call is not classified: every node is in a class of its own
	sig *classSig
	// fc holds the class keys of nodes across calls under sig (see fleetCache); nil when off.
	fc *fleetCache
	mu sync.Mutex // guards what follows, and a; taken before fc.mu
	a  *allocation
	// remap numbers the call's classes: fc's key id → class+1 (0: not met yet in this call).
	remap []int32
	next  int
	buf   []byte
}

// NodeClasses prepares the classification of nodes for the claims (see [NodeClasses]). Claims that are
// not valid input are not classified: every node gets a class of its own, and Fits reports the error.
//
// A node's class is remembered in the snapshot, with what it depends on (the node's slices, the devices
// of its pools in use, its labels where slices select nodes, the claims' classes and selectors), so
// that a later call, on this snapshot or a fork of it, finds it again while none of these changed: a
// filter pass over a fleet that did not change costs a lookup per node.
func (s *Snapshot) NodeClasses(ctx context.Context, claims []*resourceapi.ResourceClaim) (*NodeClasses, error) {
	if ctx == nil {
		return nil, nilContext()
	}
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	nc := &NodeClasses{s: s, st: s.st, rev: s.st.rev, ctx: ctx}
	if s.envErr != nil || !classifiable(claims) {
		nc.off = true
		return nc, nil
	}
	a := &allocation{ctx: ctx, s: s, st: s.st, f: s.f, strategy: s.opts.Strategy, claims: claims, capOpts: s.capOpts(), matches: map[matchKey]bool{}}
	a.perClaim = make([]claimState, len(claims))
	for i := range claims {
		if err := a.prepareClaim(i); err != nil {
			nc.off = true
			return nc, nil
		}
	}
	nc.a = a
	nc.sig = s.classSigFor(a)
	nc.fc = s.classes.fleet(nc.sig, s.st)
	return nc, nil
}

// classifiable: every claim is present, and none asks for all devices (whose answer depends on every
// device of the node at once) or derives attributes (whose values constraints compare).
func classifiable(claims []*resourceapi.ResourceClaim) bool {
	for _, c := range claims {
		if c == nil {
			return false
		}
		for _, r := range c.Spec.Devices.Requests {
			if r.Exactly != nil && (r.Exactly.AllocationMode == resourceapi.DeviceAllocationModeAll || len(r.Exactly.DerivedAttributes) > 0) {
				return false
			}
			for _, sub := range r.FirstAvailable {
				if sub.AllocationMode == resourceapi.DeviceAllocationModeAll || len(sub.DerivedAttributes) > 0 {
					return false
				}
			}
		}
	}
	return true
}

// Class returns the node's class: nodes with the same class get the same answer from Fits for the
// claims, and the same allocation from Allocate up to names. Classes are small numbers, in the order
// of first appearance. An error is only returned for a nil node or context, or a closed snapshot.
func (c *NodeClasses) Class(node *v1.Node) (int, error) {
	if node == nil {
		return 0, inputError("Node", "", errors.New("nil object"))
	}
	c.s.mu.RLock()
	defer c.s.mu.RUnlock()
	if c.s.closed {
		return 0, ErrClosed
	}
	c.lock()
	defer c.unlock()
	return c.class(node, -1), nil
}

// AppendClasses appends the class of every node to dst, in order, and returns the extended slice: the
// classes Class would return one by one, under one lock. A whole-fleet filter asks for the classes of
// all its nodes at once; listing them in the same order pass after pass lets the snapshot find what it
// remembers of each node at its position. A nil node is an error, and nothing is appended.
func (c *NodeClasses) AppendClasses(dst []int, nodes []*v1.Node) ([]int, error) {
	for _, node := range nodes {
		if node == nil {
			return dst, inputError("Node", "", errors.New("nil object"))
		}
	}
	c.s.mu.RLock()
	defer c.s.mu.RUnlock()
	if c.s.closed {
		return dst, ErrClosed
	}
	c.lock()
	defer c.unlock()
	for i, node := range nodes {
		dst = append(dst, c.class(node, i))
	}
	return dst, nil
}

func (c *NodeClasses) lock() {
	c.mu.Lock()
	if c.fc != nil {
		c.fc.mu.Lock()
	}
}

func (c *NodeClasses) unlock() {
	if c.fc != nil {
		c.fc.mu.Unlock()
	}
	c.mu.Unlock()
}

// class is Class under the locks; pos is the node's position in the list AppendClasses was given, -1
// for Class.
func (c *NodeClasses) class(node *v1.Node, pos int) int {
	if c.off || c.s.st != c.st || c.st.rev != c.rev || node.Name == "" {
		return c.alone()
	}
	id, ok := c.keyID(node, pos)
	if !ok {
		return c.alone()
	}
	if int(id) >= len(c.remap) {
		c.remap = append(c.remap, make([]int32, int(id)+1-len(c.remap))...)
	}
	if r := c.remap[id]; r > 0 {
		return int(r - 1)
	}
	class := c.next
	c.next++
	c.remap[id] = int32(class + 1)
	return class
}

// alone returns a class no other node has.
func (c *NodeClasses) alone() int {
	id := c.next
	c.next++
	return id
}

// keyID returns the id of the node's class key in fc, from what fc remembers of the node when that
// still holds; false means the node is compared with no other.
func (c *NodeClasses) keyID(node *v1.Node, pos int) (int32, bool) {
	fc, st := c.fc, c.st
	// A filter pass lists the nodes as the pass before did: the key at the node's position is
	// likely its own, found without hashing its name, and where it was found to hold in this state
	// for this very object and nothing of the object but its name counts, it holds.
	var o *orderEntry
	if pos >= 0 && pos < len(fc.order) {
		o = &fc.order[pos]
		if o.node == node && o.name == node.Name && o.plain && o.state == st.id && o.rev == st.rev {
			return o.id, true
		}
	}
	var k *nodeKey
	if o != nil && o.node == node && o.name == node.Name {
		k = o.k
	} else {
		k = fc.nodes[node.Name]
	}
	if k == nil || !k.holds(st, c.s.f, node) {
		key, e, ok := c.key(node)
		if !ok {
			delete(fc.nodes, node.Name)
			return 0, false
		}
		id, found := fc.keys[string(key)]
		if !found {
			id = int32(len(fc.keys))
			fc.keys[string(key)] = id
		}
		if e == nil {
			delete(fc.nodes, node.Name)
			return id, true
		}
		e.id, e.name = id, node.Name
		fc.nodes[node.Name] = e
		k = e
	}
	if pos >= 0 {
		if pos >= len(fc.order) {
			fc.order = append(fc.order, make([]orderEntry, pos+1-len(fc.order))...)
		}
		fc.order[pos] = orderEntry{node: node, name: k.name, k: k, state: st.id, rev: st.rev, id: k.id, plain: !k.byNode && !k.declaredRead}
	}
	return k.id, true
}

// key writes the node's class key into c.buf, and returns with it what the key was computed from (nil
// when that is more than nodeKey records); false means the node is compared with no other.
func (c *NodeClasses) key(node *v1.Node) ([]byte, *nodeKey, bool) {
	a, st, fc := c.a, c.st, c.fc
	a.node = node
	pools, cacheable, err := a.gatherPoolsOf(node)
	if err != nil {
		return nil, nil, false
	}
	var e *nodeKey
	if cacheable {
		g, byNode := gatherKey(st, c.s.f, st.nodeSlices[node.Name])
		e = &nodeKey{state: st.id, rev: st.rev, local: g.local, shared: g.shared, counters: g.counters, byNode: byNode}
		if byNode {
			e.labels = maps.Clone(node.Labels)
		}
	}
	b := c.buf[:0]
	nodeOps := false
	for _, p := range pools {
		pc, ok := c.s.poolClass(c.sig, a, p)
		if !ok {
			return nil, nil, false
		}
		nodeOps = nodeOps || pc.nodeOps
		if pc.owner != node.Name {
			if !pc.comparable {
				return nil, nil, false
			}
			id, ok := fc.shared[p]
			if !ok {
				id = uint32(len(fc.shared))
				fc.shared[p] = id
			}
			b = append(b, 'n')
			b = binary.LittleEndian.AppendUint32(b, id)
			continue
		}
		b = append(b, 'l')
		b = binary.LittleEndian.AppendUint32(b, pc.id)
		stamp, touched := st.poolUse[p.id]
		if e != nil {
			e.use = append(e.use, poolStamp{pool: p.id, stamp: stamp})
		}
		if !touched {
			// No device of the pool was ever allocated in this state's history.
			b = append(b, 0)
			continue
		}
		var used bool
		b, used = appendUse(b, st, p)
		if !used {
			b = append(b, 0)
		}
	}
	// search.go's nodeOpsAllowed reads the node's declared features for devices that skip node
	// operations, in the experimental implementation.
	if nodeOps && a.f.Implementation() == implExperimental && a.f.DRAOptionalNodeOperations {
		declared := nodeDeclares(node.Status.DeclaredFeatures, "DRAOptionalNodeOperations")
		if e != nil {
			e.declaredRead, e.declared = true, declared
		}
		if declared {
			b = append(b, 1)
		}
	}
	c.buf = b
	return b, e, true
}

// appendUse appends the allocated state of the pool's devices to b, position by position; false, with
// b as it was, when none is allocated.
func appendUse(b []byte, st *state, p *pool) ([]byte, bool) {
	mark := len(b)
	b = append(b, 1)
	used := false
	for _, e := range p.slices {
		for _, d := range e.devices() {
			var flags byte
			if st.inUse[d.id] > 0 {
				flags = 1
			}
			n := st.shares[d.id]
			consumed, hasConsumed := st.consumed[d.id]
			if n == 0 && !hasConsumed {
				used = used || flags != 0
				b = append(b, flags)
				continue
			}
			used = true
			b = append(b, flags|2)
			b = binary.LittleEndian.AppendUint32(b, uint32(n))
			names := make([]string, 0, len(consumed))
			for name := range consumed {
				names = append(names, string(name))
			}
			slices.Sort(names)
			for _, name := range names {
				q := consumed[resourceapi.QualifiedName(name)]
				b = append(b, name...)
				b = append(b, 0)
				b = append(b, q.String()...)
				b = append(b, 0)
			}
		}
	}
	if !used {
		return b[:mark], false
	}
	return b, true
}

// poolOwner is the node whose pool p is: every slice of it is the node's own (spec.nodeName, no
// per-device node selection) and no other node's slice belongs to it; "" for any other pool.
func poolOwner(p *pool) string {
	if len(p.others) > 0 || len(p.slices) == 0 {
		return ""
	}
	owner := p.slices[0].nodeName
	for _, e := range p.slices {
		if e.nodeName != owner || e.perDevice {
			return ""
		}
	}
	return owner
}

func skipsNodeOps(p *pool) bool {
	for _, e := range p.slices {
		for _, d := range e.devices() {
			if d.skipNodeOps {
				return true
			}
		}
	}
	return false
}

func hasPerDevice(p *pool) bool {
	for _, e := range p.slices {
		if e.perDevice {
			return true
		}
	}
	return false
}

// poolClass is what classes know of a pool under one signature. A pool of one node's own slices is
// compared by content (id); any other pool by identity, when comparable: nodes that see it see the same
// devices, unless it spans nodes or selects nodes per device.
type poolClass struct {
	owner      string
	id         uint32
	comparable bool
	nodeOps    bool // a device of the node's slices skips node operations
}

// classSig is what the verdict part of a pool's class depends on in one call: the requests'
// classes (by entry, which a change of the class replaces) and selectors, in order, and the attributes
// the constraints compare.
type classSig struct {
	text    string
	classes []*resourceapi.DeviceClass
	attrs   []resourceapi.FullyQualifiedName
	// pools are the classes of the node-local pools met under this signature, and the keys they
	// were given.
	pools map[*pool]poolClass
	keys  map[string]uint32
	// fleet is what calls under this signature found of nodes (see fleetCache); guarded by
	// classCache.mu.
	fleet *fleetCache
	// reads are what the selectors of the call read of a device, when readsKnown: every selector reads
	// attributes and capacities only by constant names (celenv.Selector.Reads). A device's verdicts
	// then follow from those values, its driver, allowMultipleAllocations and binding conditions, so
	// that poolKey evaluates the selectors once per distinct such device rather than on every device.
	// The snapshot holds validated slices only, which the analysis needs.
	reads      []valueRead
	readsKnown bool
}

// valueRead is one attribute or capacity the call's selectors read: its qualified name, and the name
// without a domain that a driver of that domain may publish it under.
type valueRead struct {
	capacity  bool
	domain    string
	qualified resourceapi.QualifiedName
	bare      resourceapi.QualifiedName
}

// selectorReads collects what the selectors of the call's requests read, false when one of them reads
// in a way Reads does not follow or does not compile.
func (a *allocation) selectorReads() ([]valueRead, bool) {
	var attrs, caps []celenv.Ref
	add := func(s *celenv.Selector) bool {
		r, ok := s.Reads()
		attrs, caps = append(attrs, r.Attributes...), append(caps, r.Capacity...)
		return ok
	}
	for ci := range a.perClaim {
		for si := range a.perClaim[ci].slots {
			for _, r := range a.perClaim[ci].slots[si].alts {
				for i := range r.class.Spec.Selectors {
					if r.classSel[i] == nil || !add(r.classSel[i]) {
						return nil, false
					}
				}
				for _, sel := range r.selectors {
					if sel.CEL == nil {
						return nil, false
					}
					s, err := a.recent.compile(a.s.env, sel.CEL.Expression)
					if err != nil || !add(s) {
						return nil, false
					}
				}
			}
		}
	}
	var reads []valueRead
	for _, list := range []struct {
		capacity bool
		refs     []celenv.Ref
	}{{false, attrs}, {true, caps}} {
		slices.SortFunc(list.refs, func(x, y celenv.Ref) int {
			return cmp.Or(cmp.Compare(x.Domain, y.Domain), cmp.Compare(x.Name, y.Name))
		})
		for _, r := range slices.Compact(list.refs) {
			reads = append(reads, valueRead{capacity: list.capacity, domain: r.Domain, qualified: resourceapi.QualifiedName(r.Domain + "/" + r.Name), bare: resourceapi.QualifiedName(r.Name)})
		}
	}
	return reads, true
}

// classCache keeps the signatures of the last few calls and the pool classes found under each, and the
// content of slices as classes compare it.
type classCache struct {
	mu   sync.Mutex
	sigs []*classSig

	contentMu sync.Mutex
	contents  map[*sliceEntry]uint64 // the id of each entry's content
	// contentIDs numbers the distinct contents; ids are never given twice (lastContent), so that pool
	// keys, which name contents by id, stay apart when the maps are dropped.
	contentIDs  map[string]uint64
	lastContent uint64
}

// content is the id of a slice entry's content: the entry as every check reads it, whatever the call,
// names and attributes left out: the spec but for nodeName, pool name and devices, then per device the
// published device but for its name and attributes, and its effective taints. Attributes are what
// selectors and constraints read; poolKey adds their verdicts and the constraints' attributes. Slices
// with equal content and verdicts differ in nothing a check reads. Equal ids are equal contents;
// equal contents share an id while the cache keeps them.
func (c *classCache) content(e *sliceEntry) (uint64, bool) {
	c.contentMu.Lock()
	id, ok := c.contents[e]
	c.contentMu.Unlock()
	if ok {
		return id, true
	}
	w := contentScratches.Get().(*contentScratch)
	defer contentScratches.Put(w)
	w.b = w.b[:0]
	enc := func(v any) bool {
		var ok bool
		w.b, ok = appendJSON(w.b, v)
		return ok
	}
	spec := e.obj.Spec
	spec.NodeName, spec.Pool.Name, spec.Devices = nil, "", nil
	if !enc(spec) {
		return 0, false
	}
	devs := e.devices()
	w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(devs)))
	for _, d := range devs {
		var ok bool
		if w.b, ok = appendDeviceContent(w.b, d.api, w); !ok || !enc(d.taints) {
			return 0, false
		}
	}
	b := w.b
	c.contentMu.Lock()
	defer c.contentMu.Unlock()
	if c.contents == nil || len(c.contents) > 1<<16 {
		c.contents, c.contentIDs = map[*sliceEntry]uint64{}, map[string]uint64{}
	}
	id, ok = c.contentIDs[string(b)]
	if !ok {
		c.lastContent++
		id = c.lastContent
		c.contentIDs[string(b)] = id
	}
	c.contents[e] = id
	return id, true
}

// maxSigs is how many call signatures the cache keeps: a placement loop over a few kinds of pods meets
// few.
const maxSigs = 4

func (s *Snapshot) classSigFor(a *allocation) *classSig {
	var text []byte
	sig := &classSig{}
	for ci := range a.perClaim {
		cs := &a.perClaim[ci]
		for si := range cs.slots {
			for _, r := range cs.slots[si].alts {
				sig.classes = append(sig.classes, r.class)
				text = append(text, r.class.Name...)
				text = append(text, 0)
				for _, sel := range r.selectors {
					text = append(text, sel.CEL.Expression...)
					text = append(text, 0)
				}
				text = append(text, 1)
			}
			text = append(text, 2)
		}
		for _, con := range cs.constraints {
			sig.attrs = append(sig.attrs, con.attribute())
			text = append(text, con.attribute()...)
			text = append(text, 0)
		}
		text = append(text, 3)
	}
	sig.text = string(text)
	cache := s.classes
	cache.mu.Lock()
	defer cache.mu.Unlock()
	for i, old := range cache.sigs {
		if old.text == sig.text && slices.Equal(old.classes, sig.classes) {
			// Most recently used first.
			copy(cache.sigs[1:i+1], cache.sigs[:i])
			cache.sigs[0] = old
			return old
		}
	}
	sig.pools, sig.keys = map[*pool]poolClass{}, map[string]uint32{}
	sig.reads, sig.readsKnown = a.selectorReads()
	if len(cache.sigs) < maxSigs {
		cache.sigs = append(cache.sigs, nil)
	}
	copy(cache.sigs[1:], cache.sigs)
	cache.sigs[0] = sig
	return sig
}

// poolClass returns the class of a pool under the signature: node-local pools with the same id are
// equal, slice by slice and device by device, in all a check of the call reads but names and the
// allocated state. false: a selector failed on one of its devices (the search reports the error).
func (s *Snapshot) poolClass(sig *classSig, a *allocation, p *pool) (poolClass, bool) {
	if sc := p.class.Load(); sc != nil && sc.sig == sig {
		return sc.pc, true
	}
	cache := s.classes
	cache.mu.Lock()
	pc, ok := sig.pools[p]
	cache.mu.Unlock()
	if ok {
		p.class.Store(&sigClass{sig: sig, pc: pc})
		return pc, true
	}
	pc = poolClass{owner: poolOwner(p), nodeOps: skipsNodeOps(p)}
	var key string
	if pc.owner == "" {
		pc.comparable = len(p.others) == 0 && !hasPerDevice(p)
	} else if key, ok = a.poolKey(sig, p); !ok {
		return poolClass{}, false
	}
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if pc.owner != "" {
		id, ok := sig.keys[key]
		if !ok {
			id = uint32(len(sig.keys))
			sig.keys[key] = id
		}
		pc.id = id
	}
	// Pools are replaced when their slices change; a cache that outgrows what a fleet holds is
	// dropped rather than kept with pools no node sees any more.
	if len(sig.pools) > 4*len(a.st.nodeSlices)+64 {
		clear(sig.pools)
	}
	sig.pools[p] = pc
	p.class.Store(&sigClass{sig: sig, pc: pc})
	return pc, true
}

// sigClass is a pool's class under one signature, kept on the pool for the signature asked last: a
// filter pass over a fleet finds it there without a lookup.
type sigClass struct {
	sig *classSig
	pc  poolClass
}

// deviceVerdicts are the selector verdicts of every request of the call on d, one byte each. Where the
// selectors' reads are known, devices that agree on what they read share them (a.readVerdicts): on a
// fleet of one GPU model the selectors run once, not on every device. false: a selector failed.
func (a *allocation) deviceVerdicts(sig *classSig, d *deviceEntry) (string, bool) {
	var key []byte
	if sig.readsKnown && !d.perDevice {
		var ok bool
		key, ok = readKey(a.readBuf[:0], sig.reads, d)
		a.readBuf = key[:0]
		if ok {
			if v, found := a.readVerdicts[string(key)]; found {
				return v, true
			}
		} else {
			key = nil
		}
	}
	var v []byte
	for ci := range a.perClaim {
		for si := range a.perClaim[ci].slots {
			for _, r := range a.perClaim[ci].slots[si].alts {
				ok, err := a.selectable(r, d)
				if err != nil {
					return "", false
				}
				v = append(v, boolByte(ok))
			}
		}
	}
	if key != nil {
		if a.readVerdicts == nil {
			a.readVerdicts = map[string]string{}
		}
		a.readVerdicts[string(key)] = string(v)
	}
	return string(v), true
}

// poolKey is the content of a node-local pool as the call's checks read it, names left out: the pool's
// state (incomplete, invalid, binding conditions), its counter sets, and per slice and device the
// published content but for names and attributes, the effective taints, the selector verdicts of every
// request of the call and the attributes its constraints compare.
func (a *allocation) poolKey(sig *classSig, p *pool) (string, bool) {
	b := []byte{boolByte(p.incomplete), boolByte(p.invalid), boolByte(p.binding)}
	c := contentScratches.Get().(*contentScratch)
	b, ok := appendCounterSets(b, p.counterSets, c)
	contentScratches.Put(c)
	if !ok {
		return "", false
	}
	for _, e := range p.slices {
		content, ok := a.s.classes.content(e)
		if !ok {
			return "", false
		}
		b = binary.LittleEndian.AppendUint64(b, content)
		for _, d := range e.devices() {
			verdicts, ok := a.deviceVerdicts(sig, d)
			if !ok {
				return "", false
			}
			b = append(b, verdicts...)
			for _, name := range sig.attrs {
				attr, ok := staticAttribute(d, name)
				b = append(b, boolByte(ok))
				if ok {
					b = appendAttribute(b, &attr)
				}
			}
		}
	}
	return string(b), true
}
