package allocator

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Quota limits what the owners of claims (a namespace by default, or any key the caller chooses) may
// hold per DeviceClass, and takes part in the search: a device whose charge would take its claim's
// owner past a limit is not taken, so a request with firstAvailable takes the first alternative that fits
// within the owner's remaining quota, and a claim that fits the node but not the quota gets an
// [UnsatisfiableError] that wraps [ErrQuotaExceeded] and names the limit, the amount held and the amount
// the claims ask for ([QuotaExceeded]).
//
// A device allocated for a request is charged under the request's (or the chosen alternative's)
// DeviceClass exactly as [capacity.ChargeAllocation] charges the allocation after the fact: one device;
// for a share of a device with allowMultipleAllocations its consumed capacity after the request policy's
// rounding and none of its counters (those are consumed once for the device); for a device allocated
// exclusively its whole capacity and its consumesCounters (per counter name, summed over counter sets).
// A request with adminAccess charges nothing, as it takes nothing from other users. A request for all
// devices is charged what it takes on the node.
//
// What an owner holds is the charge of the snapshot's allocated claims (status.allocation) owned by it;
// it is computed when a call first needs it after the snapshot changed and shared by the calls until the
// next change.
type Quota struct {
	// Owner returns the key a claim is charged to; nil means the claim's namespace. It is called from
	// concurrent calls and must be safe for that.
	Owner func(claim *resourceapi.ResourceClaim) string
	// Limits are the limits; an owner, class or resource without a limit is unlimited, and every limit
	// that applies must hold (two limits on one resource act as the smaller).
	Limits []QuotaLimit
}

// QuotaLimit is the most one owner may hold of one resource of one DeviceClass.
type QuotaLimit struct {
	// Owner is the owner key (see Quota.Owner): a namespace by default.
	Owner string
	// Class is the DeviceClass name.
	Class string
	// Kind says what is counted; Name names the counter or capacity (empty for devices).
	Kind QuotaKind
	Name string
	// Max is the most the owner may hold; it must not be negative.
	Max resource.Quantity
}

// QuotaKind is what a [QuotaLimit] counts.
type QuotaKind int

const (
	// QuotaDevices counts allocated devices (a share of a device counts as one).
	QuotaDevices QuotaKind = iota
	// QuotaCounter counts a shared counter (QuotaLimit.Name, such as "memory") consumed by partitions
	// (devices with consumesCounters) allocated exclusively, summed over the counter sets.
	QuotaCounter
	// QuotaCapacity counts a capacity (QuotaLimit.Name, such as "memory"): the policy-rounded
	// consumption of shares and the whole capacity of devices allocated exclusively.
	QuotaCapacity
)

func (k QuotaKind) String() string {
	switch k {
	case QuotaDevices:
		return "devices"
	case QuotaCounter:
		return "counter"
	case QuotaCapacity:
		return "capacity"
	}
	return fmt.Sprintf("QuotaKind(%d)", int(k))
}

// String names the limit as the reasons do: `owner team-a, DeviceClass gpu, devices ≤ 2`.
func (l QuotaLimit) String() string {
	what := l.Kind.String()
	if l.Kind != QuotaDevices {
		what += " " + l.Name
	}
	return fmt.Sprintf("owner %s, DeviceClass %s, %s ≤ %s", l.Owner, l.Class, what, l.Max.String())
}

// QuotaExceeded is one limit that the claims of a call would break: the owner holds Held and the
// allocation the claims get without quota asks for Asked more, past Limit.Max. Raising Max to
// Held+Asked (for every limit named) lets the claims fit.
type QuotaExceeded struct {
	Limit QuotaLimit
	Held  resource.Quantity
	Asked resource.Quantity
}

func (q QuotaExceeded) String() string {
	return fmt.Sprintf("quota %s: holds %s, asks for %s more", q.Limit.String(), q.Held.String(), q.Asked.String())
}

// ErrQuotaExceeded is wrapped by the [UnsatisfiableError] of claims that fit the node but not the
// quota of their owner (Options.Quota); its Quota field names the limits.
var ErrQuotaExceeded = errors.New("claims exceed their owner's quota")

