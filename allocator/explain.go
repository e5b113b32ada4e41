package allocator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

var (
	// ErrPoolIncomplete reports a resource pool whose newest generation is not fully published: not
	// all of its spec.pool.resourceSliceCount slices are there. Its devices are not used until it is.
	ErrPoolIncomplete = errors.New("resource pool is being updated")
	// ErrPoolInvalid reports a resource pool whose slices contradict each other (a device name used
	// twice, a counter set defined twice, a device consuming an unknown counter). Its devices are not
	// used.
	ErrPoolInvalid = errors.New("resource pool is invalid")
)

// PoolError is an incomplete or invalid resource pool on a node. It wraps [ErrPoolIncomplete] or
// [ErrPoolInvalid].
type PoolError struct {
	Pool PoolID `json:"pool"`
	// Incomplete is true for an incomplete pool, false for an invalid one.
	Incomplete bool `json:"incomplete,omitempty"`
	// Reason says what makes an invalid pool invalid ("duplicate device name gpu-0").
	Reason string `json:"reason,omitempty"`
	// Devices is how many devices the pool's slices for the node publish, which the allocator does not
	// use.
	Devices int `json:"devices"`
}

func (e *PoolError) Error() string {
	if e.Incomplete {
		return "resource pool " + e.Pool.String() + " is being updated"
	}
	return "resource pool " + e.Pool.String() + " is invalid: " + e.Reason
}

// Unwrap makes errors.Is(err, ErrPoolIncomplete) or errors.Is(err, ErrPoolInvalid) true.
func (e *PoolError) Unwrap() error {
	if e.Incomplete {
		return ErrPoolIncomplete
	}
	return ErrPoolInvalid
}

// Reason names one obstacle between a request and the devices of a node. The filters a device passes
// through are listed in the order [Snapshot.Explain] applies them; a device is counted by the first
// filter that removes it.
type Reason string

// The reasons for removing a device from a request's candidates, in the order they are checked.
const (
	// ReasonPoolIncomplete: the device's pool is incomplete (see [ErrPoolIncomplete]).
	ReasonPoolIncomplete Reason = "PoolIncomplete"
	// ReasonPoolInvalid: the device's pool is invalid (see [ErrPoolInvalid]).
	ReasonPoolInvalid Reason = "PoolInvalid"
	// ReasonBindingConditions: the device has binding conditions and DRADeviceBindingConditions (or
	// DRAResourceClaimDeviceStatus) is disabled.
	ReasonBindingConditions Reason = "BindingConditionsUnsupported"
	// ReasonClassSelector: a selector of the request's DeviceClass is false for the device.
	ReasonClassSelector Reason = "ClassSelectorFalse"
	// ReasonRequestSelector: a selector of the request itself is false for the device.
	ReasonRequestSelector Reason = "RequestSelectorFalse"
	// ReasonCELError: evaluating a selector on the device failed; Allocate fails with this error.
	ReasonCELError Reason = "CELRuntimeError"
	// ReasonNotOnNode: the device's per-device node selection does not include the node.
	ReasonNotOnNode Reason = "NotOnNode"
	// ReasonAllocated: another claim holds the device exclusively.
	ReasonAllocated Reason = "AlreadyAllocated"
	// ReasonCapacity: the device cannot serve the request's capacity, or not next to its other shares.
	ReasonCapacity Reason = "CapacityShort"
	// ReasonNodeOperations: the device asks to skip node operations and the node (or the feature gate)
	// does not support that.
	ReasonNodeOperations Reason = "NodeOperationsUnsupported"
	// ReasonCounters: the device would consume more of a shared counter than its pool has left.
	ReasonCounters Reason = "CountersShort"
	// ReasonCompatibilityGroup: the device's compatibility groups are not compatible with those of the
	// devices already drawing on the same counter set.
	ReasonCompatibilityGroup Reason = "CompatibilityGroup"
	// ReasonTaint: the device has a NoSchedule or NoExecute taint the request does not tolerate.
	ReasonTaint Reason = "UntoleratedTaint"
)

