package allocator

import (
	"errors"

	resourceapi "k8s.io/api/resource/v1"
)

// DefaultTopologySteps is the improvement budget of a [Topology] that names none: the search steps a
// call may spend, after it found the first placement of its claims, looking for a closer one. On the
// DGX-like nodes of fuzz.TopologyClusterGen (8 GPUs, 8 NICs, 4 PCIe roots, 2 NUMA nodes, partly used)
// the whole search for the closest placement of a pod's claims took at most 218 steps over 500 drawn
// pods (the first placement alone at most 23), so the default leaves room for larger nodes.
const DefaultTopologySteps = 2000

// errTopoBudget ends the search for a closer placement when Topology.Steps are spent.
var errTopoBudget = errors.New("topology improvement budget spent")

// pendingShareID marks a share of a placement the search holds: its share ID is drawn only once the
// placement is the one returned (see drawShareIDs), so that the placements a search tries and drops draw
// no IDs from Options.ShareIDs, and the IDs a call draws do not depend on the path its search took.
var pendingShareID string

// topoBest is the search for the closest placement (see Topology): the measure of the placement the
// search holds now, kept as devices are taken and given back, and the best placement found so far.
// It lives in the call's scratch, its buffers kept between calls.
type topoBest struct {
	// on: the call improves on its first placement (set by startTopology, for Allocate and its
	// variants with a Topology preference; not for Fits, Explain or a search again without quota).
	on    bool
	attrs []resourceapi.FullyQualifiedName
	// budget is the steps the improvement may take, from is a.steps when the first placement was found;
	// cut: the improvement stopped before it had searched every placement (budget spent, or an error at
	// a device that the first placement's search never met).
	budget, from int
	cut          bool
	// holding: the search ended holding the best placement (it returned from a leaf at the bound).
	holding bool
	// The devices' domains: dev maps a device to its row in doms (one domain id per attribute); domain
	// ids are interned by key, a device without the attribute gets an id of its own (none).
	dev    map[*deviceEntry]int
	doms   []int32
	intern map[topoKey]int32
	none   []bool
	// count is, per domain id, how many devices of the placement held now lie in it (a device with
	// several shares counts once per share); distinct is, per attribute, how many domain ids have a
	// count above zero: the measure of the placement held now.
	count    []int32
	distinct []int
	best     []int
	// lb is, per attribute, the fewest domains any placement the improvement may find can span (see
	// bound); size and widest are bound's scratch.
	lb       []int
	size     []int32
	widest   []int32
	saved    []savedResult
	selected []int // per claim, per request slot: the alternative of the best placement
	slot0    []int // per claim: its first slot's index in selected
}

// topoKey interns a domain of one attribute; dev is set only for a device without the attribute, whose
// place is unknown and so a domain of its own.
type topoKey struct {
	level int
	dom   domain
	dev   *deviceEntry
}

// savedResult is one device of the best placement, with its request named by position so that it
// survives a second search of the call (see compareUnpreferred).
type savedResult struct {
	claim, req, sub int
	res             deviceResult
}

// reset drops what points into the snapshot, keeping the buffers.
func (t *topoBest) reset() {
	clear(t.dev)
	clear(t.intern)
	clear(t.saved)
	t.saved, t.doms, t.none, t.count = t.saved[:0], t.doms[:0], t.none[:0], t.count[:0]
	t.distinct, t.best, t.selected, t.slot0 = t.distinct[:0], t.best[:0], t.selected[:0], t.slot0[:0]
	t.lb, t.size, t.widest = t.lb[:0], t.size[:0], t.widest[:0]
	t.attrs, t.on, t.cut, t.holding = nil, false, false, false
}

// start prepares the measure for a call with these attributes and improvement budget.
func (t *topoBest) start(attrs []resourceapi.FullyQualifiedName, budget int) {
	t.reset()
	t.on, t.attrs, t.budget = true, attrs, budget
	if t.dev == nil {
		t.dev, t.intern = map[*deviceEntry]int{}, map[topoKey]int32{}
	}
	t.distinct = grow(t.distinct, len(attrs))
	clear(t.distinct)
}

// row returns the domain ids of d, one per attribute, interning them on first use.
func (t *topoBest) row(d *deviceEntry) []int32 {
	n := len(t.attrs)
	if i, ok := t.dev[d]; ok {
		return t.doms[i : i+n]
	}
	i := len(t.doms)
	t.dev[d] = i
	for k, name := range t.attrs {
		dom := domainOf(d, name, d.slice.column(name))
		key := topoKey{level: k, dom: dom}
		if dom.kind == 0 {
			key.dev = d
		}
		id, ok := t.intern[key]
		if !ok {
			id = int32(len(t.count))
			t.intern[key] = id
			t.count = append(t.count, 0)
			t.none = append(t.none, dom.kind == 0)
		}
		t.doms = append(t.doms, id)
	}
	return t.doms[i : i+n]
}

