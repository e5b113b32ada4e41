package capacity

import (
	"errors"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"
)

func milliQ(m int64) resource.Quantity { return *resource.NewMilliQuantity(m, resource.DecimalSI) }

// genCapacity draws a device capacity with a policy that API validation accepts: min, max and default on
// the step grid, value at least max. Amounts are in milli-units so fractional arithmetic is exercised.
func genCapacity(t *rapid.T) resourceapi.DeviceCapacity {
	unit := rapid.SampledFrom([]int64{1, 10, 250, 1000, 1 << 20 * 1000}).Draw(t, "unit")
	switch rapid.IntRange(0, 3).Draw(t, "policy") {
	case 0:
		return resourceapi.DeviceCapacity{Value: milliQ(unit * rapid.Int64Range(0, 64).Draw(t, "value"))}
	case 1:
		lo := unit * rapid.Int64Range(0, 8).Draw(t, "min")
		step := unit * rapid.Int64Range(1, 8).Draw(t, "step")
		k := rapid.Int64Range(0, 16).Draw(t, "k")
		hi := lo + k*step
		def := lo + rapid.Int64Range(0, k).Draw(t, "default")*step
		r := &resourceapi.CapacityRequestPolicyRange{Min: ptrQ(milliQ(lo)), Step: ptrQ(milliQ(step))}
		if rapid.Bool().Draw(t, "hasMax") {
			r.Max = ptrQ(milliQ(hi))
		}
		return resourceapi.DeviceCapacity{Value: milliQ(hi + unit*rapid.Int64Range(0, 4).Draw(t, "slack")),
			RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptrQ(milliQ(def)), ValidRange: r}}
	case 2:
		lo := unit * rapid.Int64Range(0, 8).Draw(t, "min")
		r := &resourceapi.CapacityRequestPolicyRange{Min: ptrQ(milliQ(lo))}
		return resourceapi.DeviceCapacity{Value: milliQ(lo + unit*rapid.Int64Range(0, 16).Draw(t, "slack")),
			RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptrQ(milliQ(lo)), ValidRange: r}}
	default:
		n := rapid.IntRange(1, 10).Draw(t, "n")
		var vals []resource.Quantity
		v := int64(0)
		for i := 0; i < n; i++ {
			v += unit * rapid.Int64Range(1, 4).Draw(t, "gap")
			vals = append(vals, milliQ(v))
		}
		def := vals[rapid.IntRange(0, n-1).Draw(t, "default")]
		return resourceapi.DeviceCapacity{Value: milliQ(v), RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: &def, ValidValues: vals}}
	}
}

func ptrQ(v resource.Quantity) *resource.Quantity { return &v }

func TestPropConsumedIsPolicyValidAndCoversTheRequest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dc := genCapacity(t)
		opts := integerRanges(rapid.Bool().Draw(t, "noFractions"))
		requests := qmap{}
		requested := rapid.Bool().Draw(t, "requested")
		var req resource.Quantity
		if requested {
			req = milliQ(rapid.Int64Range(0, dc.Value.MilliValue()+2000).Draw(t, "request"))
			requests["c"] = req
		}
		got, err := Consumed(requests, cmap{"c": dc}, opts)
		if err != nil {
			if !errors.Is(err, ErrUnsuitable) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		c := got["c"]
		if !Valid(c, dc, opts) {
			t.Fatalf("consumed %s is not valid for %+v", c.String(), dc)
		}
		if requested && c.Cmp(req) < 0 {
			t.Fatalf("consumed %s is below the request %s", c.String(), req.String())
		}
	})
}

func TestPropLedgerAddThenRemoveRestores(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dev := cmap{"a": {Value: milliQ(rapid.Int64Range(0, 1e6).Draw(t, "a"))}, "b": {Value: milliQ(rapid.Int64Range(0, 1e6).Draw(t, "b"))}}
		l := NewLedger(dev)
		used := map[resourceapi.QualifiedName]int64{}
		n := rapid.IntRange(0, 8).Draw(t, "shares")
		var shares []qmap
		for i := 0; i < n; i++ {
			s := qmap{"a": milliQ(rapid.Int64Range(0, 5e5).Draw(t, fmt.Sprint("sa", i))), "b": milliQ(rapid.Int64Range(0, 5e5).Draw(t, fmt.Sprint("sb", i)))}
			// Fits must agree with a reference on milli-units.
			want := true
			for name, v := range s {
				value := dev[name].Value
				want = want && used[name]+v.MilliValue() <= value.MilliValue()
			}
			if got := l.Fits(s); got != want {
				t.Fatalf("Fits(%v) = %v, reference %v", s, got, want)
			}
			l.Add(s)
			for name, v := range s {
				used[name] += v.MilliValue()
			}
			shares = append(shares, s)
		}
		for _, i := range rapid.Permutation(seq(len(shares))).Draw(t, "order") {
			l.Remove(shares[i])
		}
		for name := range dev {
			if u := l.Used(name); u.Sign() != 0 {
				t.Fatalf("%s: %s left after removing every share", name, u.String())
			}
		}
	})
}

func TestPropCountersAddThenRemoveRestores(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sets := []resourceapi.CounterSet{
			{Name: "s0", Counters: map[string]resourceapi.Counter{"m": {Value: milliQ(rapid.Int64Range(0, 100).Draw(t, "s0"))}}},
			{Name: "s1", Counters: map[string]resourceapi.Counter{"m": {Value: milliQ(rapid.Int64Range(0, 100).Draw(t, "s1"))}}},
		}
		genDevice := func(label string) []resourceapi.DeviceCounterConsumption {
			var out []resourceapi.DeviceCounterConsumption
			for _, s := range []string{"s0", "s1"} {
				if rapid.Bool().Draw(t, label+s) {
					groups := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"x", "y", "z"}), 0, 2, rapid.ID[string]).Draw(t, label+s+"g")
					out = append(out, resourceapi.DeviceCounterConsumption{CounterSet: s, CompatibilityGroups: groups,
						Counters: map[string]resourceapi.Counter{"m": {Value: milliQ(rapid.Int64Range(0, 60).Draw(t, label+s+"m"))}}})
				}
			}
			return out
		}
		probes := [][]resourceapi.DeviceCounterConsumption{genDevice("p0"), genDevice("p1"), genDevice("p2")}
		c := NewCounters(sets)
		var before []bool
		for _, p := range probes {
			before = append(before, c.Fits(p))
		}
		var added [][]resourceapi.DeviceCounterConsumption
		for i := range rapid.IntRange(0, 5).Draw(t, "n") {
			d := genDevice(fmt.Sprint("d", i))
			c.Add(d)
			added = append(added, d)
		}
		for _, i := range rapid.Permutation(seq(len(added))).Draw(t, "order") {
			c.Remove(added[i])
		}
		for i, p := range probes {
			if got := c.Fits(p); got != before[i] {
				t.Fatalf("probe %d: Fits %v after add/remove, %v before", i, got, before[i])
			}
		}
		for _, s := range sets {
			want := s.Counters["m"].Value
			if r, _ := c.Remaining(s.Name, "m"); r.Cmp(want) != 0 {
				t.Fatalf("%s: remaining %s, want %s", s.Name, r.String(), want.String())
			}
		}
	})
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
