package celenv_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/dralloc/dralloc/celenv"
)

// upstreamCompiler is the compiler the Kubernetes 1.37 scheduler uses.
func upstreamCompiler() interface {
	CompileCELExpression(string, dracel.Options) dracel.CompilationResult
} {
	return dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})
}

func upstreamDevice(dev *resourceapi.Device) dracel.Device {
	return dracel.Device{
		Driver:                   driver,
		AllowMultipleAllocations: dev.AllowMultipleAllocations,
		Attributes:               dev.Attributes,
		Capacity:                 dev.Capacity,
	}
}

// TestDifferentialSelectors compiles every corpus and generated expression
// with both implementations and evaluates it on generated devices: both
// must reject the same expressions, and on every device give the same
// verdict or both fail (a cost-limit failure on one side must be one on the
// other).
func TestDifferentialSelectors(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 37))
	devices := make([]*resourceapi.Device, 60)
	for i := range devices {
		devices[i] = genDevice(r, i)
	}
	expressions := append([]string(nil), corpus...)
	for range 250 {
		expressions = append(expressions, genExpression(r, 3))
	}

	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prepared := make([]*celenv.Device, len(devices))
	for i, dev := range devices {
		prepared[i] = celenv.NewDevice(driver, dev)
	}
	up := upstreamCompiler()
	ctx := context.Background()

	var pairs, compileErrors, matches, runtimeErrors, mismatches int
	report := func(format string, args ...any) {
		mismatches++
		if mismatches <= 40 {
			t.Errorf(format, args...)
		}
	}
	for _, expr := range expressions {
		want := up.CompileCELExpression(expr, dracel.Options{})
		sel, gotErr := env.Compile(expr)
		if (want.Error != nil) != (gotErr != nil) {
			report("compile %q: upstream error %v, dralloc error %v", expr, want.Error, gotErr)
			continue
		}
		if gotErr != nil {
			compileErrors++
			if !errors.Is(gotErr, celenv.ErrCompile) {
				t.Errorf("compile %q: error %v does not wrap ErrCompile", expr, gotErr)
			}
			continue
		}
		// Expressions that may run into the cost limit take long on both
		// sides; a few devices are enough for them.
		devs := devices
		if want.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
			devs = devices[:3]
		}
		for i, dev := range devs {
			pairs++
			wantMatch, _, wantErr := want.DeviceMatches(ctx, upstreamDevice(dev))
			gotMatch, gotErr := sel.Matches(ctx, prepared[i])
			switch {
			case (wantErr != nil) != (gotErr != nil):
				report("%q on %s: upstream (%v, %v), dralloc (%v, %v)", expr, dev.Name, wantMatch, wantErr, gotMatch, gotErr)
			case wantErr != nil:
				runtimeErrors++
				wantCost := strings.Contains(wantErr.Error(), "cost limit exceeded")
				if wantCost != errors.Is(gotErr, celenv.ErrCostLimit) {
					report("%q on %s: upstream error %v, dralloc error %v: cost limit classification differs", expr, dev.Name, wantErr, gotErr)
				}
			case wantMatch != gotMatch:
				report("%q on %s: upstream %v, dralloc %v", expr, dev.Name, wantMatch, gotMatch)
			case gotMatch:
				matches++
			}
		}
	}
	t.Logf("%d expressions (%d hand-written, %d generated, %d rejected by both) x %d devices: %d (expression, device) pairs compared; %d matches, %d errors on both sides, %d mismatches",
		len(expressions), len(corpus), len(expressions)-len(corpus), compileErrors, len(devices), pairs, matches, runtimeErrors, mismatches)
}