// quotaIndex is Options.Quota ready for the search: a private copy of the limits, indexed by owner and
// class, and the held amounts of the newest state a call asked about.
type quotaIndex struct {
	owner   func(*resourceapi.ResourceClaim) string
	limits  []QuotaLimit
	byClass map[ownerClass][]int // indices into limits
	owners  map[string]bool      // owners with a limit
	held    atomic.Pointer[quotaHeld]
}

type ownerClass struct{ owner, class string }

// quotaHeld is what the owners hold in one state of a snapshot, per limit.
type quotaHeld struct {
	stateID, rev uint64
	use          []resource.Quantity
}

// newQuotaIndex validates q and prepares it; errors name the field of Options.Quota.
func newQuotaIndex(q *Quota) (*quotaIndex, error) {
	return newQuotaIndexOf("Options", q)
}

// newQuotaIndexOf is newQuotaIndex for the quota of object (the options struct that holds it).
func newQuotaIndexOf(object string, q *Quota) (*quotaIndex, error) {
	x := &quotaIndex{owner: q.Owner, byClass: map[ownerClass][]int{}, owners: map[string]bool{}}
	for i, l := range q.Limits {
		if err := validateQuotaLimit(object, fmt.Sprintf("Quota.Limits[%d]", i), &l); err != nil {
			return nil, err
		}
		l.Max = l.Max.DeepCopy()
		x.limits = append(x.limits, l)
		k := ownerClass{l.Owner, l.Class}
		x.byClass[k] = append(x.byClass[k], i)
		x.owners[l.Owner] = true
	}
	return x, nil
}

// validateQuotaLimit checks one limit; errors name object and the limit's path.
func validateQuotaLimit(object, path string, l *QuotaLimit) error {
	switch {
	case l.Class == "":
		return inputError(object, path+".Class", errors.New("must not be empty"))
	case l.Kind < QuotaDevices || l.Kind > QuotaCapacity:
		return inputError(object, path+".Kind", fmt.Errorf("unsupported kind %s", l.Kind))
	case l.Kind == QuotaDevices && l.Name != "":
		return inputError(object, path+".Name", errors.New("must be empty for a limit on devices"))
	case l.Kind != QuotaDevices && l.Name == "":
		return inputError(object, path+".Name", fmt.Errorf("must name the %s", l.Kind))
	case l.Max.Sign() < 0:
		return inputError(object, path+".Max", fmt.Errorf("must not be negative, got %s", l.Max.String()))
	}
	return nil
}

// ownerOf is the owner key of a claim.
func (x *quotaIndex) ownerOf(c *resourceapi.ResourceClaim) string {
	if x.owner == nil {
		return c.Namespace
	}
	return x.owner(c)
}

// heldIn returns what the owners hold in st, computing it once per state and revision. The caller holds
// the snapshot's read lock.
func (x *quotaIndex) heldIn(st *state) []resource.Quantity {
	if h := x.held.Load(); h != nil && h.stateID == st.id && h.rev == st.rev {
		return h.use
	}
	h := &quotaHeld{stateID: st.id, rev: st.rev, use: make([]resource.Quantity, len(x.limits))}
	for _, e := range st.claims {
		c := e.obj
		if c.Status.Allocation == nil || !x.owners[x.ownerOf(c)] {
			continue
		}
		owner := x.ownerOf(c)
		for _, res := range c.Status.Allocation.Devices.Results {
			if res.AdminAccess != nil && *res.AdminAccess {
				continue
			}
			class, ok := requestClass(c, res.Request)
			if !ok {
				continue
			}
			limits := x.byClass[ownerClass{owner, class}]
			if len(limits) == 0 {
				continue
			}
			// As capacity.ChargeAllocation: a result with a share ID or consumed capacity is a share.
			shared := res.ShareID != nil || res.ConsumedCapacity != nil
			// A device no slice publishes any more is charged as one device, without capacity or
			// counters.
			var dev *resourceapi.Device
			if e := st.device(DeviceID{Driver: res.Driver, Pool: res.Pool, Device: res.Device}); e != nil {
				dev = e.api
			}
			for _, li := range limits {
				q, ok := chargeOf(&x.limits[li], dev, shared, res.ConsumedCapacity)
				if ok {
					h.use[li].Add(q)
				}
			}
		}
	}
	x.held.Store(h)
	return h.use
}

