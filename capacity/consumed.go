package capacity

import (
	"errors"
	"fmt"
	"math"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator/gates"
)

// Options configures the arithmetic. The zero value gives the behaviour of Kubernetes 1.37 with its default
// feature gates.
type Options struct {
	// Features are the feature gates, as everywhere in dralloc; nil means gates.Default(). Of them only
	// DRAFractionalCapacityRange matters here: with it off, range arithmetic is always done on integers
	// (resource.Quantity.Value, which rounds up), as before Kubernetes 1.36.
	Features *gates.Features
}

// fractional reports whether DRAFractionalCapacityRange is on.
func (o Options) fractional() bool { return o.Features == nil || o.Features.DRAFractionalCapacityRange }

var (
	// ErrUnsuitable reports that a device cannot serve a request: the request names a capacity the device
	// does not have, the policy-rounded amount violates the device's request policy, or it exceeds what is
	// left of the device. Another device may still be suitable.
	ErrUnsuitable = errors.New("device cannot serve the request")

	// ErrNotRepresentable reports a request, or the value it rounds up to, that the range arithmetic cannot
	// represent (past MaxInt64, or past the milli-value range with fractional arithmetic). As in the
	// Kubernetes allocator this aborts the allocation instead of trying the next device.
	ErrNotRepresentable = errors.New("capacity request cannot be represented in the device's range arithmetic")

	// ErrNegative reports a consumed capacity below zero, which can only come from stored objects that
	// predate stricter validation.
	ErrNegative = errors.New("capacity value is negative")

	// ErrInvalidPolicy reports a request policy that API validation would reject and that the arithmetic
	// cannot work with (a range without min, a step that is not positive).
	ErrInvalidPolicy = errors.New("invalid request policy")
)

// Consumed returns what one request consumes of one device with allowMultipleAllocations, exactly as the
// Kubernetes 1.37 allocator computes it (and records it in status.allocation.devices.results[].consumedCapacity):
//
//   - every capacity of the device gets an entry, requested or not;
//   - a capacity that is not requested consumes the policy's default, else the whole value;
//   - without a policy a request consumes what it asks for;
//   - with validRange the request is raised to min, then to the next min + n·step, and must not exceed max;
//   - with validValues the request is raised to the smallest valid value at or above it, and a request above
//     every valid value violates the policy;
//   - the result must not exceed the capacity's value.
//
// With fractional capacity ranges (the default) the range arithmetic works in milli-units when min, max and
// step are all representable there and step is at least 1m (250m with step 100m consumes 300m); otherwise it
// works on integers, rounding every amount up (250m with step 1 consumes 1).
//
// The Kubernetes allocator applies the same computation as a filter to devices without
// allowMultipleAllocations (a request above such a device's capacity does not fit it), but records the
// consumed capacity only for shares of devices with allowMultipleAllocations.
//
// requests may be nil, which means no capacity requirements. Consumed returns an error wrapping
// [ErrUnsuitable] when the device cannot serve the request, and other errors ([ErrNotRepresentable],
// [ErrNegative], [ErrInvalidPolicy]) for invalid input, naming the capacity. Inputs are not mutated.
func Consumed(requests map[resourceapi.QualifiedName]resource.Quantity, device map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, opts Options) (map[resourceapi.QualifiedName]resource.Quantity, error) {
	// The common case succeeds; visit the maps in their own order and only when something fails visit the
	// capacities again in name order, so that the error reported does not depend on map order.
	out, err := resolveAll(requests, device, opts, false)
	if err != nil {
		_, err = resolveAll(requests, device, opts, true)
		return nil, err
	}
	return out, nil
}