// The reasons why requests that each have enough candidates still do not fit together.
const (
	// ReasonTooManyResults: the claim would hold more than 32 devices.
	ReasonTooManyResults Reason = "TooManyResults"
	// ReasonConstraint: no set of candidates satisfies a matchAttribute or distinctAttribute constraint.
	ReasonConstraint Reason = "ConstraintUnmet"
	// ReasonCompeting: requests want the same devices and there are not enough of them for all.
	ReasonCompeting Reason = "CompetingRequests"
	// ReasonSearchGaveUp: the search ran out of Options.StepBudget before deciding.
	ReasonSearchGaveUp Reason = "SearchGaveUp"
	// ReasonNoCombination: the search tried every combination of candidates and none satisfied all
	// requests (shared counters or capacity drawn on by several requests, constraints across requests).
	ReasonNoCombination Reason = "NoCombination"
)

// Explanation says, for one node, what each request of the claims can use and what keeps the claims from
// fitting. It is built by [Snapshot.Explain]; String renders it for people, and the JSON tags give the
// whole tree for machines.
type Explanation struct {
	Node string `json:"node"`
	// Fits is whether Allocate would succeed on the node.
	Fits bool `json:"fits"`
	// Steps is how many steps the allocation search took (each step tries one device, or moves on to
	// the next request or claim), the number the Kubernetes allocator counts as its search calls.
	Steps int `json:"steps"`
	// Pools are the node's incomplete or invalid resource pools.
	Pools []PoolError `json:"pools,omitempty"`
	// Claims follow the order of the claims passed to Explain.
	Claims []ClaimExplanation `json:"claims"`
	// Obstacles are what keeps requests that each have enough candidates from fitting together; empty
	// when the claims fit or a request alone is short of candidates.
	Obstacles []Obstacle `json:"obstacles,omitempty"`
	// Quota names, when the claims fit the node but not their owners' quota (Options.Quota), the limits
	// that keep them from fitting; the counts above are then those without quota.
	Quota []QuotaExceeded `json:"quota,omitempty"`
}

// ClaimExplanation is what the requests of one claim can use.
type ClaimExplanation struct {
	// Claim is "namespace/name".
	Claim string `json:"claim"`
	// Requests lists each request, or each subrequest of a request with firstAvailable, in spec order.
	Requests []RequestExplanation `json:"requests"`
}

// RequestExplanation counts the devices a request or subrequest could use on the node.
type RequestExplanation struct {
	// Request is the name, "gpus" or, for a subrequest, "gpus/h100".
	Request string `json:"request"`
	// Field is the request's field path, "spec.devices.requests[0].exactly".
	Field string `json:"field"`
	Class string `json:"class"`
	// All is allocationMode All: Needs is then the number of devices that match (all must be free).
	All bool `json:"all,omitempty"`
	// Needs is how many devices the request needs.
	Needs int `json:"needs"`
	// Devices is how many devices the node's pools offer.
	Devices int `json:"devices"`
	// Candidates is how many of them pass every filter; Devices minus the filters' counts.
	Candidates int `json:"candidates"`
	// Filters are the filters that removed devices, in the order they are applied.
	Filters []Filter `json:"filters,omitempty"`
}

// Short reports whether the request has fewer candidates than it needs (for allocationMode All: a
// matching device is not available, or none matches).
func (r *RequestExplanation) Short() bool {
	return r.Candidates < r.Needs || r.All && r.Needs == 0
}

// Filter is one filter and the devices it removed, grouped by cause.
type Filter struct {
	Reason Reason `json:"reason"`
	// Removed is how many devices this filter removed (that earlier filters left).
	Removed int `json:"removed"`
	// Causes split Removed by the object and detail that did it, largest first.
	Causes []Cause `json:"causes"`
}

