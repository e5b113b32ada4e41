package allocator

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/taints"
)

// filterOrder is the order in which explainDevice applies the filters: first what a device is (its
// pool, the selectors, where it is available), then what the cluster does with it.
var filterOrder = []Reason{
	ReasonPoolIncomplete, ReasonPoolInvalid, ReasonBindingConditions, ReasonClassSelector,
	ReasonRequestSelector, ReasonCELError, ReasonNotOnNode, ReasonAllocated, ReasonCapacity,
	ReasonNodeOperations, ReasonCounters, ReasonCompatibilityGroup, ReasonTaint,
}

// explain runs the search as Allocate does and then the explanation pass.
func (a *allocation) explain() (*Explanation, error) {
	e := &Explanation{Node: a.node.Name}
	fits, err := a.search()
	e.Steps = a.steps
	gaveUp := false
	switch {
	case errors.Is(err, ErrSearchBudget):
		gaveUp = true
	case err != nil && isEvalError(err):
		// Reported per device below; the claims must be prepared for that.
		if err := a.reprepare(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case !fits && a.quotaRefused():
		// Fitting the node but not the quota is its own answer: the counts are those of the search
		// without quota, and the limits say why the claims do not fit.
		exceeded, free, err := a.quotaExceeded()
		if err != nil {
			return nil, err
		}
		e.Steps = a.spent + a.steps
		if free && len(exceeded) > 0 {
			out, err := a.explainSearched(e, true, false)
			if err != nil {
				return nil, err
			}
			out.Fits, out.Quota = false, exceeded
			return out, nil
		}
		return a.explainSearched(e, free, false)
	}
	return a.explainSearched(e, fits && err == nil, gaveUp)
}

// explainSearched is the explanation pass after the search decided fits (or gave up).
func (a *allocation) explainSearched(e *Explanation, fits, gaveUp bool) (*Explanation, error) {
	e.Fits = fits
	// Count against the cluster's state only: a successful search leaves its choices recorded.
	a.taken.reset()
	clear(a.shares)
	clear(a.ledgers)
	clear(a.owned)
	clear(a.counters)
	a.resetTallies()

	x := explainer{a: a}
	for _, p := range a.pools {
		if p.incomplete || p.invalid {
			e.Pools = append(e.Pools, PoolError{Pool: p.id, Incomplete: p.incomplete, Reason: p.invalidReason, Devices: a.poolDevices(p)})
		}
	}
	x.pools = e.Pools
	for ci := range a.perClaim[:len(a.claims)] {
		cs := &a.perClaim[ci]
		ce := ClaimExplanation{Claim: cs.claim.Namespace + "/" + cs.claim.Name}
		for ri := range cs.slots {
			for _, r := range cs.slots[ri].alts {
				re, cands, err := x.request(r)
				if err != nil {
					return nil, err
				}
				ce.Requests = append(ce.Requests, re)
				x.reqs = append(x.reqs, explained{r: r, re: &ce.Requests[len(ce.Requests)-1], cands: cands})
			}
		}
		e.Claims = append(e.Claims, ce)
	}
	// The pointers into ce.Requests may have moved while appending: point them at the final slices.
	k := 0
	for ci := range e.Claims {
		for ri := range e.Claims[ci].Requests {
			x.reqs[k].re = &e.Claims[ci].Requests[ri]
			k++
		}
	}
	if e.Fits {
		return e, nil
	}
	// The obstacles are counted without searching, so a search that gave up still gets them.
	obs, err := x.obstacles()
	if err != nil {
		return nil, err
	}
	e.Obstacles = obs
	switch {
	case gaveUp:
		e.Obstacles = append(e.Obstacles, Obstacle{Reason: ReasonSearchGaveUp, Steps: e.Steps})
	case len(obs) == 0 && !x.anyShort():
		e.Obstacles = append(e.Obstacles, Obstacle{Reason: ReasonNoCombination, Steps: e.Steps})
	}
	return e, nil
}

// reprepare prepares the claims again after a search that stopped on a failing selector, which may have
// stopped before every claim was prepared.
func (a *allocation) reprepare() error {
	for i := range a.claims {
		if err := a.prepareClaim(i); err != nil {
			return err
		}
	}
	return nil
}

// explainer is the state of one explanation pass.
type explainer struct {
	a     *allocation
	pools []PoolError
	reqs  []explained
}

// explained is a request with its explanation and its candidates.
type explained struct {
	r     *request
	re    *RequestExplanation
	cands []candidate
}

// request counts the devices of the node for one request or subrequest.
func (x *explainer) request(r *request) (RequestExplanation, []candidate, error) {
	a := x.a
	cs := &a.perClaim[r.claimIdx]
	re := RequestExplanation{Request: r.fullName(), Field: r.path(), Class: r.class.Name, Needs: r.numDevices,
		All: r.mode == resourceapi.DeviceAllocationModeAll}
	type key struct {
		reason Reason
		cause  Cause
	}
	counts := map[key]*Cause{}
	var order []key
	remove := func(reason Reason, c Cause, d DeviceID, n int) {
		k := key{reason: reason, cause: c}
		if got, ok := counts[k]; ok {
			got.Devices += n
			return
		}
		c.Devices, c.Device = n, d
		counts[k] = &c
		order = append(order, k)
	}
	var cands []candidate
	pi := 0
	for _, p := range a.pools {
		if p.incomplete || p.invalid {
			pe := x.pools[pi]
			pi++
			reason := ReasonPoolInvalid
			if p.incomplete {
				reason = ReasonPoolIncomplete
			}
			re.Devices += pe.Devices
			if pe.Devices > 0 {
				remove(reason, Cause{Object: "ResourcePool " + p.id.String(), Message: pe.Error()}, DeviceID{}, pe.Devices)
			}
			continue
		}
		for _, e := range p.slices {
			for _, d := range e.devices() {
				re.Devices++
				reason, c, err := x.device(r, cs, p, d)
				if err != nil {
					return re, nil, err
				}
				if reason == "" {
					cands = append(cands, candidate{dev: d, pool: p})
					continue
				}
				remove(reason, c, d.id, 1)
			}
		}
	}
	re.Candidates = len(cands)
	for _, reason := range filterOrder {
		var f Filter
		for _, k := range order {
			if k.reason == reason {
				c := counts[k]
				f.Removed += c.Devices
				f.Causes = append(f.Causes, *c)
			}
		}
		if f.Removed > 0 {
			f.Reason = reason
			slices.SortStableFunc(f.Causes, func(x, y Cause) int { return cmp.Compare(y.Devices, x.Devices) })
			re.Filters = append(re.Filters, f)
		}
	}
	return re, cands, nil
}

// device applies the filters to one device in filterOrder; "" means the device is a candidate. The checks
// are those of the search (selectable, tryDevice, allocateDevice, failFast's countCandidates), made
// against the cluster's state, one at a time so that the first failing one is known.
func (x *explainer) device(r *request, cs *claimState, p *pool, d *deviceEntry) (Reason, Cause, error) {
	a := x.a
	slice := "ResourceSlice " + d.slice.name()
	if !a.f.BindingConditions() && d.binding {
		return ReasonBindingConditions, Cause{Object: slice}, nil
	}
	for _, class := range []bool{true, false} {
		i, err := a.firstFalseSelector(r, d, class)
		if err != nil {
			var ee *evalError
			if !errors.As(err, &ee) {
				return "", Cause{}, err
			}
			object, field := a.selectorField(r, i, class)
			return ReasonCELError, Cause{Object: object, Field: field, Message: ee.err.Error()}, nil
		}
		if i >= 0 {
			object, field := a.selectorField(r, i, class)
			reason, sels := ReasonRequestSelector, r.selectors
			if class {
				reason, sels = ReasonClassSelector, r.class.Spec.Selectors
			}
			return reason, Cause{Object: object, Field: field, Expression: sels[i].CEL.Expression}, nil
		}
	}
	if d.perDevice {
		ok, err := d.availableOn(a.node)
		if err != nil {
			return "", Cause{}, nodeInputError(slice, "spec.devices.nodeSelector", fmt.Errorf("device %s: node selection: %w", d.id.Device, err))
		}
		if !ok {
			return ReasonNotOnNode, Cause{Object: slice}, nil
		}
	}
	if !r.adminAccess && a.st.inUse[d.id] > 0 {
		return ReasonAllocated, Cause{Object: "ResourceClaim " + x.holder(d.id)}, nil
	}
	if a.f.DRAConsumableCapacity {
		if c, short, err := x.capacity(r, cs, d); err != nil || short {
			return ReasonCapacity, c, err
		}
	}
	if d.skipNodeOps && a.f.Implementation() == implExperimental &&
		(!a.f.DRAOptionalNodeOperations || !nodeDeclares(a.node.Status.DeclaredFeatures, "DRAOptionalNodeOperations")) {
		return ReasonNodeOperations, Cause{Object: slice}, nil
	}
	if d.counters {
		if !a.f.DRAPartitionableDevices {
			return ReasonCounters, Cause{Object: slice}, nil
		}
		if !(a.f.DRAConsumableCapacity && d.multi && a.sharesInUse(d.id)) {
			if reason, c, short := counterShort(a.poolCounters(p), d); short {
				return reason, c, nil
			}
		}
	}
	if a.f.DRADeviceTaints {
		for i := range d.taints {
			if _, ok := taints.Blocking(d.taints[i:i+1], r.tolerations); ok {
				t := d.taints[i]
				object := slice
				if i >= len(d.api.Taints) {
					if names := a.st.taints.RuleNames(d.id); i-len(d.api.Taints) < len(names) {
						object = "DeviceTaintRule " + names[i-len(d.api.Taints)]
					}
				}
				return ReasonTaint, Cause{Object: object, Name: t.Key, Effect: string(t.Effect)}, nil
			}
		}
	}
	return "", Cause{}, nil
}

// firstFalseSelector returns the index of the first class (or request) selector that is false for the
// device, or -1; an evaluation failure is an *evalError (in an InputError) with the selector's index.
func (a *allocation) firstFalseSelector(r *request, d *deviceEntry, class bool) (int, error) {
	sels, compiled := r.selectors, r.reqSel
	if class {
		sels, compiled = r.class.Spec.Selectors, r.classSel
	}
	for i, sel := range sels {
		s := compiled[i]
		if s == nil || sel.CEL == nil {
			// Not compiled yet or not compilable: selectorsMatch compiles it or reports the error.
			if _, err := a.selectorsMatch(r, d, class); err != nil {
				var ee *evalError
				if errors.As(err, &ee) {
					return i, ee
				}
				return i, err
			}
			s = compiled[i]
			if s == nil {
				continue
			}
		}
		ok, cached := d.caches.verdicts.get(s)
		if !cached {
			var err error
			ok, err = s.Matches(a.ctx, d.view())
			if err != nil {
				if errors.Is(err, celenv.ErrRuntime) || errors.Is(err, celenv.ErrCostLimit) {
					return i, deviceEvalError(d.id, err)
				}
				return i, err
			}
			d.caches.verdicts.put(s, ok)
		}
		if !ok {
			return i, nil
		}
	}
	return -1, nil
}

// selectorField is the object and field of a class's or request's selector.
func (a *allocation) selectorField(r *request, i int, class bool) (string, string) {
	if class {
		return "DeviceClass " + r.class.Name, fmt.Sprintf("spec.selectors[%d]", i)
	}
	return a.perClaim[r.claimIdx].name(), fmt.Sprintf("%s.selectors[%d]", r.path(), i)
}

// holder is the claim (namespace/name) holding a device exclusively, the first by name when several
// do, from the state's index: an explanation on one node costs the same whatever the number of claims
// elsewhere.
func (x *explainer) holder(id DeviceID) string {
	if l := x.a.st.holders[id]; len(l) > 0 {
		return l[0].Namespace + "/" + l[0].Name
	}
	return ""
}

// capacity checks the request's capacity against the device as capacityFits does and names the capacity
// that does not fit.
func (x *explainer) capacity(r *request, cs *claimState, d *deviceEntry) (Cause, bool, error) {
	a := x.a
	consumed, err := a.consumed(r, d)
	if errors.Is(err, capacity.ErrUnsuitable) {
		// Name the first requested capacity the device cannot serve on its own.
		reqs := r.capacityRequests()
		for _, name := range sortedNames(reqs) {
			_, err := capacity.Consumed(map[resourceapi.QualifiedName]resource.Quantity{name: reqs[name]}, d.api.Capacity, a.capOpts)
			if errors.Is(err, capacity.ErrUnsuitable) {
				q := reqs[name]
				c := Cause{Name: string(name), Needed: q.String()}
				if dc, ok := d.api.Capacity[name]; ok {
					c.Available = dc.Value.String()
				}
				return c, true, nil
			}
		}
		return Cause{}, true, nil
	}
	if err != nil {
		return Cause{}, false, nodeInputError(cs.name(), r.path()+".capacity", fmt.Errorf("checking capacity for device %s: %w", d.id, err))
	}
	if a.sharedNow(d.id) {
		l := a.ledger(d)
		if !l.Fits(consumed) {
			for _, name := range sortedNames(consumed) {
				avail, ok := l.Available(name)
				if q := consumed[name]; ok && q.Cmp(avail) > 0 {
					return Cause{Name: string(name), Needed: q.String(), Available: avail.String()}, true, nil
				}
			}
			return Cause{}, true, nil
		}
	}
	return Cause{}, false, nil
}

// counterShort names the first counter the device needs more of than its pool has left; when every
// counter fits, the compatibility groups are what refuse it.
func counterShort(ctr *capacity.Counters, d *deviceEntry) (Reason, Cause, bool) {
	if ctr.Fits(d.api.ConsumesCounters) {
		return "", Cause{}, false
	}
	for _, dc := range d.api.ConsumesCounters {
		for _, name := range sortedNames(dc.Counters) {
			left, ok := ctr.Remaining(dc.CounterSet, name)
			if q := dc.Counters[name].Value; ok && q.Cmp(left) > 0 {
				return ReasonCounters, Cause{CounterSet: dc.CounterSet, Name: name, Needed: q.String(), Available: left.String()}, true
			}
		}
	}
	set := ""
	if len(d.api.ConsumesCounters) > 0 {
		set = d.api.ConsumesCounters[0].CounterSet
	}
	return ReasonCompatibilityGroup, Cause{CounterSet: set}, true
}

func sortedNames[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// poolDevices counts the devices the slices of an unusable pool publish for the node.
func (a *allocation) poolDevices(p *pool) int {
	var gen int64
	var list []*sliceEntry
	for _, e := range a.st.poolSlices[p.id] {
		ok, err := e.sliceFor(a.node)
		if err != nil || !ok {
			continue
		}
		switch g := e.generation(); {
		case g > gen || list == nil:
			gen, list = g, []*sliceEntry{e}
		case g == gen:
			list = append(list, e)
		}
	}
	n := 0
	for _, e := range list {
		n += len(e.obj.Spec.Devices)
	}
	return n
}

func (x *explainer) anyShort() bool {
	for _, q := range x.reqs {
		if q.re.Short() && !q.r.sub {
			return true
		}
	}
	// A request with subrequests is short when every alternative is.
	byReq := map[[2]int]bool{}
	for _, q := range x.reqs {
		if q.r.sub {
			k := [2]int{q.r.claimIdx, q.r.reqIdx}
			if _, ok := byReq[k]; !ok {
				byReq[k] = true
			}
			byReq[k] = byReq[k] && q.re.Short()
		}
	}
	for _, short := range byReq {
		if short {
			return true
		}
	}
	return false
}

// evalError is a selector failing on a device: the device and the celenv error, which names the
// expression.
type evalError struct {
	dev DeviceID
	err error
}

func (e *evalError) Error() string { return e.err.Error() }
func (e *evalError) Unwrap() error { return e.err }

func isEvalError(err error) bool {
	var ee *evalError
	return errors.As(err, &ee)
}

// deviceEvalError names the device of a failed evaluation once, by its full ID: celenv names it by
// driver and name only, and wrapping that in "device <id>: " named it twice.
func deviceEvalError(id DeviceID, err error) error {
	var ce *celenv.EvalError
	if errors.As(err, &ce) {
		c := *ce
		c.Device = id.String()
		return &evalError{dev: id, err: &c}
	}
	return &evalError{dev: id, err: fmt.Errorf("device %s: %w", id, err)}
}