// requestClass is the DeviceClass of the request or subrequest a result names ("req" or "req/sub").
func requestClass(c *resourceapi.ResourceClaim, name string) (string, bool) {
	parent, sub, hasSub := strings.Cut(name, "/")
	for _, r := range c.Spec.Devices.Requests {
		if r.Name != parent {
			continue
		}
		if !hasSub {
			if r.Exactly == nil {
				return "", false
			}
			return r.Exactly.DeviceClassName, true
		}
		for _, s := range r.FirstAvailable {
			if s.Name == sub {
				return s.DeviceClassName, true
			}
		}
	}
	return "", false
}

// chargeOf is what one allocated device charges against a limit of its class, and whether it charges
// anything (see Quota). dev may be nil for a device no slice publishes any more. The charge is the
// caller's to change.
func chargeOf(l *QuotaLimit, dev *resourceapi.Device, shared bool, consumed map[resourceapi.QualifiedName]resource.Quantity) (resource.Quantity, bool) {
	switch l.Kind {
	case QuotaDevices:
		return *resource.NewQuantity(1, resource.DecimalSI), true
	case QuotaCapacity:
		// Copies: the callers add to the charge, and a Quantity in decimal form shares its value.
		if shared {
			q, ok := consumed[resourceapi.QualifiedName(l.Name)]
			return q.DeepCopy(), ok
		}
		if dev == nil {
			return resource.Quantity{}, false
		}
		c, ok := dev.Capacity[resourceapi.QualifiedName(l.Name)]
		return c.Value.DeepCopy(), ok
	case QuotaCounter:
		if shared || dev == nil {
			return resource.Quantity{}, false
		}
		var sum resource.Quantity
		found := false
		for _, cc := range dev.ConsumesCounters {
			if v, ok := cc.Counters[l.Name]; ok {
				sum.Add(v.Value)
				found = true
			}
		}
		return sum, found
	}
	return resource.Quantity{}, false
}

// callQuota is the quota as one call sees it: what the owners held before the call, and what the
// devices taken so far in the call charge, per limit.
type callQuota struct {
	x    *quotaIndex
	held []resource.Quantity // shared between calls: read only
	used []resource.Quantity
	// refused: the search passed over a device for the quota; when it did not, a failed search failed
	// for the node alone, and no search without quota is needed to tell.
	refused bool
}

// prepareQuota sets up the call's quota: nil when the snapshot has none or the call is its search
// without quota (see quotaRefusal).
func (a *allocation) prepareQuota() {
	a.quota = nil
	x := a.s.quota
	if x == nil || a.noQuota {
		return
	}
	q := &a.quotaBuf
	q.x, q.held, q.refused = x, nil, false
	q.used = grow(q.used, len(x.limits))
	for i := range q.used {
		q.used[i] = resource.Quantity{}
	}
	a.quota = q
}

// requestLimits are the limits that apply to a request of claim ci of the class: nil without quota.
func (a *allocation) requestLimits(ci int, class string) []int {
	if a.quota == nil {
		return nil
	}
	x := a.quota.x
	limits := x.byClass[ownerClass{x.ownerOf(a.claims[ci]), class}]
	if len(limits) > 0 && a.quota.held == nil {
		a.quota.held = x.heldIn(a.st)
	}
	return limits
}

// quotaFits: taking d for r keeps the owner within every limit of r.
func (a *allocation) quotaFits(r *request, d *deviceEntry, shared bool, consumed map[resourceapi.QualifiedName]resource.Quantity) bool {
	q := a.quota
	for _, li := range r.limits {
		l := &q.x.limits[li]
		c, ok := chargeOf(l, d.api, shared, consumed)
		if !ok {
			continue
		}
		c.Add(q.held[li])
		c.Add(q.used[li])
		if c.Cmp(l.Max) > 0 {
			q.refused = true
			return false
		}
	}
	return true
}

// quotaRoom: the owner may take one more device for r as far as its limits on devices go, which charge
// every device alike (1), so that a request past such a limit is refused before its devices are
// scanned.
func (a *allocation) quotaRoom(r *request) bool {
	q := a.quota
	for _, li := range r.limits {
		l := &q.x.limits[li]
		if l.Kind != QuotaDevices {
			continue
		}
		c := *resource.NewQuantity(1, resource.DecimalSI)
		c.Add(q.held[li])
		c.Add(q.used[li])
		if c.Cmp(l.Max) > 0 {
			q.refused = true
			return false
		}
	}
	return true
}

