package celenv

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// doubling binds seed to s0 and each s<i> to step applied to s<i-1>, n
// times, and tests the size of the last one.
func doubling(seed, step string, n int) string {
	return doublingThen(seed, step, n, "X.size() > 0")
}

// doublingThen is doubling with check applied to the last value.
func doublingThen(seed, step string, n int, check string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cel.bind(s0, %s, ", seed)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "cel.bind(s%d, %s, ", i, strings.ReplaceAll(step, "X", fmt.Sprintf("s%d", i-1)))
	}
	b.WriteString(strings.ReplaceAll(check, "X", fmt.Sprintf("s%d", n)))
	b.WriteString(strings.Repeat(")", n+1))
	return b.String()
}

// longModelGPU publishes a model name of the longest length the API allows.
func longModelGPU() *resourceapi.Device {
	d := testGPU()
	d.Attributes["model"] = resourceapi.DeviceAttribute{StringValue: ptr.To(strings.Repeat("m", resourceapi.DeviceAttributeMaxValueLength))}
	return d
}

// The cost limit (1,000,000) stops a value from doubling at the level whose
// cumulative price passes it, so the largest value an evaluation builds is
// bounded by the limit. A string of 64 characters doubled k times has cost
// 6.4 × (2^(k+1) − 2) (a tenth per character built): 838,848 at k = 16,
// 1,677,709 at k = 17 (8 MiB).
func TestMatchesCostLimitBoundsDoubling(t *testing.T) {
	seed := `"` + strings.Repeat("a", 64) + `"`
	attr := `device.attributes["gpu.nvidia.com"].model`
	cases := []struct {
		name        string
		seed, step  string
		check       string
		withinLimit int // the deepest level that stays within the limit
	}{
		{"string concatenation", seed, "X + X", "X.size() > 0", 16},
		// An attribute value has type dyn: "+" is dispatched at run time,
		// which Kubernetes charges 1 whatever the operands.
		{"concatenation of a dyn attribute value", attr, "X + X", "X.size() > 0", 16},
		// format is priced by its format string in Kubernetes.
		{"format", seed, `"%s%s".format([X, X])`, "X.size() > 0", 16},
	}
	dev := NewDevice("gpu.nvidia.com", longModelGPU())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []int{tc.withinLimit, tc.withinLimit + 1} {
				sel, err := testEnv.Compile(doublingThen(tc.seed, tc.step, n, tc.check))
				if err != nil {
					t.Fatal(err)
				}
				ok, err := sel.Matches(t.Context(), dev)
				switch {
				case n == tc.withinLimit && (err != nil || !ok):
					t.Errorf("%d doublings: got (%v, %v), want true", n, ok, err)
				case n > tc.withinLimit && !errors.Is(err, ErrCostLimit):
					t.Errorf("%d doublings: got (%v, %v), want ErrCostLimit", n, ok, err)
				}
			}
		})
	}
}

// Calls Kubernetes underprices are charged for their work, and calls whose
// result outgrows their price are refused before they build a result whose
// size alone passes the cost limit (10 characters per unit: 10,000,000
// characters).
func TestMatchesCostLimitChargesUnderpricedCalls(t *testing.T) {
	seed := `"` + strings.Repeat("a", 64) + `"`
	cases := []exprCase{
		// 64 × 65 + 64 = 4,224 characters, then 4,224 × 4,225 + 4,224.
		{name: "replace squaring a string once", expr: doubling(seed, `X.replace("", X)`, 1), want: true},
		{name: "replace squaring a string twice", expr: doubling(seed, `X.replace("", X)`, 2), wantErr: ErrCostLimit},
		{name: "format with a precision of 20,000,000 digits", expr: `"%.20000000f".format([1.0]) != ""`, wantErr: ErrCostLimit},
		// List concatenation is priced 1 in Kubernetes, although walking
		// the lazily concatenated result takes time in its depth; here it
		// is priced one per element of the shorter operand: 2^20 − 1 for
		// 2^20 elements.
		{name: "comparing lists doubled 20 times", expr: doublingThen("[1]", "X + X", 20, "X == X"), wantErr: ErrCostLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := testEnv.Compile(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			ok, err := got.Matches(t.Context(), NewDevice("gpu.nvidia.com", longModelGPU()))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got (%v, %v), want %v", ok, err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.want {
				t.Fatalf("got (%v, %v), want %v", ok, err, tc.want)
			}
		})
	}
}