func resolveAll(requests map[resourceapi.QualifiedName]resource.Quantity, device map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, opts Options, sorted bool) (map[resourceapi.QualifiedName]resource.Quantity, error) {
	// As the Kubernetes allocator: a request for a capacity the device lacks is a soft mismatch that is
	// decided before anything else, so that another device can be tried.
	var requestBuf, capacityBuf [8]resourceapi.QualifiedName
	// Quantities that would make the arithmetic unbounded are refused before any arithmetic.
	for _, name := range names(requests, sorted, requestBuf[:0]) {
		if err := ValidateQuantity(requests[name]); err != nil {
			return nil, fmt.Errorf("capacity %q: request: %w", name, err)
		}
	}
	capacities := names(device, sorted, capacityBuf[:0])
	for _, name := range capacities {
		if err := ValidateCapacity(device[name]); err != nil {
			return nil, fmt.Errorf("capacity %q: %w", name, err)
		}
	}
	for _, name := range names(requests, sorted, requestBuf[:0]) {
		if _, ok := device[name]; !ok {
			return nil, fmt.Errorf("capacity %q: %w: the device does not have it", name, ErrUnsuitable)
		}
	}
	out := make(map[resourceapi.QualifiedName]resource.Quantity, len(device))
	// Resolve every capacity before any policy check: an unrepresentable request is fatal whichever
	// capacity it is on, so the answer must not depend on the order in which capacities are visited.
	for _, name := range capacities {
		var req *resource.Quantity
		if q, ok := requests[name]; ok {
			req = &q
		}
		c, err := resolve(req, device[name], opts)
		if err != nil {
			return nil, fmt.Errorf("capacity %q: %w", name, err)
		}
		if c.Sign() < 0 {
			return nil, fmt.Errorf("capacity %q: consumed %s: %w", name, c.String(), ErrNegative)
		}
		out[name] = c
	}
	for _, name := range capacities {
		dc := device[name]
		c := out[name]
		if violates(c, dc.RequestPolicy, opts) {
			return nil, fmt.Errorf("capacity %q: %s violates the request policy: %w", name, c.String(), ErrUnsuitable)
		}
		if c.Cmp(dc.Value) > 0 {
			return nil, fmt.Errorf("capacity %q: %s exceeds the device's %s: %w", name, c.String(), dc.Value.String(), ErrUnsuitable)
		}
	}
	return out, nil
}

// names returns the keys of m, sorted when asked; unsorted they are appended to buf, which avoids
// allocating when buf has room.
func names[V any](m map[resourceapi.QualifiedName]V, sorted bool, buf []resourceapi.QualifiedName) []resourceapi.QualifiedName {
	if sorted {
		return sortedNames(m)
	}
	out := buf
	for n := range m {
		out = append(out, n)
	}
	return out
}

// Valid reports whether amount is a value that a request may consume of capacity dc under its request
// policy (ignoring how much of the device is already used). It is the check the Kubernetes allocator
// applies after rounding.
func Valid(amount resource.Quantity, dc resourceapi.DeviceCapacity, opts Options) bool {
	if amount.Sign() < 0 || amount.Cmp(dc.Value) > 0 {
		return false
	}
	if err := checkPolicy(dc.RequestPolicy); err != nil {
		return false
	}
	return !violates(amount, dc.RequestPolicy, opts)
}

// resolve turns an optional request into the amount consumed of one capacity.
func resolve(req *resource.Quantity, dc resourceapi.DeviceCapacity, opts Options) (resource.Quantity, error) {
	if err := checkPolicy(dc.RequestPolicy); err != nil {
		return resource.Quantity{}, err
	}
	p := dc.RequestPolicy
	if req == nil {
		if p != nil && p.Default != nil {
			return p.Default.DeepCopy(), nil
		}
		return dc.Value.DeepCopy(), nil
	}
	switch {
	case p == nil:
		return req.DeepCopy(), nil
	case p.ValidRange != nil:
		return roundUpRange(*req, *p.ValidRange, opts.fractional())
	case p.ValidValues != nil:
		for _, v := range p.ValidValues {
			if req.Cmp(v) <= 0 {
				return v.DeepCopy(), nil
			}
		}
	}
	return req.DeepCopy(), nil
}

// checkPolicy rejects the policies on which the range arithmetic is undefined.
func checkPolicy(p *resourceapi.CapacityRequestPolicy) error {
	if p == nil || p.ValidRange == nil {
		return nil
	}
	if p.ValidRange.Min == nil {
		return fmt.Errorf("requestPolicy.validRange.min: %w: required", ErrInvalidPolicy)
	}
	if s := p.ValidRange.Step; s != nil && (s.Sign() <= 0 || s.Value() <= 0) {
		return fmt.Errorf("requestPolicy.validRange.step: %w: must be positive, got %s", ErrInvalidPolicy, s.String())
	}
	return nil
}