// add counts d into the placement held now; remove takes it out.
func (t *topoBest) add(d *deviceEntry) {
	for k, id := range t.row(d) {
		if t.count[id] == 0 {
			t.distinct[k]++
		}
		t.count[id]++
	}
}

func (t *topoBest) remove(d *deviceEntry) {
	for k, id := range t.row(d) {
		t.count[id]--
		if t.count[id] == 0 {
			t.distinct[k]--
		}
	}
}

// countAll sets the measure to that of the devices the call's claims hold now.
func (t *topoBest) countAll(a *allocation) {
	clear(t.count)
	clear(t.distinct)
	for ci := range a.claims {
		for _, dr := range a.perClaim[ci].results {
			t.add(dr.dev)
		}
	}
}

// closer reports whether the measure x is smaller than y: compared attribute by attribute, outermost
// first, the first that differs decides.
func closer(x, y []int) bool {
	for k := range x {
		if x[k] != y[k] {
			return x[k] < y[k]
		}
	}
	return false
}

// atBound: the best placement spans as few domains of every attribute as any placement can (see
// bound; one, or none when it holds no device), so no placement is closer.
func (t *topoBest) atBound() bool {
	for k, n := range t.best {
		if n > 1 && (k >= len(t.lb) || n > t.lb[k]) {
			return false
		}
	}
	return true
}

// bound sets lb after the first placement, of n devices: every placement the improvement may find takes
// the same alternatives, so n devices again, all distinct where no device takes shares and no request
// has admin access (then a device is taken once per call), and a domain holds at most the devices the
// node publishes in it; so a placement spans at least ceil(n / widest) domains of an attribute whose
// widest domain has that many devices. Four GPUs on a node of two GPUs per PCIe root span two roots:
// a placement there is known closest without searching on. Where a device may count twice, lb stays
// empty (one domain).
func (t *topoBest) bound(a *allocation) {
	t.lb = t.lb[:0]
	n := len(t.saved)
	if n == 0 {
		return
	}
	for ci := range a.claims {
		for _, slot := range a.perClaim[ci].slots {
			for _, r := range slot.alts {
				if r.adminAccess {
					return
				}
			}
		}
	}
	t.widest = grow(t.widest, len(t.attrs))
	clear(t.widest)
	for _, p := range a.pools {
		if p.incomplete || p.invalid {
			continue
		}
		for _, e := range p.slices {
			for _, d := range e.devices() {
				if a.f.DRAConsumableCapacity && d.multi {
					return
				}
				for k, id := range t.row(d) {
					for int(id) >= len(t.size) {
						t.size = append(t.size, 0)
					}
					t.size[id]++
					t.widest[k] = max(t.widest[k], t.size[id])
				}
			}
		}
	}
	for _, w := range t.widest {
		t.lb = append(t.lb, (n+int(w)-1)/max(int(w), 1))
	}
}

// save records the placement the claims hold now as the best.
func (t *topoBest) save(a *allocation) {
	t.best = append(t.best[:0], t.distinct...)
	clear(t.saved)
	t.saved, t.selected, t.slot0 = t.saved[:0], t.selected[:0], t.slot0[:0]
	for ci := range a.claims {
		cs := &a.perClaim[ci]
		t.slot0 = append(t.slot0, len(t.selected))
		for _, dr := range cs.results {
			t.saved = append(t.saved, savedResult{claim: ci, req: dr.req.reqIdx, sub: dr.req.subIdx, res: dr})
		}
		for si := range cs.slots {
			t.selected = append(t.selected, cs.slots[si].selected)
		}
	}
}

// alt is the alternative the best placement (and so every placement the improvement tries) takes for
// request slot ri of claim ci.
func (t *topoBest) alt(ci, ri int) int { return t.selected[t.slot0[ci]+ri] }

// sameAlternatives: the claims hold now the alternatives of the best placement.
func (t *topoBest) sameAlternatives(a *allocation) bool {
	for ci := range a.claims {
		cs := &a.perClaim[ci]
		for si := range cs.slots {
			if cs.slots[si].hasSubs && cs.slots[si].selected != t.alt(ci, si) {
				return false
			}
		}
	}
	return true
}

