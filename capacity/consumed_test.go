package capacity

import (
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator/gates"
)

type qmap = map[resourceapi.QualifiedName]resource.Quantity
type cmap = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity

func q(s string) resource.Quantity { return resource.MustParse(s) }
func qp(s string) *resource.Quantity {
	v := resource.MustParse(s)
	return &v
}

func rangePolicy(def, lo, hi, step string) *resourceapi.CapacityRequestPolicy {
	r := &resourceapi.CapacityRequestPolicyRange{Min: qp(lo)}
	if hi != "" {
		r.Max = qp(hi)
	}
	if step != "" {
		r.Step = qp(step)
	}
	p := &resourceapi.CapacityRequestPolicy{ValidRange: r}
	if def != "" {
		p.Default = qp(def)
	}
	return p
}

func TestConsumed(t *testing.T) {
	mem := func(value string, p *resourceapi.CapacityRequestPolicy) cmap {
		return cmap{"memory": {Value: q(value), RequestPolicy: p}}
	}
	values := &resourceapi.CapacityRequestPolicy{Default: qp("1Gi"), ValidValues: []resource.Quantity{q("1Gi"), q("2Gi"), q("4Gi")}}
	tests := []struct {
		name     string
		requests qmap
		device   cmap
		opts     Options
		want     qmap
		wantErr  error
	}{
		{name: "no request and no policy consumes the whole value", device: mem("40Gi", nil), want: qmap{"memory": q("40Gi")}},
		{name: "no request consumes the policy default", device: mem("40Gi", rangePolicy("1Gi", "1Gi", "", "1Gi")), want: qmap{"memory": q("1Gi")}},
		{name: "request without policy consumes what it asks", requests: qmap{"memory": q("5Gi")}, device: mem("40Gi", nil), want: qmap{"memory": q("5Gi")}},
		{name: "request above the value is unsuitable", requests: qmap{"memory": q("5Gi")}, device: mem("4Gi", nil), wantErr: ErrUnsuitable},
		{name: "range raises a small request to min", requests: qmap{"memory": q("500Mi")}, device: mem("40Gi", rangePolicy("1Gi", "1Gi", "8Gi", "1Gi")), want: qmap{"memory": q("1Gi")}},
		{name: "range rounds up to min plus a multiple of step", requests: qmap{"memory": q("2.5Gi")}, device: mem("40Gi", rangePolicy("1Gi", "1Gi", "8Gi", "1Gi")), want: qmap{"memory": q("3Gi")}},
		{name: "range keeps a request on a step", requests: qmap{"memory": q("8Gi")}, device: mem("40Gi", rangePolicy("1Gi", "1Gi", "8Gi", "1Gi")), want: qmap{"memory": q("8Gi")}},
		{name: "range rejects a rounded amount above max", requests: qmap{"memory": q("8.5Gi")}, device: mem("40Gi", rangePolicy("1Gi", "1Gi", "8Gi", "1Gi")), wantErr: ErrUnsuitable},
		{name: "range without step keeps the request", requests: qmap{"memory": q("1.5Gi")}, device: mem("40Gi", rangePolicy("1Gi", "1Gi", "", "")), want: qmap{"memory": q("1.5Gi")}},
		{name: "valid values round up to the next value", requests: qmap{"memory": q("3Gi")}, device: mem("40Gi", values), want: qmap{"memory": q("4Gi")}},
		{name: "valid values keep an exact value", requests: qmap{"memory": q("2Gi")}, device: mem("40Gi", values), want: qmap{"memory": q("2Gi")}},
		{name: "a request above every valid value is unsuitable", requests: qmap{"memory": q("5Gi")}, device: mem("40Gi", values), wantErr: ErrUnsuitable},
		{name: "fractional range: 250m with step 100m consumes 300m", requests: qmap{"cores": q("250m")}, device: cmap{"cores": {Value: q("4"), RequestPolicy: rangePolicy("100m", "0", "", "100m")}}, want: qmap{"cores": q("300m")}},
		{name: "fractional range disabled: 250m rounds up to the integer 1", requests: qmap{"cores": q("250m")}, device: cmap{"cores": {Value: q("4"), RequestPolicy: rangePolicy("1", "0", "", "100m")}}, opts: integerRanges(true), want: qmap{"cores": q("1")}},
		{name: "fractional range from a fractional min: 600m from 500m by 250m consumes 750m", requests: qmap{"cores": q("600m")}, device: cmap{"cores": {Value: q("4"), RequestPolicy: rangePolicy("500m", "500m", "2", "250m")}}, want: qmap{"cores": q("750m")}},
		{name: "fractional range to a whole number gives a whole quantity", requests: qmap{"cores": q("900m")}, device: cmap{"cores": {Value: q("4"), RequestPolicy: rangePolicy("500m", "0", "", "500m")}}, want: qmap{"cores": q("1")}},
		{name: "fractional range above max is unsuitable", requests: qmap{"cores": q("2100m")}, device: cmap{"cores": {Value: q("4"), RequestPolicy: rangePolicy("500m", "500m", "2", "250m")}}, wantErr: ErrUnsuitable},
		{name: "a step finer than 1m falls back to integers", requests: qmap{"cores": q("250m")}, device: cmap{"cores": {Value: q("4"), RequestPolicy: rangePolicy("1", "0", "", "100u")}}, want: qmap{"cores": q("1")}},
		{name: "requesting a capacity the device lacks is unsuitable", requests: qmap{"bandwidth": q("1")}, device: mem("40Gi", nil), wantErr: ErrUnsuitable},
		{name: "a lacking capacity is decided before an unrepresentable one", requests: qmap{"bandwidth": q("1"), "memory": q("1e19")}, device: mem("40Gi", rangePolicy("1", "1", "", "1")), wantErr: ErrUnsuitable},
		{name: "a negative request without policy is an error", requests: qmap{"memory": q("-1")}, device: mem("40Gi", nil), wantErr: ErrNegative},
		{name: "a negative request with a range is raised to min", requests: qmap{"memory": q("-1")}, device: mem("40Gi", rangePolicy("1Gi", "1Gi", "", "1Gi")), want: qmap{"memory": q("1Gi")}},
		{name: "a request above MaxInt64 is not representable on integers", requests: qmap{"memory": q("1e19")}, device: mem("2e19", rangePolicy("1", "1", "", "1")), opts: integerRanges(true), wantErr: ErrNotRepresentable},
		{name: "a request past the milli range is not representable with fractions", requests: qmap{"memory": q("1e17")}, device: mem("2e19", rangePolicy("1", "1", "", "1")), wantErr: ErrNotRepresentable},
		{name: "a range without min is an invalid policy", requests: qmap{"memory": q("1")}, device: cmap{"memory": {Value: q("4"), RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: qp("1"), ValidRange: &resourceapi.CapacityRequestPolicyRange{}}}}, wantErr: ErrInvalidPolicy},
		{name: "a zero step is an invalid policy", requests: qmap{"memory": q("1")}, device: mem("4", rangePolicy("1", "1", "", "0")), wantErr: ErrInvalidPolicy},
		{name: "every capacity gets an entry, requested or not", requests: qmap{"memory": q("1Gi")},
			device: cmap{"memory": {Value: q("40Gi")}, "cores": {Value: q("8"), RequestPolicy: rangePolicy("1", "1", "", "1")}},
			want:   qmap{"memory": q("1Gi"), "cores": q("1")}},
		{name: "nil requests mean no requirements", device: cmap{"memory": {Value: q("40Gi")}}, want: qmap{"memory": q("40Gi")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Consumed(tc.requests, tc.device, tc.opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for n, w := range tc.want {
				g, ok := got[n]
				if !ok || g.Cmp(w) != 0 {
					t.Errorf("%s: got %s, want %s", n, g.String(), w.String())
				}
			}
		})
	}
}

