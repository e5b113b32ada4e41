package celenv

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/fuzz/watchdog"
)

// quantityLiteralExprs use the literal Q (a quoted string) with every quantity function.
var quantityLiteralExprs = []string{
	`isQuantity(Q)`,
	`sign(quantity(Q)) >= 0`,
	`quantity(Q).isInteger()`,
	`quantity(Q).asInteger() >= 0`,
	`quantity(Q).asApproximateFloat() >= 0.0`,
	`quantity(Q).compareTo(quantity("1")) >= 0`,
	`quantity(Q).isGreaterThan(quantity("1500m"))`,
	`quantity(Q).isLessThan(quantity("9223372036854775807Ei"))`,
	`quantity(Q) == quantity("1")`,
	`sign(quantity(Q).add(quantity(Q)).sub(1)) >= 0`,
	`sign(quantity("0E100000000").add(quantity(Q))) >= 0`,
	`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity(Q)) >= 0`,
	`sign(device.capacity["gpu.nvidia.com"].fuzzed.add(quantity("1"))) >= 0`,
}

// FuzzQuantityLiteral evaluates every quantity function on any string, as a CEL literal and as a device
// capacity: no panic, the same answer twice, within the watchdog's limit, and only runtime errors (a
// quantity that does not parse or is out of range).
func FuzzQuantityLiteral(f *testing.F) {
	for _, s := range []string{"1Gi", "1500m", "0", "1e-9", "1E1000", "+.5E-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		watchdog.Run(t, s, func(ctx context.Context) {
			dev := testGPU()
			if !watchdog.SlowToParse(s) {
				if q, err := resource.ParseQuantity(s); err == nil {
					dev.Capacity["fuzzed"] = resourceapi.DeviceCapacity{Value: q}
				}
			}
			d := NewDevice("gpu.nvidia.com", dev)
			for _, tmpl := range quantityLiteralExprs {
				expr := strings.ReplaceAll(tmpl, "Q", strconv.Quote(s))
				sel, err := testEnv.Compile(expr)
				if err != nil {
					continue // a literal CEL cannot read
				}
				ok1, err1 := sel.Matches(ctx, d)
				ok2, err2 := sel.Matches(ctx, d)
				if ctx.Err() != nil {
					return // too slow: the watchdog reports it
				}
				if ok1 != ok2 || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
					t.Fatalf("%s: two evaluations differ: (%v, %v) / (%v, %v)", expr, ok1, err1, ok2, err2)
				}
				if err1 != nil && !errors.Is(err1, ErrRuntime) {
					t.Fatalf("%s: got %v, want a runtime error", expr, err1)
				}
			}
		})
	})
}
