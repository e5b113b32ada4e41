package allocator

import (
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// errResultsExceeded reports that the devices still to allocate for a claim no longer fit within the
// 32 results a claim may hold; the search treats it like the Kubernetes allocator does: a request with
// subrequests tries its next alternative, a later claim counts as "does not fit".
var errResultsExceeded = errors.New("allocation results limit exceeded")

// position is where the search stands: a claim, a request in it, a subrequest, and the number of
// devices already found for that request.
type position struct {
	claim, req, sub, device int
}

// location is where the device scan for the next device of the same request resumes, so that one
// request never takes the same combination twice in another order.
type location struct {
	pool, slice, device int
	// order is the request's candidates in the order of a strategy other than FirstFit, and rank the
	// index in it where the scan resumes (see allocateRanked).
	order []location
	rank  int
}

// allocateOne is the depth-first search of the Kubernetes allocator: it finds one device for the request
// at pos and recurses for the rest, undoing and trying the next device when the rest fails. allocSub is
// true when pos.sub has already been chosen by the caller.
func (a *allocation) allocateOne(pos position, allocSub bool, start location) (bool, error) {
	done, err := a.allocateStep(pos, allocSub, start)
	// A request slot (all its alternatives) failed: when nothing before it can change that, no other
	// choice before it is worth trying.
	// Once a placement is found (see topoBest), a branch fails for being no closer, not for not fitting,
	// and the choices before it matter.
	if err == nil && !done && !a.found && pos.device == 0 && !allocSub && pos.claim < len(a.claims) &&
		pos.req < len(a.perClaim[pos.claim].slots) && a.independent(pos.claim, pos.req) {
		return false, errDoomed
	}
	return done, err
}

// allocateStep is one step of allocateOne.
func (a *allocation) allocateStep(pos position, allocSub bool, start location) (bool, error) {
	a.steps++
	if a.found {
		// Improving a found placement: its own budget, and the bound (see topoStep).
		if ok, err := a.topoStep(); !ok || err != nil {
			return false, err
		}
	} else if budget := a.s.opts.StepBudget; budget > 0 && a.steps > budget {
		return false, fmt.Errorf("%w after %d steps", ErrSearchBudget, budget)
	}
	if a.ctx.Err() != nil {
		return false, aborted(a.ctx)
	}
	if pos.claim >= len(a.claims) {
		if a.improving() {
			return a.topoLeaf(), nil
		}
		return true, nil
	}
	cs := &a.perClaim[pos.claim]
	if pos.req >= len(cs.slots) {
		ok, err := a.allocateOne(position{claim: pos.claim + 1}, false, location{})
		if errors.Is(err, errResultsExceeded) {
			return false, nil
		}
		return ok, err
	}
	slot := &cs.slots[pos.req]

	if !allocSub && slot.hasSubs {
		allExceeded := true
		for si := range slot.alts {
			// Improving a found placement keeps its alternatives: closeness never trades a
			// subrequest the claim prefers for a later one.
			if a.found && si != a.topoBest.alt(pos.claim, pos.req) {
				continue
			}
			p := pos
			p.sub = si
			// Set before searching on: a placement found further down (see topoLeaf) records it.
			slot.selected = si
			ok, err := a.allocateOne(p, true, location{})
			if errors.Is(err, errResultsExceeded) {
				continue
			}
			allExceeded = false
			if err != nil {
				return false, err
			}
			if ok {
				return true, nil
			}
		}
		if allExceeded {
			return false, errResultsExceeded
		}
		return false, nil
	}

	r := slot.alts[pos.sub]
	all := r.mode == resourceapi.DeviceAllocationModeAll
	if all && len(r.allDevices) == 0 {
		return false, nil
	}
	if pos.device >= r.numDevices {
		return a.allocateOne(position{claim: pos.claim, req: pos.req + 1}, false, location{})
	}
	if r.numDevices-pos.device > resourceapi.AllocationResultsMaxSize-len(cs.results) {
		return false, errResultsExceeded
	}
	if len(r.limits) > 0 && !a.quotaRoom(r) {
		// Every device would be refused for the quota: no need to scan them.
		return false, nil
	}
	next := pos
	next.device++

	if all {
		c := r.allDevices[pos.device]
		ok, undo, err := a.allocateDevice(pos, r, c, true)
		if err != nil || !ok {
			return false, err
		}
		done, err := a.allocateOne(next, allocSub, location{})
		if err != nil || !done {
			a.rollback(undo)
			return false, err
		}
		return true, nil
	}

	if a.ranks() {
		return a.allocateRanked(pos, allocSub, r, next, start)
	}
	// Devices that failed here: an interchangeable one would fail the same way (symmetry), so the
	// search never tries permutations of equivalent devices. Upstream tries them and fails too, so the
	// answer is the same.
	failed := a.failuresAt(pos)
	for pi := start.pool; pi < len(a.pools); pi++ {
		p := a.pools[pi]
		if p.incomplete || p.invalid {
			continue
		}
		si0 := 0
		if pi == start.pool {
			si0 = start.slice
		}
		for si := si0; si < len(p.slices); si++ {
			e := p.slices[si]
			di0 := 0
			if pi == start.pool && si == start.slice {
				di0 = start.device
			}
			devs := e.devices()
			for di := di0; di < len(devs); di++ {
				d := devs[di]
				if failed.cover(a, d) {
					continue
				}
				done, tried, err := a.tryDevice(pos, next, allocSub, r, candidate{dev: d, pool: p}, true,
					location{pool: pi, slice: si, device: di + 1})
				if err != nil || done {
					return done, err
				}
				if tried {
					failed.add(a, d)
				}
			}
		}
	}
	return false, nil
}

// tryDevice is one step of every device scan: unless the request cannot take c.dev (in use, its selectors
// false — checkSelectors is false when a strategy has evaluated them already —, or its capacity too small), it
// takes the device, searches the rest of the claims from resume, and gives the device back when the rest
// fails. tried reports that the device was taken and the rest failed with it.
func (a *allocation) tryDevice(pos, next position, allocSub bool, r *request, c candidate, checkSelectors bool, resume location) (done, tried bool, err error) {
	d := c.dev
	if r.adminAccess && a.taken.byClaim(d, pos.claim) || !r.adminAccess && a.inUse(d) {
		return false, false, nil
	}
	if checkSelectors {
		if ok, err := a.selectable(r, d); err != nil || !ok {
			return false, false, err
		}
	}
	if a.f.DRAConsumableCapacity {
		if ok, _, err := a.capacityFits(r, d); err != nil || !ok {
			return false, false, err
		}
	}
	ok, undo, err := a.allocateDevice(pos, r, c, false)
	if err != nil || !ok {
		return false, false, err
	}
	done, err = a.allocateOne(next, allocSub, resume)
	if err == nil && done {
		return true, true, nil
	}
	a.rollback(undo)
	if a.greedy && err == nil {
		err = errStepBack
	}
	return false, true, err
}

// inUse: allocated exclusively in the cluster or taken by a claim of this call.
func (a *allocation) inUse(d *deviceEntry) bool {
	return a.inClusterUse(d) || a.taken.has(d)
}

// inClusterUse: the device is allocated exclusively in the cluster. Hashing a device ID costs more than
// the rest of a candidate's checks, so it is asked once per slice and allocated state (see sliceUsage)
// rather than once per check, and not at all when nothing is in use.
func (a *allocation) inClusterUse(d *deviceEntry) bool {
	if len(a.st.inUse) == 0 {
		return false
	}
	u := d.slice.caches.usage.Load()
	if u == nil || !u.mark.holdsIn(a.st) {
		u = a.sliceUsage(d.slice, u)
	}
	return u.has(d.idx)
}

// sliceUsage is which devices of a slice entry the allocated state holds exclusively, as a bitset by
// device index whose first word lies in the struct: a slice of up to 64 devices is answered from one
// cache line. mark says which allocated state of the pool it was built for (as counterBase's). It is
// immutable once built.
type sliceUsage struct {
	mark  useMark
	first uint64
	rest  []uint64 // devices from index 64 on; nil when none of them is in use
}

func (u *sliceUsage) has(i int) bool {
	if i < 64 {
		return u.first&(1<<i) != 0
	}
	i -= 64
	return i/64 < len(u.rest) && u.rest[i/64]&(1<<(i%64)) != 0
}

// sliceUsage returns the usage of e for the call's state and keeps it on the entry: old (the usage
// kept, or nil) noted for the state when the pool's allocated devices did not change since it was
// built, else a new one. Entries are shared between a snapshot and its forks, so the value is swapped
// atomically; concurrent calls may build it twice, with the same answer.
func (a *allocation) sliceUsage(e *sliceEntry, old *sliceUsage) *sliceUsage {
	mark := markIn(a.st, e.pool)
	if old != nil && old.mark.stamp == mark.stamp {
		noted := *old
		noted.mark = mark
		e.caches.usage.Store(&noted)
		return &noted
	}
	u := &sliceUsage{mark: mark}
	devs := e.devices()
	for i, d := range devs {
		if a.st.inUse[d.id] == 0 {
			continue
		}
		if i < 64 {
			u.first |= 1 << i
			continue
		}
		j := i - 64
		if u.rest == nil {
			u.rest = make([]uint64, (len(devs)-64+63)/64)
		}
		u.rest[j/64] |= 1 << (j % 64)
	}
	e.caches.usage.Store(u)
	return u
}

// takenSet is the exclusive devices taken in one call, with the claim taking each. A call usually takes
// few devices, so a list searched linearly beats hashing; past maxTakenList entries (a large gang) a
// count per device answers has as well. Entries are compared by pointer: within one call a device ID has
// exactly one entry (a pool whose slices repeat a device name is invalid and not searched).
type takenSet struct {
	list  []takenDevice
	count map[*deviceEntry]int // used when len(list) passed maxTakenList; nil or empty otherwise
}

const maxTakenList = 32

type takenDevice struct {
	dev   *deviceEntry
	claim int
}

func (t *takenSet) has(d *deviceEntry) bool {
	if len(t.count) > 0 {
		return t.count[d] > 0
	}
	for i := range t.list {
		if t.list[i].dev == d {
			return true
		}
	}
	return false
}

func (t *takenSet) byClaim(d *deviceEntry, claim int) bool {
	for i := range t.list {
		if t.list[i].dev == d && t.list[i].claim == claim {
			return true
		}
	}
	return false
}

func (t *takenSet) add(d *deviceEntry, claim int) {
	t.list = append(t.list, takenDevice{dev: d, claim: claim})
	switch {
	case len(t.count) > 0:
		t.count[d]++
	case len(t.list) > maxTakenList:
		if t.count == nil {
			t.count = map[*deviceEntry]int{}
		}
		for _, x := range t.list {
			t.count[x.dev]++
		}
	}
}

// remove drops the newest entry for d and claim (the search undoes in reverse order).
func (t *takenSet) remove(d *deviceEntry, claim int) {
	for i := len(t.list) - 1; i >= 0; i-- {
		if t.list[i].dev == d && t.list[i].claim == claim {
			t.list = append(t.list[:i], t.list[i+1:]...)
			break
		}
	}
	if len(t.count) > 0 {
		if t.count[d] <= 1 {
			delete(t.count, d)
		} else {
			t.count[d]--
		}
		if len(t.list) <= maxTakenList {
			clear(t.count)
		}
	}
}

func (t *takenSet) reset() {
	clear(t.list)
	t.list = t.list[:0]
	clear(t.count)
}

// sharesInUse: the device already serves shares, in the cluster or in this call; its counters are then
// already consumed.
func (a *allocation) sharesInUse(id DeviceID) bool {
	return (len(a.st.shares) > 0 && a.st.shares[id] > 0) || a.sharedNow(id)
}

// undo records what allocateDevice changed, so rollback can restore it.
type undo struct {
	pos         position
	c           candidate
	req         *request
	counters    bool
	constraints int
	taken       bool
	share       bool
	// quota: charged to the owner's quota. Beside the other flags, in their word's padding: undo is
	// returned by value for every device tried, and one more word is a cost without quota too.
	quota         bool
	consumed      map[resourceapi.QualifiedName]resource.Quantity
	resultAdded   bool
	resultsBefore int
}

// allocateDevice tries to add one device for a request: checks that need the search state (in use, node
// operations, counters, taints, constraints, capacity) and, when all pass, records the device. With must
// set (allocationMode All) a broken constraint is an error, as in Kubernetes.
func (a *allocation) allocateDevice(pos position, r *request, c candidate, must bool) (bool, undo, error) {
	d := c.dev
	cs := &a.perClaim[pos.claim]
	u := undo{pos: pos, c: c, req: r, resultsBefore: len(cs.results)}
	multi := a.f.DRAConsumableCapacity && d.multi
	if !multi && r.adminAccess && a.taken.byClaim(d, pos.claim) {
		return false, u, nil
	}
	if !r.adminAccess && a.inUse(d) {
		return false, u, nil
	}
	if !a.nodeOpsAllowed(d) {
		return false, u, nil
	}
	if !a.f.DRAPartitionableDevices && d.counters {
		return false, u, nil
	}
	// A device that already serves shares has had its counters consumed by the first share.
	skipCounters := multi && a.sharesInUse(d.id)
	if !skipCounters && d.counters {
		t := a.tally(c.pool)
		if !t.fits(d) {
			return false, u, nil
		}
		t.add(d)
		u.counters = true
	}
	if a.f.DRADeviceTaints && blocked(d.taints, r.tolerations) {
		a.rollback(u)
		return false, u, nil
	}
	for _, con := range cs.constraints {
		ok, err := con.add(r, d)
		if err != nil {
			a.rollback(u)
			return false, u, err
		}
		if !ok {
			a.rollback(u)
			if must {
				return false, u, nodeInputError(cs.name(), r.path(), fmt.Errorf("cannot add device %s because a claim constraint would not be satisfied", d.id))
			}
			if a.greedy {
				// The first descent is for devices that agree as they come; past a disagreement,
				// counting (failFast's bounds) decides faster than scanning on.
				return false, u, errStepBack
			}
			return false, u, nil
		}
		u.constraints++
	}
	if !multi {
		a.taken.add(d, pos.claim)
		u.taken = true
	}
	res := deviceResult{req: r, dev: d}
	if a.f.DRAConsumableCapacity {
		ok, consumed, err := a.capacityFits(r, d)
		if err != nil || !ok {
			a.rollback(u)
			return false, u, err
		}
		if multi && len(r.limits) > 0 && !a.quotaFits(r, d, true, consumed) {
			a.rollback(u)
			return false, u, nil
		}
		if multi {
			// The share's ID is drawn once the placement is final (see drawShareIDs).
			a.ownLedger(d).Add(consumed)
			if a.shares == nil {
				a.shares = map[DeviceID]int{}
			}
			a.shares[d.id]++
			u.share = true
			u.consumed = consumed
			res.shareID = &pendingShareID
			if len(consumed) > 0 {
				res.consumed = consumed
			}
		}
	}
	if len(r.limits) > 0 {
		// A share's charge was checked with its consumption above; an exclusive device's here.
		if !multi && !a.quotaFits(r, d, false, nil) {
			a.rollback(u)
			return false, u, nil
		}
		a.chargeQuota(r, d, multi, u.consumed, 1)
		u.quota = true
	}
	cs.results = append(cs.results, res)
	u.resultAdded = true
	if a.found {
		a.topoBest.add(d)
	}
	return true, u, nil
}

// rollback undoes allocateDevice, in reverse order.
func (a *allocation) rollback(u undo) {
	cs := &a.perClaim[u.pos.claim]
	d := u.c.dev
	if u.resultAdded {
		cs.results = cs.results[:u.resultsBefore]
		if a.found {
			a.topoBest.remove(d)
		}
	}
	if u.quota {
		a.chargeQuota(u.req, d, u.share, u.consumed, -1)
	}
	if u.share {
		a.ownLedger(d).Remove(u.consumed)
		addCount(a.shares, d.id, -1)
	}
	if u.taken {
		a.taken.remove(d, u.pos.claim)
	}
	for i := u.constraints - 1; i >= 0; i-- {
		cs.constraints[i].remove(u.req, d)
	}
	if u.counters {
		a.tally(u.c.pool).remove(d)
	}
}

// nodeOpsAllowed: the device may be allocated on the node as far as skipNodeOperations goes. Only the
// experimental implementation knows the field; the others allocate such devices as if it were not set.
func (a *allocation) nodeOpsAllowed(d *deviceEntry) bool {
	return !d.skipNodeOps || a.f.Implementation() != implExperimental ||
		a.f.DRAOptionalNodeOperations && nodeDeclares(a.node.Status.DeclaredFeatures, "DRAOptionalNodeOperations")
}

func nodeDeclares(features []string, name string) bool {
	for _, f := range features {
		if f == name {
			return true
		}
	}
	return false
}

// errStepBack ends the first descent of greedyDescent where the search would try another device.
var errStepBack = errors.New("the first descent failed")

// greedyApplies: the call is one request (plain or with alternatives, none for all devices) of one
// claim, searched first-fit. Its first descent then takes the first devices of the first alternative
// that has enough (and, under the claim's constraints, that agree with the devices taken before them):
// one pass over the candidates, which failFast's count visits too, so trying that descent first saves
// the count, and the constraints' bounds, whenever it succeeds. An alternative of which no device can be
// taken is passed over without stepping back, as in the full search; one that takes some devices and
// then runs out steps back.
func (a *allocation) greedyApplies() bool {
	if a.ranks() || len(a.perClaim) != 1 {
		return false
	}
	cs := &a.perClaim[0]
	if len(cs.slots) != 1 {
		return false
	}
	for _, r := range cs.slots[0].alts {
		if r.mode == resourceapi.DeviceAllocationModeAll || r.numDevices <= 0 {
			return false
		}
	}
	return true
}

// greedyDescent runs the search until it would step back (try another device for a device it took) and
// reports whether it succeeded without. Any other outcome, an error included, leaves the answer to
// failFast and the full search, which start from the same state: the descent gives back what it took,
// and its steps are not counted. When the descent succeeds, the full search would have found the same
// devices: failFast finds at least as many candidates as the descent took (it counts against the
// allocated state only), so it does not decide, and the search's first descent is this one.
func (a *allocation) greedyDescent() bool {
	a.greedy = true
	done, err := a.allocateOne(position{}, false, location{})
	a.greedy = false
	if err == nil && done {
		return true
	}
	a.steps = 0
	a.taken.reset()
	a.resetTallies()
	a.resetQuota()
	clear(a.shares)
	clear(a.ledgers)
	clear(a.owned)
	for i := range a.perClaim {
		a.perClaim[i].results = a.perClaim[i].results[:0]
	}
	return false
}