// roundUpRange raises req to min, then to the next min + n·step.
func roundUpRange(req resource.Quantity, r resourceapi.CapacityRequestPolicyRange, fractional bool) (resource.Quantity, error) {
	if req.Cmp(*r.Min) < 0 {
		return r.Min.DeepCopy(), nil
	}
	if r.Step == nil {
		return req.DeepCopy(), nil
	}
	format := r.Step.Format
	if useMilli(r, fractional) {
		reqM, ok := milli(req)
		if !ok {
			return resource.Quantity{}, fmt.Errorf("%w: request %s is not a representable milli value", ErrNotRepresentable, req.String())
		}
		stepM, minM := r.Step.MilliValue(), r.Min.MilliValue()
		n := ceilDiv(reqM-minM, stepM)
		if n > (math.MaxInt64-minM)/stepM {
			return resource.Quantity{}, fmt.Errorf("%w: rounding request %s up to the next step passes the milli-value range", ErrNotRepresentable, req.String())
		}
		v := minM + stepM*n
		// Whole results are written as whole quantities, the way they would have been parsed.
		if v%1000 == 0 {
			return *resource.NewQuantity(v/1000, format), nil
		}
		return *resource.NewMilliQuantity(v, format), nil
	}
	if req.CmpInt64(math.MaxInt64) > 0 {
		return resource.Quantity{}, fmt.Errorf("%w: request %s exceeds MaxInt64", ErrNotRepresentable, req.String())
	}
	reqI, stepI, minI := req.Value(), r.Step.Value(), r.Min.Value()
	n := ceilDiv(reqI-minI, stepI)
	if minI >= 0 && n > (math.MaxInt64-minI)/stepI {
		return resource.Quantity{}, fmt.Errorf("%w: rounding request %s up to the next step passes MaxInt64", ErrNotRepresentable, req.String())
	}
	return *resource.NewQuantity(minI+stepI*n, format), nil
}

// ceilDiv divides a non-negative a by a positive b, rounding up.
func ceilDiv(a, b int64) int64 {
	n := a / b
	if a%b != 0 {
		n++
	}
	return n
}

// violates reports whether amount breaks the policy. The policy default is always acceptable. Kubernetes
// recognises the default by comparing representations, dralloc by value; for the policies API validation
// admits (a default that is itself valid) the answers are the same.
func violates(amount resource.Quantity, p *resourceapi.CapacityRequestPolicy, opts Options) bool {
	if p == nil {
		return false
	}
	if p.Default != nil && amount.Cmp(*p.Default) == 0 {
		return false
	}
	switch {
	case p.ValidRange != nil:
		r := *p.ValidRange
		if r.Max != nil && amount.Cmp(*r.Max) > 0 {
			return true
		}
		if r.Step == nil {
			return false
		}
		var a, step, lo int64
		if useMilli(r, opts.fractional()) {
			var ok bool
			if a, ok = milli(amount); !ok {
				return true
			}
			step, lo = r.Step.MilliValue(), r.Min.MilliValue()
		} else {
			a, step, lo = amount.Value(), r.Step.Value(), r.Min.Value()
		}
		return (a-lo)%step != 0
	case len(p.ValidValues) > 0:
		for _, v := range p.ValidValues {
			if amount.Cmp(v) == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// useMilli reports whether the range is computed in milli-units: fractional ranges are enabled, min, max
// and step are exactly representable in milli-units, and step is at least 1m.
func useMilli(r resourceapi.CapacityRequestPolicyRange, fractional bool) bool {
	if !fractional {
		return false
	}
	for _, q := range []*resource.Quantity{r.Min, r.Max, r.Step} {
		if q == nil {
			continue
		}
		if _, ok := milli(*q); !ok {
			return false
		}
	}
	if r.Step != nil && r.Step.MilliValue() < 1 {
		return false
	}
	return true
}

// milli returns q in milli-units when that is exact.
func milli(q resource.Quantity) (int64, bool) {
	m := q.MilliValue()
	return m, q.Cmp(*resource.NewMilliQuantity(m, q.Format)) == 0
}

func sortedNames[V any](m map[resourceapi.QualifiedName]V) []resourceapi.QualifiedName {
	names := make([]resourceapi.QualifiedName, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