// Cause is one object and detail that removed devices from a request. Fields that do not apply to the
// filter's reason are empty.
type Cause struct {
	// Devices is how many devices this cause removed; Device is the first of them.
	Devices int      `json:"devices"`
	Device  DeviceID `json:"device"`
	// Object is what did it: "DeviceClass gpu-h100", "ResourceClaim default/train" (the holder, for
	// AlreadyAllocated; the request's claim for RequestSelectorFalse), "DeviceTaintRule firmware",
	// "ResourceSlice node-1-gpus" (a taint or binding condition from the slice).
	Object string `json:"object,omitempty"`
	// Field is the field path in Object ("spec.selectors[0].cel.expression").
	Field string `json:"field,omitempty"`
	// Expression is the CEL expression of a selector.
	Expression string `json:"expression,omitempty"`
	// Name is the taint key, capacity name or counter name.
	Name string `json:"name,omitempty"`
	// Effect is the taint's effect.
	Effect string `json:"effect,omitempty"`
	// CounterSet is the counter set of a counter.
	CounterSet string `json:"counterSet,omitempty"`
	// Needed and Available are quantities: the capacity or counter the device would need, and what is
	// free (capacity) or left (counters).
	Needed    string `json:"needed,omitempty"`
	Available string `json:"available,omitempty"`
	// Message is the CEL error, or why a pool is invalid.
	Message string `json:"message,omitempty"`
}

// RequestRef names a request of a claim.
type RequestRef struct {
	// Claim is "namespace/name".
	Claim string `json:"claim"`
	// Request is "gpus" or "gpus/h100".
	Request string `json:"request"`
}

func (r RequestRef) String() string {
	return "claim " + r.Claim + ", request " + strconv.Quote(r.Request)
}

// Obstacle keeps requests from fitting together.
type Obstacle struct {
	Reason Reason `json:"reason"`
	// Requests are the requests involved, in claim and spec order.
	Requests []RequestRef `json:"requests,omitempty"`
	// Attribute is the constraint's attribute (ConstraintUnmet); Field its path in the claim.
	Attribute string `json:"attribute,omitempty"`
	Field     string `json:"field,omitempty"`
	// Values are the attribute's values among the candidates with how many candidates have each,
	// most first (ConstraintUnmet).
	Values []ValueCount `json:"values,omitempty"`
	// Largest is the most devices that can be found together (with one value of the attribute for
	// matchAttribute, with distinct values for distinctAttribute, the devices the competing requests
	// can share), Needed how many the requests need.
	Largest int `json:"largest,omitempty"`
	Needed  int `json:"needed,omitempty"`
	// Steps is the number of steps the search took (SearchGaveUp, NoCombination).
	Steps int `json:"steps,omitempty"`
}

// ValueCount is an attribute value and the number of candidates having it; Value "" counts the
// candidates without the attribute.
type ValueCount struct {
	Value   string `json:"value"`
	Devices int    `json:"devices"`
}

