package capacity

import (
	"context"
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/fuzz/watchdog"
)

// FuzzConsumed feeds arbitrary quantities into a range policy: Consumed must never panic, and whatever it
// returns must be policy-valid, at least the request, and a fixed point (requesting it consumes it again).
func FuzzConsumed(f *testing.F) {
	f.Add("250m", "0", "100m", "4", "", false)
	f.Add("10Gi", "4Gi", "4Gi", "80Gi", "40Gi", false)
	f.Add("1e19", "1", "1", "2e19", "", true)
	f.Add("600m", "500m", "250m", "4", "2", false)
	f.Add("0.0001", "0", "100u", "1", "", false)
	f.Add("1", "0", "1", "9223372036854775807Ei", "", false)
	f.Add("1E-100000000", "0", "-1", "1", "", false)
	f.Fuzz(func(t *testing.T, req, lo, step, value, hi string, noFractions bool) {
		watchdog.Run(t, []string{req, lo, step, value, hi}, func(context.Context) {
			parse := func(s string) (*resource.Quantity, bool) {
				if watchdog.SlowToParse(s) {
					return nil, false
				}
				q, err := resource.ParseQuantity(s)
				return &q, err == nil
			}
			r, ok1 := parse(req)
			mn, ok2 := parse(lo)
			st, ok3 := parse(step)
			v, ok4 := parse(value)
			if !ok1 || !ok2 || !ok3 || !ok4 || mn.Sign() < 0 || mn.Cmp(*v) > 0 {
				return
			}
			rng := &resourceapi.CapacityRequestPolicyRange{Min: mn, Step: st}
			if m, ok := parse(hi); ok && hi != "" {
				if m.Cmp(*mn) < 0 || m.Cmp(*v) > 0 {
					return // the API requires min ≤ max ≤ value
				}
				rng.Max = m
			}
			dc := resourceapi.DeviceCapacity{Value: *v, RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: mn, ValidRange: rng}}
			opts := integerRanges(noFractions)
			got, err := Consumed(qmap{"c": *r}, cmap{"c": dc}, opts)
			if err != nil {
				// Quantities beyond ValidateQuantity's bounds are refused before any arithmetic.
				if !errors.Is(err, ErrUnsuitable) && !errors.Is(err, ErrNotRepresentable) && !errors.Is(err, ErrInvalidPolicy) &&
					!errors.Is(err, ErrNegative) && !errors.Is(err, ErrUnboundedQuantity) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			c := got["c"]
			if !Valid(c, dc, opts) || c.Cmp(*r) < 0 {
				t.Fatalf("consumed %s for request %s is not valid or below the request", c.String(), r.String())
			}
			// The integer arithmetic rounds fractional bounds up, so a recorded amount is requested again
			// unchanged only when the range is whole or computed in milli-units.
			if !useMilli(*rng, !noFractions) && !(whole(mn) && whole(st) && (rng.Max == nil || whole(rng.Max))) {
				return
			}
			again, err := Consumed(qmap{"c": c}, cmap{"c": dc}, opts)
			if a := again["c"]; err != nil || a.Cmp(c) != 0 {
				t.Fatalf("requesting %s consumes %s (%v)", c.String(), a.String(), err)
			}
		})
	})
}

func whole(q *resource.Quantity) bool {
	return q.Cmp(*resource.NewQuantity(q.Value(), q.Format)) == 0
}