// Quantities whose magnitude passes 10^±1000 are refused by every quantity
// function: Kubernetes accepts them and then takes minutes to parse,
// compare or add them.
func TestQuantityOutOfRange(t *testing.T) {
	dev := testGPU()
	dev.Capacity["huge"] = resourceapi.DeviceCapacity{Value: resource.MustParse("1E100000000")}
	dev.Capacity["hugeZero"] = resourceapi.DeviceCapacity{Value: resource.MustParse("0E100000000")}
	cases := []exprCase{
		{name: "parsing a huge exponent", expr: `sign(quantity("1E100000000")) == 1`, wantErr: ErrQuantityOutOfRange},
		{name: "parsing a tiny exponent", expr: `sign(quantity("1E-100000000")) == 1`, wantErr: ErrQuantityOutOfRange},
		{name: "parsing an exponent beyond int64", expr: `sign(quantity("1E99999999999999999999")) == 1`, wantErr: ErrQuantityOutOfRange},
		{name: "adding zero with a huge exponent", expr: `sign(quantity("0E100000000").add(quantity("1m"))) == 1`, wantErr: ErrQuantityOutOfRange},
		{name: "comparing a huge quantity", expr: `quantity("1E100000000").isGreaterThan(quantity("1"))`, wantErr: ErrQuantityOutOfRange},
		{name: "a huge capacity compared", expr: `device.capacity["gpu.nvidia.com"].huge.compareTo(quantity("1")) == 1`, wantErr: ErrQuantityOutOfRange},
		{name: "a huge capacity added", expr: `sign(device.capacity["gpu.nvidia.com"].hugeZero.add(1)) == 1`, wantErr: ErrQuantityOutOfRange},
		{name: "a huge capacity tested for equality", expr: `device.capacity["gpu.nvidia.com"].huge == quantity("1")`, wantErr: ErrQuantityOutOfRange},
		{name: "isQuantity of a huge exponent is false", expr: `!isQuantity("1E100000000")`, want: true},
		{name: "a string longer than any quantity in range", expr: `sign(quantity("1` + strings.Repeat("0", 3000) + `")) == 1`, wantErr: ErrQuantityOutOfRange},
		{name: "the largest int64 with the largest suffix", expr: `quantity("9223372036854775807Ei").isGreaterThan(quantity("1"))`, want: true},
		{name: "10^1000 is in range", expr: `quantity("1E1000").add(quantity("1n")).isGreaterThan(quantity("1E999"))`, want: true},
		{name: "10^-1000 rounds to the nano scale", expr: `sign(quantity("1E-1000")) == 1`, want: true},
		{name: "a negative quantity", expr: `sign(quantity("-1")) == -1`, want: true},
		{name: "a memory capacity", expr: `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) == 0`, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eval(t, tc.expr, dev)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, ErrRuntime) {
					t.Fatalf("%s: got (%v, %v), want a runtime error wrapping %v", tc.expr, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%s: got (%v, %v), want %v", tc.expr, got, err, tc.want)
			}
		})
	}
}

func TestErrQuantityOutOfRangeNamesTheBound(t *testing.T) {
	want := fmt.Sprintf("magnitudes from 1e-%d to 1e%d", maxQuantityExponent, maxQuantityExponent)
	if !strings.Contains(ErrQuantityOutOfRange.Error(), want) {
		t.Fatalf("%q does not name the bound %q", ErrQuantityOutOfRange, want)
	}
}
