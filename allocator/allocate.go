package allocator

import (
	"context"
	"errors"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/capacity"
)

// Allocate finds devices for the claims on the node. claims are the pod's claims that still need an
// allocation; devices held by the claims in the snapshot are in use (add the node's pods' claims to the
// snapshot with their status.allocation).
//
// It returns one AllocationResult per claim, in the order of claims. When the claims do not fit on the
// node the error wraps [ErrUnsatisfiable]; invalid input (a node without metadata.name and a nil ctx
// included) gives an error wrapping [ErrInvalidInput] that names the object and field; a discarded or
// committed fork gives [ErrClosed]; a context that ends during the call gives an error wrapping the
// context's error (context.Canceled or context.DeadlineExceeded) and its cause, never ErrInvalidInput,
// so the caller may retry; running out of Options.StepBudget gives [ErrSearchBudget]. The snapshot, node
// and claims are not modified.
func (s *Snapshot) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	var results []resourceapi.AllocationResult
	err := s.do(ctx, node, claims, func(a *allocation) (bool, error) {
		var err error
		results, err = a.run()
		return err == nil, err
	})
	return results, err
}

// AllocateWith is Allocate with the strategy given for this call instead of the snapshot's
// Options.Strategy: for a caller that chooses devices differently call by call on one snapshot, as
// allocator/pods does for its BestFit, which packs the devices of a node whatever strategy the snapshot
// was made with. The strategies differ only in the order the search tries devices (see [Strategy]), so
// the claims fit under one exactly when they fit under another. A strategy that is not one of the
// constants gives an error wrapping [ErrInvalidInput].
func (s *Snapshot) AllocateWith(ctx context.Context, strategy Strategy, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	if strategy < FirstFit || strategy > Spread {
		return nil, fmt.Errorf("%w: unsupported strategy %s", ErrInvalidInput, strategy)
	}
	var results []resourceapi.AllocationResult
	err := s.do(ctx, node, claims, func(a *allocation) (bool, error) {
		a.strategy = strategy
		var err error
		results, err = a.run()
		return err == nil, err
	})
	return results, err
}

// Fits reports whether the claims can be allocated on the node, without building the allocation: the
// question a scheduler's filter or an autoscaler's simulation asks of every node. It searches exactly as
// Allocate does and fails for the same input, cancellation and budget errors; where Allocate would wrap
// [ErrUnsatisfiable] it returns false and no error, allocating nothing. Allocate on the chosen node
// returns the allocation (and, on a node where the claims do not fit, the reasons).
//
// Options.Topology is not applied: a preference orders the devices Allocate returns and never changes
// whether claims fit, so Fits searches in the strategy's order without it and pays nothing for the
// ranking. (Where the strategy is FirstFit, Fits then evaluates selectors as the first-fit scan reaches
// devices: a selector that fails at run time on a device past a fit is not reported, as under FirstFit
// without a preference, and the steps counted against Options.StepBudget are those of that order.)
func (s *Snapshot) Fits(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) (bool, error) {
	var fits bool
	err := s.do(ctx, node, claims, func(a *allocation) (bool, error) {
		a.fitsOnly = true
		var err error
		fits, err = a.search()
		return fits, err
	})
	return fits, err
}

// do runs fn on the working state of one call, under the read lock; fn reports whether the claims fit.
func (s *Snapshot) do(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim, fn func(*allocation) (bool, error)) error {
	if ctx == nil {
		return nilContext()
	}
	if node == nil {
		return inputError("Node", "", errors.New("nil object"))
	}
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	// A node is what its name and labels select; a nameless one would see no node-local slice.
	if node.Name == "" {
		return inputError("Node", "metadata.name", errors.New("must not be empty"))
	}
	if s.envErr != nil {
		return s.envErr
	}
	a := getAllocation()
	a.ctx, a.s, a.st, a.f, a.node, a.claims, a.capOpts = ctx, s, s.st, s.f, node, claims, s.capOpts()
	a.strategy = s.opts.Strategy
	a.fitsOnly = false
	fits, err := fn(a)
	if logger := s.opts.Logger; logger.V(5).Enabled() {
		logger.V(5).Info("Allocation done", "node", node.Name, "claims", len(claims), "success", fits, "steps", a.spent+a.steps, "err", err)
	}
	putAllocation(a)
	return err
}

