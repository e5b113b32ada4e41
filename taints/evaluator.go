package taints

import (
	"errors"
	"fmt"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalidRule is wrapped by the errors of [NewEvaluator] for a DeviceTaintRule that the API would reject.
var ErrInvalidRule = errors.New("invalid DeviceTaintRule")

// DeviceID identifies one device: the driver, the pool and the device name within the pool, as a
// DeviceRequestAllocationResult names it. It is dralloc's one device identity, a small comparable value usable
// as a map key; allocator.DeviceID and verify.DeviceID are aliases of it. It is defined here, in the lowest
// package that needs it (the allocator and the verifier both import taints).
type DeviceID struct {
	Driver string `json:"driver"`
	Pool   string `json:"pool"`
	Device string `json:"device"`
}

// String returns driver/pool/device, the form Kubernetes uses in messages, and "" for the zero DeviceID (no
// device).
func (id DeviceID) String() string {
	if id == (DeviceID{}) {
		return ""
	}
	return id.Driver + "/" + id.Pool + "/" + id.Device
}

// Evaluator holds DeviceTaintRules prepared for lookup: validated, ordered by name and indexed by the pool
// and device name they select. Build one when the rules change, then ask [Evaluator.Taints] for every device.
//
// The selector of a rule is matched as Kubernetes 1.37 matches it (k8s.io/api resource/v1
// DeviceTaintSelector): every field that is set (driver, pool, device) must equal the device's; an empty
// selector matches every device; a rule without a selector matches none. The deviceClassName and selectors
// fields of earlier API versions were removed in Kubernetes 1.35, because the eviction controller cannot
// evaluate CEL against allocated devices; dralloc offers class-based selection as an SDK extension that
// expands into per-device rules instead, see [ExpandClass].
//
// An Evaluator is immutable and safe for concurrent use.
type Evaluator struct {
	rules        []rule
	byPoolDevice map[[2]string][]int // rules selecting a pool and a device name, ascending
	byDevice     map[string][]int    // rules selecting a device name in any pool, ascending
	byPool       map[string][]int    // rules selecting a pool, any device name, ascending
	anyDevice    []int               // rules selecting neither, ascending
}

type rule struct {
	name               string
	driver, pool       string
	hasDriver, hasPool bool
	taint              resourceapi.DeviceTaint
	generation         int64
	selectsNothing     bool
	device             string
	hasDevice          bool
}

// NewEvaluator validates and indexes the rules (see [ValidateRule]; effects unknown to this version are
// accepted, as in stored objects, and never block or evict). An invalid rule, a nil rule or two rules with
// the same name yield an error that names the DeviceTaintRule and the field, wrapping [ErrInvalidRule].
// The rules are copied; the Evaluator does not retain them.
func NewEvaluator(rules []*resourceapi.DeviceTaintRule) (*Evaluator, error) {
	e := &Evaluator{byPoolDevice: map[[2]string][]int{}, byDevice: map[string][]int{}, byPool: map[string][]int{}}
	seen := make(map[string]bool, len(rules))
	for i, r := range rules {
		if r == nil {
			return nil, fmt.Errorf("%w: rules[%d] is nil", ErrInvalidRule, i)
		}
		if errs := filterUnknownEffect(ValidateRule(r)); len(errs) > 0 {
			return nil, fmt.Errorf("%w: DeviceTaintRule %s: %w", ErrInvalidRule, r.Name, errs.ToAggregate())
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("%w: DeviceTaintRule %s: metadata.name: duplicate", ErrInvalidRule, r.Name)
		}
		seen[r.Name] = true
		c := rule{name: r.Name, generation: r.Generation, taint: *r.Spec.Taint.DeepCopy()}
		if sel := r.Spec.DeviceSelector; sel == nil {
			c.selectsNothing = true
		} else {
			c.driver, c.hasDriver = deref(sel.Driver)
			c.pool, c.hasPool = deref(sel.Pool)
			c.device, c.hasDevice = deref(sel.Device)
		}
		e.rules = append(e.rules, c)
	}
	sort.Slice(e.rules, func(i, j int) bool { return e.rules[i].name < e.rules[j].name })
	for i, r := range e.rules {
		switch {
		case r.selectsNothing:
		case r.hasDevice && r.hasPool:
			k := [2]string{r.pool, r.device}
			e.byPoolDevice[k] = append(e.byPoolDevice[k], i)
		case r.hasDevice:
			e.byDevice[r.device] = append(e.byDevice[r.device], i)
		case r.hasPool:
			e.byPool[r.pool] = append(e.byPool[r.pool], i)
		default:
			e.anyDevice = append(e.anyDevice, i)
		}
	}
	return e, nil
}

func deref(s *string) (string, bool) {
	if s == nil {
		return "", false
	}
	return *s, true
}

func filterUnknownEffect(errs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for _, err := range errs {
		if err.Type == field.ErrorTypeNotSupported && err.Field == "spec.taint.effect" {
			continue
		}
		out = append(out, err)
	}
	return out
}

func (r *rule) matches(driver, pool string) bool {
	return (!r.hasDriver || r.driver == driver) && (!r.hasPool || r.pool == pool)
}

// Taints returns the effective taints of a device: its own taints (from the ResourceSlice) first, then the
// taint of every matching rule in the order of the rules' names. The result may share its backing array with
// dev.Taints when no rule matches (it is capped, so appending to it never writes into dev); it must not be
// modified in place. dev is not mutated. A nil dev has no taints.
func (e *Evaluator) Taints(driver, pool string, dev *resourceapi.Device) []resourceapi.DeviceTaint {
	if dev == nil {
		return nil
	}
	own := dev.Taints[:len(dev.Taints):len(dev.Taints)]
	if e == nil {
		return own
	}
	out := own
	e.each(driver, pool, dev.Name, func(r *rule) {
		if len(out) == len(own) {
			out = make([]resourceapi.DeviceTaint, len(own), len(own)+2)
			copy(out, own)
		}
		out = append(out, r.taint)
	})
	return out
}

// RuleNames returns the names of the rules that select the device, in name order.
func (e *Evaluator) RuleNames(id DeviceID) []string {
	var names []string
	e.each(id.Driver, id.Pool, id.Device, func(r *rule) { names = append(names, r.name) })
	return names
}

// each calls fn for every rule that selects the device, in name order.
func (e *Evaluator) each(driver, pool, device string, fn func(*rule)) {
	if e == nil {
		return
	}
	lists := [4][]int{e.byPoolDevice[[2]string{pool, device}], e.byDevice[device], e.byPool[pool], e.anyDevice}
	for {
		best := -1
		for k := range lists {
			if len(lists[k]) > 0 && (best < 0 || lists[k][0] < lists[best][0]) {
				best = k
			}
		}
		if best < 0 {
			return
		}
		i := lists[best][0]
		lists[best] = lists[best][1:]
		if r := &e.rules[i]; r.matches(driver, pool) {
			fn(r)
		}
	}
}
