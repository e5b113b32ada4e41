package capacity

import (
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"
)

func TestConsumedRange(t *testing.T) {
	gi := cmap{"memory": {Value: q("40Gi"), RequestPolicy: rangePolicy("1Gi", "1Gi", "", "1Gi")}}
	tests := []struct {
		name       string
		device     cmap
		used       qmap
		req        RangeRequest
		want, head string
		wantErr    error
	}{
		{name: "an inference claim that runs in 4Gi but prefers 12Gi gets 12Gi on an idle device", device: gi,
			req: RangeRequest{Min: qmap{"memory": q("4Gi")}, Preferred: qmap{"memory": q("12Gi")}}, want: "12Gi", head: "8Gi"},
		{name: "on a contended device it gets what is left, rounded down to a step", device: gi, used: qmap{"memory": q("29.5Gi")},
			req: RangeRequest{Min: qmap{"memory": q("4Gi")}, Preferred: qmap{"memory": q("12Gi")}}, want: "10Gi", head: "6Gi"},
		{name: "when only the minimum fits it gets the minimum without headroom", device: gi, used: qmap{"memory": q("36Gi")},
			req: RangeRequest{Min: qmap{"memory": q("4Gi")}, Preferred: qmap{"memory": q("12Gi")}}, want: "4Gi"},
		{name: "when the minimum does not fit the device is unsuitable", device: gi, used: qmap{"memory": q("37Gi")},
			req: RangeRequest{Min: qmap{"memory": q("4Gi")}, Preferred: qmap{"memory": q("12Gi")}}, wantErr: ErrUnsuitable},
		{name: "a preferred maximum below the minimum keeps the minimum", device: gi,
			req: RangeRequest{Min: qmap{"memory": q("4Gi")}, Preferred: qmap{"memory": q("2Gi")}}, want: "4Gi"},
		{name: "fractional steps round down in milli-units", device: cmap{"cores": {Value: q("4"), RequestPolicy: rangePolicy("250m", "0", "", "250m")}},
			req: RangeRequest{Min: qmap{"cores": q("300m")}, Preferred: qmap{"cores": q("1100m")}}, want: "1", head: "500m"},
		{name: "valid values round down to a valid value", device: cmap{"memory": {Value: q("8Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: qp("1Gi"), ValidValues: []resource.Quantity{q("1Gi"), q("4Gi"), q("8Gi")}}}},
			req: RangeRequest{Min: qmap{"memory": q("3Gi")}, Preferred: qmap{"memory": q("7Gi")}}, want: "4Gi"},
		{name: "max caps the preferred amount", device: cmap{"memory": {Value: q("40Gi"), RequestPolicy: rangePolicy("1Gi", "1Gi", "16Gi", "1Gi")}},
			req: RangeRequest{Min: qmap{"memory": q("4Gi")}, Preferred: qmap{"memory": q("32Gi")}}, want: "16Gi", head: "12Gi"},
		{name: "preferring a capacity the device lacks is unsuitable", device: gi,
			req: RangeRequest{Preferred: qmap{"cores": q("1")}}, wantErr: ErrUnsuitable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l *Ledger
			if tc.used != nil {
				l = NewLedger(tc.device)
				l.Add(tc.used)
			}
			res, err := ConsumedRange(tc.req, tc.device, l, Options{})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, got := range res.Consumed {
				if got.Cmp(q(tc.want)) != 0 {
					t.Fatalf("%s: consumed %s, want %s", name, got.String(), tc.want)
				}
				h, ok := res.Headroom[name]
				if (tc.head == "") == ok || (ok && h.Cmp(q(tc.head)) != 0) {
					t.Fatalf("%s: headroom %s (%v), want %q", name, h.String(), ok, tc.head)
				}
			}
		})
	}
}

func TestPropConsumedRangeIsValidBetweenMinimumAndPreferred(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dc := genCapacity(t)
		dev := cmap{"c": dc}
		opts := integerRanges(rapid.Bool().Draw(t, "noFractions"))
		l := NewLedger(dev)
		l.Add(qmap{"c": milliQ(rapid.Int64Range(0, dc.Value.MilliValue()).Draw(t, "used"))})
		req := RangeRequest{Min: qmap{"c": milliQ(rapid.Int64Range(0, dc.Value.MilliValue()).Draw(t, "min"))},
			Preferred: qmap{"c": milliQ(rapid.Int64Range(0, dc.Value.MilliValue()+1000).Draw(t, "preferred"))}}
		res, err := ConsumedRange(req, dev, l, opts)
		if err != nil {
			if !errors.Is(err, ErrUnsuitable) {
				t.Fatal(err)
			}
			return
		}
		c, m, p := res.Consumed["c"], res.Minimum["c"], req.Preferred["c"]
		if !Valid(c, dc, opts) {
			t.Fatalf("consumed %s is not policy-valid", c.String())
		}
		if c.Cmp(m) < 0 {
			t.Fatalf("consumed %s below the minimum %s", c.String(), m.String())
		}
		if c.Cmp(m) > 0 && c.Cmp(p) > 0 {
			t.Fatalf("consumed %s above the preferred %s", c.String(), p.String())
		}
		if !l.Fits(res.Consumed) {
			t.Fatalf("consumed %s does not fit the ledger", c.String())
		}
	})
}

// TestPropConsumedRangeIsAFixedPoint checks that what ConsumedRange records is what Kubernetes itself
// would record for a point request of that amount, so the AllocationResult is one the scheduler could
// have written.
func TestPropConsumedRangeIsAFixedPoint(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dc := genCapacity(t)
		dev := cmap{"c": dc}
		opts := integerRanges(rapid.Bool().Draw(t, "noFractions"))
		req := RangeRequest{Min: qmap{"c": milliQ(rapid.Int64Range(0, dc.Value.MilliValue()).Draw(t, "min"))},
			Preferred: qmap{"c": milliQ(rapid.Int64Range(0, dc.Value.MilliValue()+1000).Draw(t, "preferred"))}}
		if !opts.fractional() && !integral(dc) {
			// Without fractional ranges the API admits only whole amounts; with fractional ones the integer
			// arithmetic rounds a recorded amount up again.
			return
		}
		res, err := ConsumedRange(req, dev, nil, opts)
		if err != nil {
			return
		}
		again, err := Consumed(res.Consumed, dev, opts)
		if err != nil {
			t.Fatalf("requesting the recorded %v: %v", res.Consumed, err)
		}
		a, c := again["c"], res.Consumed["c"]
		if a.Cmp(c) != 0 {
			t.Fatalf("requesting %s consumes %s", c.String(), a.String())
		}
	})
}

func integral(dc resourceapi.DeviceCapacity) bool {
	qs := []resource.Quantity{dc.Value}
	if p := dc.RequestPolicy; p != nil {
		qs = append(qs, p.ValidValues...)
		if p.Default != nil {
			qs = append(qs, *p.Default)
		}
		if r := p.ValidRange; r != nil {
			for _, q := range []*resource.Quantity{r.Min, r.Max, r.Step} {
				if q != nil {
					qs = append(qs, *q)
				}
			}
		}
	}
	for _, q := range qs {
		if q.MilliValue()%1000 != 0 {
			return false
		}
	}
	return true
}