// AllocateOnNode is Allocate for a node added with [Snapshot.AddOrUpdateNode].
func (s *Snapshot) AllocateOnNode(ctx context.Context, nodeName string, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	node, err := s.namedNode(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	return s.Allocate(ctx, node, claims)
}

// FitsOnNode is Fits for a node added with [Snapshot.AddOrUpdateNode]; a name the snapshot does not
// hold is invalid input, as for AllocateOnNode.
func (s *Snapshot) FitsOnNode(ctx context.Context, nodeName string, claims []*resourceapi.ResourceClaim) (bool, error) {
	node, err := s.namedNode(ctx, nodeName)
	if err != nil {
		return false, err
	}
	return s.Fits(ctx, node, claims)
}

// namedNode is the node the snapshot holds under the name, for the *OnNode calls.
func (s *Snapshot) namedNode(ctx context.Context, nodeName string) (*v1.Node, error) {
	if ctx == nil {
		return nil, nilContext()
	}
	s.ready()
	s.mu.RLock()
	node, ok := s.st.nodes[nodeName]
	closed := s.closed
	s.mu.RUnlock()
	switch {
	case closed:
		return nil, ErrClosed
	case nodeName == "":
		return nil, inputError("Node", "metadata.name", errors.New("must not be empty"))
	case !ok:
		return nil, inputError("Node "+nodeName, "", errors.New("not in the snapshot"))
	}
	return node, nil
}

// run validates the claims, searches, and builds the results.
func (a *allocation) run() ([]resourceapi.AllocationResult, error) {
	a.startTopology()
	fits, err := a.search()
	switch {
	case err != nil:
		return nil, err
	case !fits && a.quotaRefused():
		return nil, a.quotaRefusal()
	case !fits:
		return nil, a.unsatisfiable()
	}
	if a.found {
		if err := a.finishTopology(); err != nil {
			return nil, err
		}
	}
	if err := a.drawShareIDs(); err != nil {
		return nil, err
	}
	return a.results()
}

// search validates the claims and searches; false means the claims do not fit (a.short tells why when
// failing fast decided it).
func (a *allocation) search() (bool, error) {
	for i, c := range a.claims {
		if c == nil {
			return false, inputError("ResourceClaim", fmt.Sprintf("claims[%d]", i), errors.New("nil object"))
		}
	}
	pools, err := a.gatherPools(a.node)
	if err != nil {
		return false, err
	}
	a.pools = pools
	a.prepareQuota()
	// The maps other than matches are created on first use: most calls need none of them.
	if a.matches == nil {
		a.matches = map[matchKey]bool{}
	}
	a.perClaim = grow(a.perClaim, len(a.claims))
	for i := range a.claims {
		if err := a.prepareClaim(i); err != nil {
			return false, err
		}
	}

	if a.greedyApplies() {
		if a.greedyDescent() {
			return true, nil
		}
	}
	if short, unsat := a.failFast(); unsat {
		a.short = short
		return false, nil
	}
	done, err := a.allocateOne(position{}, false, location{})
	if a.found {
		return a.topoEnded(done, err)
	}
	switch {
	case errors.Is(err, errResultsExceeded), errors.Is(err, errDoomed):
		return false, nil
	case err != nil:
		return false, err
	}
	return done, nil
}

// unsatisfiable builds the "does not fit" answer, naming invalid pools (which Kubernetes reports too).
func (a *allocation) unsatisfiable() error {
	// One allocation holds the error and room for its first reason: a filter pass meets this on most
	// nodes.
	both := &struct {
		e UnsatisfiableError
		r [1]string
	}{e: UnsatisfiableError{Node: a.node.Name}}
	ue := &both.e
	if a.short.cs != nil {
		both.r[0] = a.tooFewReason(a.short)
		ue.Reasons = both.r[:1]
	}
	ue.Steps = a.spent + a.steps
	if a.short.cs == nil {
		// The search itself decided: a constraint, shared counters or requests competing for devices.
		// Only the explanation can say which, so it is built here; Fits and the fail-fast answer (what
		// a filter pass meets on most nodes) do not pay for it.
		if e, err := a.explainSearched(&Explanation{Node: a.node.Name, Steps: ue.Steps}, false, false); err == nil {
			ue.Explanation = e
			ue.Reasons = e.Reasons()
			ue.Pools = e.Pools
			return ue
		}
	}
	for _, p := range a.pools {
		if p.invalid || p.incomplete {
			pe := PoolError{Pool: p.id, Incomplete: p.incomplete, Reason: p.invalidReason}
			ue.Pools = append(ue.Pools, pe)
			// As before Kubernetes names invalid pools; an incomplete one says why its devices are unused.
			ue.Reasons = append(ue.Reasons, pe.Error())
		}
	}
	return ue
}

// prepareClaim validates one claim as the Kubernetes allocator does before searching (every error here
// is fatal) and prepares its requests and constraints.
func (a *allocation) prepareClaim(ci int) error {
	claim := a.claims[ci]
	cs := &a.perClaim[ci]
	*cs = claimState{claim: claim, slots: cs.slots, results: cs.results[:0], constraints: cs.constraints}
	minDevices := 0
	cs.slots = grow(cs.slots, len(claim.Spec.Devices.Requests))
	for ri := range claim.Spec.Devices.Requests {
		req := &claim.Spec.Devices.Requests[ri]
		slot := &cs.slots[ri]
		*slot = requestSlot{alts: slot.alts[:0]}
		slot.hasSubs = len(req.FirstAvailable) > 0
		if slot.hasSubs && !a.f.DRAPrioritizedList {
			return inputError(cs.name(), requestPath(ri)+".firstAvailable", errors.New("has subrequests, but the DRAPrioritizedList feature is disabled"))
		}
		// The stable implementation predates consumable capacity and ignores capacity requests.
		if !a.f.DRAConsumableCapacity && a.f.Implementation() != implStable {
			if req.Exactly != nil && req.Exactly.Capacity != nil {
				return inputError(cs.name(), requestPath(ri)+".exactly.capacity", errors.New("has capacity requests, but the DRAConsumableCapacity feature is disabled"))
			}
			for si := range req.FirstAvailable {
				if req.FirstAvailable[si].Capacity != nil {
					return inputError(cs.name(), fmt.Sprintf("%s.firstAvailable[%d].capacity", requestPath(ri), si), errors.New("has capacity requests, but the DRAConsumableCapacity feature is disabled"))
				}
			}
		}
		minForRequest := 0
		if slot.hasSubs {
			minForRequest = math.MaxInt
			for si := range req.FirstAvailable {
				sub := &req.FirstAvailable[si]
				r := a.newRequest()
				*r = request{
					claimIdx: ci, reqIdx: ri, subIdx: si,
					parent:      req.Name,
					name:        sub.Name,
					sub:         true,
					mode:        sub.AllocationMode,
					selectors:   sub.Selectors,
					tolerations: sub.Tolerations,
					capacity:    sub.Capacity,
				}
				if err := a.prepareRequest(ci, r, sub.DeviceClassName, sub.Count, sub.DerivedAttributes, false); err != nil {
					return err
				}
				slot.alts = append(slot.alts, r)
				minForRequest = min(minForRequest, r.numDevices)
			}
		} else {
			ex := req.Exactly
			if ex == nil {
				return inputError(cs.name(), requestPath(ri), errors.New("neither exactly nor firstAvailable is set"))
			}
			r := a.newRequest()
			*r = request{
				claimIdx: ci, reqIdx: ri,
				name:        req.Name,
				mode:        ex.AllocationMode,
				adminAccess: ex.AdminAccess != nil && *ex.AdminAccess,
				selectors:   ex.Selectors,
				tolerations: ex.Tolerations,
				capacity:    ex.Capacity,
			}
			if err := a.prepareRequest(ci, r, ex.DeviceClassName, ex.Count, ex.DerivedAttributes, ex.AdminAccess != nil); err != nil {
				return err
			}
			slot.alts = append(slot.alts, r)
			minForRequest = r.numDevices
		}
		if minForRequest > resourceapi.AllocationResultsMaxSize-minDevices {
			return a.claimLimitError(cs, ri, minForRequest, minDevices)
		}
		minDevices += minForRequest
	}
	if cap(cs.results) < minDevices {
		cs.results = make([]deviceResult, 0, minDevices)
	}

	cs.constraints = grow(cs.constraints, len(claim.Spec.Devices.Constraints))
	for i, c := range claim.Spec.Devices.Constraints {
		base := constraintBase{a: a, requests: c.Requests}
		// A constraint of the same kind left at this place by an earlier call is reused with its
		// buffers, so that a filter pass allocates none per node.
		switch {
		case c.MatchAttribute != nil:
			m, _ := cs.constraints[i].(*matchAttribute)
			if m == nil {
				m = new(matchAttribute)
			}
			*m = matchAttribute{constraintBase: base, name: *c.MatchAttribute, sets: m.sets, counts: m.counts[:0]}
			cs.constraints[i] = m
		case c.DistinctAttribute != nil && a.f.Implementation() != implStable:
			// The stable implementation does not know distinctAttribute and rejects it below.
			m, _ := cs.constraints[i].(*distinctAttribute)
			if m == nil {
				m = new(distinctAttribute)
			}
			*m = distinctAttribute{constraintBase: base, name: *c.DistinctAttribute, added: m.added[:0]}
			cs.constraints[i] = m
		default:
			return inputError(cs.name(), fmt.Sprintf("spec.devices.constraints[%d]", i), errors.New("empty constraint (unsupported constraint type?)"))
		}
	}
	return nil
}

func requestPath(ri int) string { return fmt.Sprintf("spec.devices.requests[%d]", ri) }

// claimLimitError is the input error of a claim whose request ri takes the claim past
// AllocationResultsMaxSize devices. Kubernetes refuses such a claim before it looks at a device, and
// so does a filter pass on every node: the error and its reason take one allocation, the object and
// field are remembered across calls (see limitText), and the message is written when it is read.
func (a *allocation) claimLimitError(cs *claimState, ri, adding, already int) error {
	both := &struct {
		e InputError
		l limitExceeded
	}{l: limitExceeded{adding: adding, already: already}}
	object, field := a.limit.of(cs, ri)
	both.e = InputError{Object: object, Field: field, Err: &both.l}
	return &both.e
}

// limitExceeded is the reason of claimLimitError.
type limitExceeded struct{ adding, already int }

func (e *limitExceeded) Error() string {
	return fmt.Sprintf("adding %d devices exceeds the claim limit of %d, with %d already accounted for", e.adding, resourceapi.AllocationResultsMaxSize, e.already)
}

// prepareRequest checks one request or subrequest and, for allocationMode All, collects its devices.
func (a *allocation) prepareRequest(ci int, r *request, className string, count int64, derived []resourceapi.DeviceDerivedAttribute, hasAdminAccess bool) error {
	object := a.perClaim[ci].name
	if len(derived) > 0 {
		a.twinsOnly = true
		if !a.f.DRADerivedAttributes {
			return inputError(object(), r.path()+".derivedAttributes", errors.New("cannot handle request with derived attributes, the DRADerivedAttributes feature is disabled"))
		}
		r.derived = make(map[resourceapi.FullyQualifiedName]string, len(derived))
		for _, d := range derived {
			r.derived[d.Name] = d.Expression
		}
	}
	for i, sel := range r.selectors {
		if sel.CEL == nil {
			return inputError(object(), fmt.Sprintf("%s.selectors[%d]", r.path(), i), errors.New("CEL expression empty (unsupported selector type?)"))
		}
	}
	if !a.f.DRAAdminAccess && hasAdminAccess {
		return inputError(object(), r.path()+".adminAccess", errors.New("admin access is requested, but the DRAAdminAccess feature is disabled"))
	}
	if className == "" {
		return inputError(object(), r.path()+".deviceClassName", errors.New("missing device class name (unsupported request type?)"))
	}
	ce, ok := a.st.classes[className]
	if !ok {
		return inputError(object(), r.path()+".deviceClassName", fmt.Errorf("device class %s not found", className))
	}
	r.class, r.classSel, r.classErr = ce.obj, ce.sel, ce.selErr
	if a.quota != nil && !r.adminAccess {
		r.limits = a.requestLimits(ci, className)
	}
	r.reqSel = a.newSelectors(len(r.selectors))

	switch r.mode {
	case resourceapi.DeviceAllocationModeExactCount:
		n, err := exactCount(count)
		if err != nil {
			return inputError(object(), r.path()+".count", err)
		}
		r.numDevices = n
	case resourceapi.DeviceAllocationModeAll:
		a.lastAll = position{claim: ci, req: r.reqIdx} // requests are prepared in the search's order
		a.twinsOnly = true
		// As Kubernetes: an incomplete or invalid pool makes "all" unknowable, so the allocation stops.
		r.allDevices = make([]candidate, 0, resourceapi.AllocationResultsMaxSize)
		for _, p := range a.pools {
			if p.incomplete {
				return fmt.Errorf("%s: %s: asks for all devices, but resource pool %s is currently being updated: %w", object(), r.path(), p.id, poolNotReady{ErrPoolIncomplete})
			}
			if p.invalid {
				return fmt.Errorf("%s: %s: asks for all devices, but resource pool %s is currently invalid: %w", object(), r.path(), p.id, poolNotReady{ErrPoolInvalid})
			}
			for _, e := range p.slices {
				for _, d := range e.devices() {
					ok, err := a.selectable(r, d)
					if err != nil {
						return err
					}
					if !ok {
						continue
					}
					if a.f.DRAConsumableCapacity {
						// Static capacity only: what others use is checked when the device is taken,
						// so a matching but busy device keeps "all" from succeeding.
						_, err := a.consumed(r, d)
						if errors.Is(err, capacity.ErrUnsuitable) {
							continue
						}
						if err != nil {
							return nodeInputError(object(), r.path()+".capacity", fmt.Errorf("checking capacity for device %s: %w", d.id, err))
						}
					}
					r.allDevices = append(r.allDevices, candidate{dev: d, pool: p})
				}
			}
		}
		r.numDevices = len(r.allDevices)
	default:
		return inputError(object(), r.path()+".allocationMode", fmt.Errorf("unsupported count mode %q", r.mode))
	}
	return nil
}