// Explain answers why the claims fit on the node or not: for each request, how many devices each filter
// removed and which objects did it; for requests that each have enough candidates, what keeps them from
// fitting together. It runs the same search as Allocate (Explanation.Fits and Steps are Allocate's) and
// then a separate, linear pass over the node's devices, so it costs more than Allocate; Allocate and Fits
// pay nothing for it.
//
// Errors are those of Allocate, except that the claims not fitting is no error and a CEL selector failing
// on a device is reported as [ReasonCELError] instead; running out of Options.StepBudget gives an
// explanation with [ReasonSearchGaveUp].
func (s *Snapshot) Explain(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) (*Explanation, error) {
	var out *Explanation
	err := s.do(ctx, node, claims, func(a *allocation) (bool, error) {
		var err error
		out, err = a.explain()
		return out != nil && out.Fits, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ExplainOnNode is Explain for a node added with [Snapshot.AddOrUpdateNode].
func (s *Snapshot) ExplainOnNode(ctx context.Context, nodeName string, claims []*resourceapi.ResourceClaim) (*Explanation, error) {
	node, err := s.namedNode(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	return s.Explain(ctx, node, claims)
}

// Reasons is the short form: one line per request without enough candidates, per obstacle and per
// unusable pool, most specific first; empty when the claims fit.
func (e *Explanation) Reasons() []string {
	if e.Fits {
		return nil
	}
	var out []string
	for _, q := range e.Quota {
		out = append(out, q.String())
	}
	for _, c := range e.Claims {
		for i := range c.Requests {
			r := &c.Requests[i]
			if r.Short() {
				out = append(out, RequestRef{Claim: c.Claim, Request: r.Request}.String()+": "+r.summary(true))
			}
		}
	}
	for i := range e.Obstacles {
		out = append(out, e.Obstacles[i].String())
	}
	for i := range e.Pools {
		out = append(out, e.Pools[i].Error())
	}
	return out
}

// Dominant is the one line that best says why the claims do not fit: the first of Reasons; "" when
// they fit.
func (e *Explanation) Dominant() string {
	if r := e.Reasons(); len(r) > 0 {
		return r[0]
	}
	return ""
}

// String renders the explanation as indented text: the verdict, then each claim and request with its
// counts and filters, then the obstacles and pools.
func (e *Explanation) String() string {
	var b strings.Builder
	if e.Fits {
		fmt.Fprintf(&b, "node %s: claims fit (%s)\n", e.Node, plural(e.Steps, "search step"))
	} else {
		fmt.Fprintf(&b, "node %s: claims do not fit (%s)\n", e.Node, plural(e.Steps, "search step"))
	}
	for _, c := range e.Claims {
		fmt.Fprintf(&b, "  claim %s\n", c.Claim)
		for i := range c.Requests {
			r := &c.Requests[i]
			fmt.Fprintf(&b, "    request %q (class %s): %s\n", r.Request, r.Class, r.summary(false))
			for _, f := range r.Filters {
				for _, cause := range f.Causes {
					fmt.Fprintf(&b, "      - %s\n", cause.text(f.Reason))
				}
			}
		}
	}
	for i := range e.Obstacles {
		fmt.Fprintf(&b, "  %s\n", e.Obstacles[i].String())
	}
	for i := range e.Pools {
		fmt.Fprintf(&b, "  %s\n", e.Pools[i].Error())
	}
	return b.String()
}

// summary is "needs 4 devices, 1 of 8 is a candidate", followed with causes by ": 6 rejected by …, 1
// allocated to …" (the three largest) when the request is short.
func (r *RequestExplanation) summary(causes bool) string {
	var b strings.Builder
	if r.All {
		fmt.Fprintf(&b, "needs all %s, %d free", plural(r.Needs, "matching device"), r.Candidates)
	} else {
		fmt.Fprintf(&b, "needs %s, %d of %d %s", plural(r.Needs, "device"), r.Candidates, r.Devices, candidates(r.Candidates))
	}
	if causes && r.Short() && len(r.Filters) > 0 {
		b.WriteString(": ")
		n := 0
		for _, f := range r.Filters {
			for _, c := range f.Causes {
				if n > 0 {
					b.WriteString(", ")
				}
				if n == 3 {
					b.WriteString("…")
					return b.String()
				}
				b.WriteString(c.text(f.Reason))
				n++
			}
		}
	}
	return b.String()
}

func candidates(n int) string {
	if n == 1 {
		return "is a candidate"
	}
	return "are candidates"
}

// text is one cause in words: "6 rejected by DeviceClass gpu-h100 spec.selectors[0] (expr)".
func (c *Cause) text(r Reason) string { return strconv.Itoa(c.Devices) + " " + c.phrase(r) }

// phrase is what a cause did to its devices, without their number.
func (c *Cause) phrase(r Reason) string {
	switch r {
	case ReasonPoolIncomplete, ReasonPoolInvalid:
		return "in " + c.Object + ", " + c.Message
	case ReasonBindingConditions:
		return "with binding conditions, which are disabled"
	case ReasonClassSelector, ReasonRequestSelector:
		return "rejected by " + c.Object + " " + c.Field + " (" + c.Expression + ")"
	case ReasonCELError:
		return "where " + c.Object + " " + c.Field + " failed: " + c.Message
	case ReasonNotOnNode:
		return "not available on this node (" + c.Object + ")"
	case ReasonAllocated:
		return "allocated to " + c.Object
	case ReasonCapacity:
		if c.Available == "" {
			return "cannot serve capacity " + c.Name + " " + c.Needed
		}
		return "short of capacity " + c.Name + ": need " + c.Needed + ", " + c.Available + " free"
	case ReasonNodeOperations:
		return "skip node operations, which this node does not support"
	case ReasonCounters:
		if c.Name == "" {
			return "would consume counters, which are disabled"
		}
		return "short of counter " + c.CounterSet + "/" + c.Name + ": need " + c.Needed + ", " + c.Available + " left"
	case ReasonCompatibilityGroup:
		return "not compatible with the devices drawing on counter set " + c.CounterSet
	case ReasonTaint:
		return "tainted " + c.Name + ":" + c.Effect + " by " + c.Object
	}
	return string(r)
}

// static reports the filters that decide what a device is, before what the cluster does with it.
func static(r Reason) bool {
	switch r {
	case ReasonPoolIncomplete, ReasonPoolInvalid, ReasonBindingConditions, ReasonClassSelector,
		ReasonRequestSelector, ReasonCELError, ReasonNotOnNode:
		return true
	}
	return false
}

// Headline is one short line for the main reason the claims do not fit, worded so that nodes failing
// the same way share it (it names objects, not devices): `class gpu-h100 matched no device`, `3 of 4
// matching devices tainted maintenance.example.com/firmware:NoSchedule by DeviceTaintRule
// firmware-rollout`; for claims refused for their quota, the first limit (see [QuotaExceeded]). It is ""
// when the claims fit.
func (e *Explanation) Headline() string {
	if e.Fits {
		return ""
	}
	if len(e.Quota) > 0 {
		return e.Quota[0].String()
	}
	for _, c := range e.Claims {
		for i := range c.Requests {
			if r := &c.Requests[i]; r.Short() {
				return RequestRef{Claim: c.Claim, Request: r.Request}.String() + ": " + r.headline()
			}
		}
	}
	if len(e.Obstacles) > 0 {
		// Without the search's steps, which differ from node to node.
		switch o := e.Obstacles[0]; o.Reason {
		case ReasonSearchGaveUp:
			return "search gave up"
		case ReasonNoCombination:
			s := o.String()
			return s[:strings.LastIndex(s, " (")]
		default:
			return o.String()
		}
	}
	return "claims do not fit"
}

// headline is the main reason a short request is short: what its selectors leave, that fewer devices
// match than it needs, or the largest cause that removed matching devices. The claims holding devices
// count as one cause, named by the first of them and how many others: the devices in use are what the
// node lacks, whichever claim holds each.
func (r *RequestExplanation) headline() string {
	matching := r.Devices
	var top *Cause
	var topReason Reason
	var topStatic *Cause
	var topStaticReason Reason
	var held Cause // the holders of matching devices, summed
	holders := 0
	for fi := range r.Filters {
		f := &r.Filters[fi]
		if f.Reason == ReasonAllocated && len(f.Causes) > 0 {
			held, holders = f.Causes[0], len(f.Causes)
			held.Devices = f.Removed
			if top == nil || held.Devices > top.Devices {
				top, topReason = &held, f.Reason
			}
			continue
		}
		for ci := range f.Causes {
			c := &f.Causes[ci]
			if static(f.Reason) {
				if topStatic == nil || c.Devices > topStatic.Devices {
					topStatic, topStaticReason = c, f.Reason
				}
				continue
			}
			if top == nil || c.Devices > top.Devices {
				top, topReason = c, f.Reason
			}
		}
		if static(f.Reason) {
			matching -= f.Removed
		}
	}
	switch {
	case r.Devices == 0:
		return "no device of the node's pools"
	case matching == 0 && topStaticReason == ReasonClassSelector:
		return "class " + r.Class + " matched no device"
	case matching == 0 && topStaticReason == ReasonRequestSelector:
		return "the request's selectors matched no device of class " + r.Class
	case matching == 0:
		return "no device usable: " + topStatic.phrase(topStaticReason)
	case !r.All && matching < r.Needs:
		// The node cannot serve the request even with every device free: what is in use there is not
		// why it does not fit.
		return fmt.Sprintf("needs %s, the node has %d matching", plural(r.Needs, "device"), matching)
	case top != nil && topReason == ReasonAllocated && holders > 1:
		return fmt.Sprintf("%d of %d matching %s %s and %s", top.Devices, matching, devicesWord(matching), top.phrase(topReason), plural(holders-1, "other"))
	case top != nil:
		return fmt.Sprintf("%d of %d matching %s %s", top.Devices, matching, devicesWord(matching), top.phrase(topReason))
	}
	return fmt.Sprintf("needs %s, %d match", plural(r.Needs, "device"), matching)
}

func devicesWord(n int) string {
	if n == 1 {
		return "device"
	}
	return "devices"
}

func (o *Obstacle) String() string {
	refs := make([]string, len(o.Requests))
	for i, r := range o.Requests {
		refs[i] = r.String()
	}
	who := strings.Join(refs, "; ")
	switch o.Reason {
	case ReasonTooManyResults:
		return who + ": the claim would hold " + plural(o.Needed, "device") + ", more than 32"
	case ReasonConstraint:
		var vals []string
		for i, v := range o.Values {
			if i == 5 {
				vals = append(vals, "…")
				break
			}
			val := v.Value
			if val == "" {
				val = "(none)"
			}
			vals = append(vals, fmt.Sprintf("%s: %d", val, v.Devices))
		}
		return fmt.Sprintf("%s: constraint %s on %s: at most %d of the %s needed together (candidates by value: %s)",
			who, o.Field, o.Attribute, o.Largest, plural(o.Needed, "device"), strings.Join(vals, ", "))
	case ReasonCompeting:
		return fmt.Sprintf("%s: together need %s and share %s", who, plural(o.Needed, "device"), plural(o.Largest, "candidate"))
	case ReasonSearchGaveUp:
		return "search gave up after " + plural(o.Steps, "step")
	case ReasonNoCombination:
		return "no combination of the candidates satisfies every request together (" + plural(o.Steps, "search step") + ")"
	}
	return who + ": " + string(o.Reason)
}

// plural is "1 device", "2 devices".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// poolNotReady is ErrPoolNotReady for a request for all devices, also matching ErrPoolIncomplete or
// ErrPoolInvalid.
type poolNotReady struct{ kind error }

func (e poolNotReady) Error() string   { return ErrPoolNotReady.Error() }
func (e poolNotReady) Unwrap() []error { return []error{ErrPoolNotReady, e.kind} }

// Err is nil when the claims fit, otherwise an *UnsatisfiableError (wrapping [ErrUnsatisfiable] and the
// pools' errors) carrying the short form and the explanation, for callers that pass errors on.
func (e *Explanation) Err() error {
	if e.Fits {
		return nil
	}
	return &UnsatisfiableError{Node: e.Node, Reasons: e.Reasons(), Pools: e.Pools, Steps: e.Steps, Explanation: e, Quota: e.Quota}
}
