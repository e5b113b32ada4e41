package capacity

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// RangeRequest is a request that accepts a range of capacity instead of a point, for example an inference
// server that runs in 4Gi of GPU memory but prefers 12Gi for its KV cache.
//
// This is an SDK extension: the Kubernetes API (capacity.requests of a DeviceRequest) has only a point
// request. Min is that point request, as written in the claim; Preferred is the preferred maximum, which the
// caller supplies from its own configuration (an annotation, a policy).
type RangeRequest struct {
	// Min are the capacity requests of the claim; nil means none.
	Min map[resourceapi.QualifiedName]resource.Quantity
	// Preferred are the preferred maxima. A capacity without an entry, or with one below what Min
	// consumes, gets what Min consumes.
	Preferred map[resourceapi.QualifiedName]resource.Quantity
}

// RangeResult is the outcome of [ConsumedRange].
type RangeResult struct {
	// Consumed is what to write to the AllocationResult, in
	// status.allocation.devices.results[].consumedCapacity of the share: for every capacity of the device a
	// value that its request policy allows, at least Minimum and at most Preferred where that is above
	// Minimum. Kubernetes accounts shares by this recorded value, so the whole amount stays reserved while
	// the claim is allocated.
	Consumed map[resourceapi.QualifiedName]resource.Quantity
	// Minimum is what the point request Min consumes ([Consumed]); this is what the Kubernetes scheduler
	// itself would have recorded.
	Minimum map[resourceapi.QualifiedName]resource.Quantity
	// Headroom is Consumed − Minimum for every capacity where it is positive: what could be handed back when
	// the device becomes contended. An AllocationResult is immutable, so handing it back means deallocating
	// the claim and allocating it again at Minimum.
	Headroom map[resourceapi.QualifiedName]resource.Quantity
}

// ConsumedRange computes the largest policy-valid consumption between what the point request consumes and
// the preferred maximum that still fits next to the shares in ledger (nil for a device without shares). device
// is the device's capacity map (the one ledger was made from).
//
// It fails like [Consumed] when the point request itself is unsuitable or does not fit, and with
// [ErrUnsuitable] when Preferred names a capacity the device lacks. For a capacity with validRange the
// amount is rounded down to min + n·step and capped at max; with validValues it is the largest valid value
// not above the target; without a policy it is the target itself.
func ConsumedRange(req RangeRequest, device map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, ledger *Ledger, opts Options) (RangeResult, error) {
	minimum, err := Consumed(req.Min, device, opts)
	if err != nil {
		return RangeResult{}, err
	}
	if ledger != nil && !ledger.Fits(minimum) {
		return RangeResult{}, fmt.Errorf("minimum %v does not fit next to the device's shares: %w", minimum, ErrUnsuitable)
	}
	res := RangeResult{Consumed: make(map[resourceapi.QualifiedName]resource.Quantity, len(minimum)), Minimum: minimum,
		Headroom: map[resourceapi.QualifiedName]resource.Quantity{}}
	for name, m := range minimum {
		res.Consumed[name] = m.DeepCopy()
	}
	for _, name := range sortedNames(req.Preferred) {
		dc, ok := device[name]
		if !ok {
			return RangeResult{}, fmt.Errorf("capacity %q: %w: preferred, but the device does not have it", name, ErrUnsuitable)
		}
		target := req.Preferred[name].DeepCopy()
		if ledger != nil {
			if avail, _ := ledger.Available(name); avail.Cmp(target) < 0 {
				target = avail
			}
		} else if dc.Value.Cmp(target) < 0 {
			target = dc.Value.DeepCopy()
		}
		v, ok := floorValid(target, dc, opts)
		m := minimum[name]
		if !ok || v.Cmp(m) <= 0 || !Valid(v, dc, opts) {
			continue
		}
		res.Consumed[name] = v
		h := v.DeepCopy()
		h.Sub(m)
		res.Headroom[name] = h
	}
	return res, nil
}

// floorValid returns the largest amount not above target that the policy of dc allows, and false when
// there is none.
func floorValid(target resource.Quantity, dc resourceapi.DeviceCapacity, opts Options) (resource.Quantity, bool) {
	if target.Sign() < 0 {
		return resource.Quantity{}, false
	}
	p := dc.RequestPolicy
	switch {
	case p == nil:
		return target, true
	case p.ValidRange != nil:
		r := *p.ValidRange
		if checkPolicy(p) != nil || target.Cmp(*r.Min) < 0 {
			return resource.Quantity{}, false
		}
		if r.Max != nil && target.Cmp(*r.Max) > 0 {
			target = r.Max.DeepCopy()
		}
		if r.Step == nil {
			return target, true
		}
		if useMilli(r, opts.fractional()) {
			t, ok := milli(target)
			if !ok {
				t = target.MilliValue() - 1 // MilliValue rounds up; the floor is one below
			}
			lo, step := r.Min.MilliValue(), r.Step.MilliValue()
			v := lo + (t-lo)/step*step
			if v%1000 == 0 {
				return *resource.NewQuantity(v/1000, r.Step.Format), true
			}
			return *resource.NewMilliQuantity(v, r.Step.Format), true
		}
		t := target.Value() // rounds up: step back when that passed the target
		if resource.NewQuantity(t, target.Format).Cmp(target) > 0 {
			t--
		}
		lo, step := r.Min.Value(), r.Step.Value()
		if t < lo {
			return resource.Quantity{}, false
		}
		return *resource.NewQuantity(lo+(t-lo)/step*step, r.Step.Format), true
	case len(p.ValidValues) > 0:
		for i := len(p.ValidValues) - 1; i >= 0; i-- {
			if p.ValidValues[i].Cmp(target) <= 0 {
				return p.ValidValues[i].DeepCopy(), true
			}
		}
		return resource.Quantity{}, false
	}
	return target, true
}