// restore puts the best placement back into the claims' results.
func (t *topoBest) restore(a *allocation) {
	for ci := range a.claims {
		a.perClaim[ci].results = a.perClaim[ci].results[:0]
	}
	for _, s := range t.saved {
		cs := &a.perClaim[s.claim]
		dr := s.res
		dr.req = cs.slots[s.req].alts[s.sub]
		cs.results = append(cs.results, dr)
	}
	k := 0
	for ci := range a.claims {
		cs := &a.perClaim[ci]
		for si := range cs.slots {
			cs.slots[si].selected = t.selected[k]
			k++
		}
	}
}

// improving: the search looks for the closest placement of the claims (see topoBest.on).
func (a *allocation) improving() bool { return a.topoBest.on }

// startTopology prepares the call's measure before it searches: for Allocate and its variants where the
// snapshot has a Topology preference.
func (a *allocation) startTopology() {
	a.found, a.topoBest.on = false, false
	if !a.prefersTopology() {
		return
	}
	budget := a.s.opts.Topology.Steps
	if budget == 0 {
		budget = DefaultTopologySteps
	}
	a.topoBest.start(a.s.opts.Topology.attributes(), budget)
}

// topoLeaf is the search's end of a placement of every claim: the first one is kept, and from then on
// a closer one replaces it. It reports whether the search is done: the best placement is the one the
// claims hold now and no placement can be closer. Otherwise the search goes on as after a failure, and
// topoStep cuts every branch that cannot lead to a closer placement.
func (a *allocation) topoLeaf() bool {
	t := &a.topoBest
	if !a.found {
		a.found = true
		t.from = a.steps
		t.countAll(a)
		t.save(a)
		if t.atBound() {
			return true
		}
		t.bound(a)
		return t.atBound()
	}
	// topoStep let only closer placements through.
	t.save(a)
	return t.atBound()
}

// topoStep is the check at every step of the search once a placement was found: the budget, and the
// bound. Devices are only added along a branch, so the measure of the placement held now can only grow
// there; where it is no longer smaller than the best, no placement of the branch is closer.
func (a *allocation) topoStep() (bool, error) {
	t := &a.topoBest
	if a.steps-t.from > t.budget {
		return false, errTopoBudget
	}
	return closer(t.distinct, t.best), nil
}

// topoEnded turns the end of a search that found a placement into the call's answer: the claims fit,
// whatever ended the improvement (the budget, or an error at a device that another placement met and
// the first did not), unless the context ended.
func (a *allocation) topoEnded(done bool, err error) (bool, error) {
	a.topoBest.holding = done && err == nil
	if err != nil && !errors.Is(err, errResultsExceeded) {
		if a.ctx.Err() != nil {
			return false, err
		}
		a.topoBest.cut = true
	}
	return true, nil
}

// finishTopology makes the best placement the one the claims hold: after a search that ended without
// holding it, the saved one; when the improvement was cut short, the placement the call finds without
// the preference if that one is closer (so that the preference never does worse than none).
func (a *allocation) finishTopology() error {
	t := &a.topoBest
	if !t.holding {
		t.restore(a)
	}
	if t.cut {
		if err := a.compareUnpreferred(); err != nil {
			return err
		}
	}
	return nil
}

// compareUnpreferred searches the claims again in the strategy's order without the preference (as Fits
// does), with Options.StepBudget, and keeps that placement where it takes the same alternatives and is
// closer than the best found.
// Where that search fails (its budget, an error at a device) the best found stands.
func (a *allocation) compareUnpreferred() error {
	t := &a.topoBest
	prefer := a.prefer
	a.spent += a.steps
	a.clearSearch()
	a.prefer = prefer
	a.fitsOnly = true // no preference: the strategy's order (clearSearch stopped the improvement)
	fits, err := a.search()
	a.fitsOnly = false
	if err != nil && a.ctx.Err() != nil {
		return err
	}
	if err == nil && fits && t.sameAlternatives(a) {
		t.countAll(a)
		if closer(t.distinct, t.best) {
			return nil
		}
	}
	// The second search prepared the claims again; the best placement is put back into them.
	t.restore(a)
	return nil
}

// sameTopology: x and y lie in the same domain of every attribute, or both have none (each a domain of
// its own, which swapping them maps onto each other). Once a placement is found, devices are
// interchangeable for the search only if they also agree here, as the measure tells them apart.
func (a *allocation) sameTopology(x, y *deviceEntry) bool {
	t := &a.topoBest
	rx, ry := t.row(x), t.row(y)
	for k := range rx {
		if rx[k] != ry[k] && !(t.none[rx[k]] && t.none[ry[k]]) {
			return false
		}
	}
	return true
}
