package capacity

import (
	"errors"
	"fmt"
	"math"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ErrUnboundedQuantity reports a quantity outside the bounds of [ValidateQuantity]: arithmetic on it could
// run for minutes or exhaust memory, so it is refused before any arithmetic.
var ErrUnboundedQuantity = errors.New("quantity out of bounds")

// Bounds of [ValidateQuantity]. A resource.Quantity is an integer m times 10^e, held as an int64 or as an
// inf.Dec. ParseQuantity rounds every non-zero value up to a multiple of 1n, so e >= -9 for those; but it
// keeps any exponent for zero ("0E100000000", "0e-100000000") and for decimal exponents ("1E100000000"),
// and adding, subtracting or comparing such a quantity with an ordinary one first rescales one of them to
// the common exponent: an integer with a hundred million digits, minutes of work and gigabytes of memory.
// The largest exponent is twice that of the largest suffix (E, 10^18); rescaling between the two bounds
// multiplies by at most 10^45.
const (
	minQuantityExponent = -9
	maxQuantityExponent = 36
)

// ValidateQuantity reports whether q is a quantity the arithmetic of this package accepts: the decimal
// exponent of its representation lies between -9 (1n, the precision ParseQuantity rounds every non-zero
// value to) and 36. Every quantity that ParseQuantity produces from a number with a suffix ("40Gi",
// "1500m", "8E") or a plain number of any length passes, and so does exponent notation up to 1e36; what
// fails are quantities such as "1E100000000", "0E100000000" or "0e-100000000", which ParseQuantity accepts
// (and the API server stores) but on which every addition or comparison computes a power of ten with a
// hundred million digits. Magnitudes are not bounded here: the arithmetic reports amounts it cannot
// represent with [ErrNotRepresentable], as Kubernetes does.
//
// The check costs O(1), without allocating, for quantities held as int64 at a non-negative exponent and
// for zero, and O(digits) otherwise. It
// does not modify q and does not rescale it. The error wraps [ErrUnboundedQuantity].
func ValidateQuantity(q resource.Quantity) error {
	// Fast path, no allocation: a non-zero value held as an int64 that AsInt64 can return, which means an
	// exponent between 0 and 18 (AsInt64 stops after at most 19 steps on a non-zero value).
	f := q.AsApproximateFloat64()
	if f != 0 && math.Abs(f) < 9e18 {
		if _, ok := q.AsInt64(); ok {
			return nil
		}
	}
	// Fast path for zero, the value drivers publish for every engine a partition lacks (AsInt64 would
	// multiply by ten once per unit of a zero's exponent): the canonical form of a zero is "0" at its
	// exponent rounded down to a multiple of three, which AsCanonicalBytes computes without allocating
	// for a quantity held as an int64. The exponent lies between that and two more.
	if f == 0 {
		var buf [8]byte
		if m, e := q.AsCanonicalBytes(buf[:0]); len(m) == 1 && m[0] == '0' &&
			int64(e) >= minQuantityExponent && int64(e)+2 <= maxQuantityExponent {
			return nil
		}
	}
	// AsDec changes the representation in place; work on a copy so that q keeps its own.
	c := q.DeepCopy()
	exp := -int64(c.AsDec().Scale())
	if exp < minQuantityExponent || exp > maxQuantityExponent {
		return fmt.Errorf("%w: decimal exponent %d is outside [%d, %d]", ErrUnboundedQuantity, exp, minQuantityExponent, maxQuantityExponent)
	}
	return nil
}

// ValidateCapacity applies [ValidateQuantity] to every quantity of a device capacity: its value and the
// default, validValues and validRange of its request policy. The error names the field relative to the
// capacity ("value", "requestPolicy.validRange.step").
func ValidateCapacity(dc resourceapi.DeviceCapacity) error {
	if err := ValidateQuantity(dc.Value); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	p := dc.RequestPolicy
	if p == nil {
		return nil
	}
	if p.Default != nil {
		if err := ValidateQuantity(*p.Default); err != nil {
			return fmt.Errorf("requestPolicy.default: %w", err)
		}
	}
	for i, v := range p.ValidValues {
		if err := ValidateQuantity(v); err != nil {
			return fmt.Errorf("requestPolicy.validValues[%d]: %w", i, err)
		}
	}
	if r := p.ValidRange; r != nil {
		for _, b := range []struct {
			name string
			q    *resource.Quantity
		}{{"min", r.Min}, {"max", r.Max}, {"step", r.Step}} {
			if b.q == nil {
				continue
			}
			if err := ValidateQuantity(*b.q); err != nil {
				return fmt.Errorf("requestPolicy.validRange.%s: %w", b.name, err)
			}
		}
	}
	return nil
}

// validateConsumption applies [ValidateQuantity] to the counters a device consumes; the error names the
// field relative to the device ("consumesCounters[0].counters[memory].value"). The maps are visited in
// their own order, and again in name order only when something fails, so that the common case does not
// allocate and the error does not depend on map order.
func validateConsumption(consumes []resourceapi.DeviceCounterConsumption) error {
	for _, dc := range consumes {
		for _, v := range dc.Counters {
			if ValidateQuantity(v.Value) != nil {
				return firstUnboundedConsumption(consumes)
			}
		}
	}
	return nil
}

func firstUnboundedConsumption(consumes []resourceapi.DeviceCounterConsumption) error {
	for i, dc := range consumes {
		for _, name := range sortedKeys(dc.Counters) {
			if err := ValidateQuantity(dc.Counters[name].Value); err != nil {
				return fmt.Errorf("consumesCounters[%d].counters[%s].value: %w", i, name, err)
			}
		}
	}
	return nil
}