// chargeQuota adds (sign 1) or gives back (sign -1) what taking d for r charges.
func (a *allocation) chargeQuota(r *request, d *deviceEntry, shared bool, consumed map[resourceapi.QualifiedName]resource.Quantity, sign int) {
	q := a.quota
	for _, li := range r.limits {
		c, ok := chargeOf(&q.x.limits[li], d.api, shared, consumed)
		if !ok {
			continue
		}
		if sign < 0 {
			q.used[li].Sub(c)
		} else {
			q.used[li].Add(c)
		}
	}
}

// quotaOn: the call has a request that a limit applies to.
func (a *allocation) quotaOn() bool {
	return a.quota != nil && a.quota.held != nil
}

// quotaRefused: the search passed over a device because of the quota.
func (a *allocation) quotaRefused() bool {
	return a.quota != nil && a.quota.refused
}

// quotaRefusal answers claims that did not fit within their owners' quota: when they fit without it,
// an UnsatisfiableError naming the limits (wrapping ErrQuotaExceeded); otherwise the answer of the search
// without quota (the claims do not fit the node whatever the quota).
func (a *allocation) quotaRefusal() error {
	exceeded, fits, err := a.quotaExceeded()
	switch {
	case err != nil:
		return err
	case !fits || len(exceeded) == 0:
		return a.unsatisfiable()
	}
	ue := &UnsatisfiableError{Node: a.node.Name, Steps: a.spent + a.steps, Quota: exceeded}
	for _, q := range exceeded {
		ue.Reasons = append(ue.Reasons, q.String())
	}
	return ue
}

// quotaExceeded searches again without the quota, after the search with it failed, and returns whether
// the claims fit so and the limits the devices found break. The search state is then the one without
// quota. Empty exceeded with fits: the search with quota must have given up for another reason.
func (a *allocation) quotaExceeded() (exceeded []QuotaExceeded, fits bool, err error) {
	x := a.quota.x
	held := a.quota.held
	a.spent += a.steps
	a.clearSearch()
	a.noQuota = true
	fits, err = a.search()
	if err != nil || !fits {
		return nil, fits, err
	}
	asked := make([]resource.Quantity, len(x.limits))
	for ci := range a.perClaim[:len(a.claims)] {
		cs := &a.perClaim[ci]
		owner := x.ownerOf(cs.claim)
		for _, res := range cs.results {
			if res.req.adminAccess {
				continue
			}
			shared := res.shareID != nil
			for _, li := range x.byClass[ownerClass{owner, res.req.class.Name}] {
				if c, ok := chargeOf(&x.limits[li], res.dev.api, shared, res.consumed); ok {
					asked[li].Add(c)
				}
			}
		}
	}
	for li := range x.limits {
		total := held[li].DeepCopy()
		total.Add(asked[li])
		if asked[li].Sign() > 0 && total.Cmp(x.limits[li].Max) > 0 {
			exceeded = append(exceeded, QuotaExceeded{Limit: x.limits[li], Held: held[li].DeepCopy(), Asked: asked[li]})
		}
	}
	return exceeded, true, nil
}

// resetQuota gives back what the call charged (greedyDescent's undo).
func (a *allocation) resetQuota() {
	if a.quota == nil {
		return
	}
	for i := range a.quota.used {
		a.quota.used[i] = resource.Quantity{}
	}
}

// SetQuota replaces the quota the snapshot's calls apply (Options.Quota) from now on; nil removes it.
// It is for a caller whose quota changes as the cluster's ResourceQuota objects do, or that reads them
// after the snapshot was filled (dractl --enforce-quota). The snapshot keeps a copy; an invalid quota
// is an [InputError] naming the field and leaves the snapshot's quota as it was. A fork has its own
// quota from the moment it is forked: SetQuota on one does not change the other, and Commit does not
// carry it.
func (s *Snapshot) SetQuota(q *Quota) error {
	s.ready()
	var x *quotaIndex
	if q != nil {
		var err error
		if x, err = newQuotaIndex(q); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.quota = x
	return nil
}