func TestConsumedErrorsNameTheCapacity(t *testing.T) {
	_, err := Consumed(qmap{"memory": q("5Gi")}, cmap{"memory": {Value: q("4Gi")}}, Options{})
	if err == nil || err.Error() != `capacity "memory": 5Gi exceeds the device's 4Gi: device cannot serve the request` {
		t.Fatalf("error %v", err)
	}
}

func TestConsumedDoesNotMutateInputs(t *testing.T) {
	req := qmap{"memory": q("2.5Gi")}
	dev := cmap{"memory": {Value: q("40Gi"), RequestPolicy: rangePolicy("1Gi", "1Gi", "8Gi", "1Gi")}}
	r := req["memory"]
	before := dev["memory"].RequestPolicy.ValidRange.Min.String() + r.String()
	if _, err := Consumed(req, dev, Options{}); err != nil {
		t.Fatal(err)
	}
	r = req["memory"]
	if after := dev["memory"].RequestPolicy.ValidRange.Min.String() + r.String(); after != before {
		t.Fatalf("inputs changed: %s → %s", before, after)
	}
}

func TestValid(t *testing.T) {
	dc := resourceapi.DeviceCapacity{Value: q("8"), RequestPolicy: rangePolicy("500m", "500m", "2", "250m")}
	for s, want := range map[string]bool{"500m": true, "750m": true, "2": true, "600m": false, "2250m": false, "-1": false} {
		if got := Valid(q(s), dc, Options{}); got != want {
			t.Errorf("Valid(%s) = %v, want %v", s, got, want)
		}
	}
}

// integerRanges is the options with DRAFractionalCapacityRange switched off when off is true, the default
// gates otherwise.
func integerRanges(off bool) Options {
	f := gates.Default()
	f.DRAFractionalCapacityRange = !off
	return Options{Features: &f}
}
