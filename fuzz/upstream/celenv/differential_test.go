package celenv_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apiserver/pkg/cel/environment"
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
// other). The worst-case cost estimates must be equal too.
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

	var pairs, compileErrors, matches, runtimeErrors, mismatches, costsCompared int
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
		costsCompared++
		if sel.MaxCost() != want.MaxCost {
			report("%q: estimated max cost: upstream %d, dralloc %d", expr, want.MaxCost, sel.MaxCost())
		}
		// Expressions that may run into the cost limit take long on both
		// sides; one device is enough for them.
		devs := devices
		if want.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
			devs = devices[:1]
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
	t.Logf("%d expressions (%d hand-written, %d generated, %d rejected by both, %d cost estimates compared) x %d devices: %d (expression, device) pairs compared; %d matches, %d errors on both sides, %d mismatches",
		len(expressions), len(corpus), len(expressions)-len(corpus), compileErrors, costsCompared, len(devices), pairs, matches, runtimeErrors, mismatches)
}

// TestDifferentialCostLimit runs the corpus under small cost limits, where
// the runtime cost of every function call decides the outcome: both sides
// must stop at the same expressions on the same devices.
func TestDifferentialCostLimit(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 37))
	devices := make([]*resourceapi.Device, 6)
	for i := range devices {
		devices[i] = genDevice(r, i)
	}
	up := upstreamCompiler()
	ctx := context.Background()
	var pairs, stopped, mismatches, unstable int
	for _, limit := range []uint64{3, 10, 40, 200} {
		env, err := celenv.NewEnv(celenv.Options{CostLimit: limit, CacheSize: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, expr := range corpus {
			want := up.CompileCELExpression(expr, dracel.Options{CostLimit: &limit})
			sel, err := env.Compile(expr)
			if want.Error != nil || err != nil {
				continue
			}
			for _, dev := range devices {
				// Upstream iterates maps in Go's random order, so a loop
				// over a map that stops early costs a different amount
				// from run to run; such pairs have no single answer.
				wantCost, deterministic := upstreamStopsByCost(ctx, want, dev)
				if !deterministic {
					unstable++
					continue
				}
				pairs++
				_, gotErr := sel.Matches(ctx, celenv.NewDevice(driver, dev))
				if wantCost {
					stopped++
				}
				if wantCost != errors.Is(gotErr, celenv.ErrCostLimit) {
					mismatches++
					if mismatches <= 20 {
						t.Errorf("limit %d, %q on %s: upstream stopped by cost %v, dralloc %v", limit, expr, dev.Name, wantCost, gotErr)
					}
				}
			}
		}
	}
	t.Logf("%d (limit, expression, device) triples compared, %d stopped by the cost limit, %d mismatches; %d skipped as upstream's outcome depends on map order",
		pairs, stopped, mismatches, unstable)
}

func upstreamStopsByCost(ctx context.Context, res dracel.CompilationResult, dev *resourceapi.Device) (stopped, deterministic bool) {
	for i := range 8 {
		_, _, err := res.DeviceMatches(ctx, upstreamDevice(dev))
		s := err != nil && strings.Contains(err.Error(), "cost limit exceeded")
		if i > 0 && s != stopped {
			return false, false
		}
		stopped = s
	}
	return stopped, true
}

// TestDifferentialNewExpressions compiles the corpus as the API server does
// for new objects, under every combination of the feature gates that change
// the environment, and as derived attributes: both sides must accept and
// reject the same expressions and estimate the same worst-case cost.
func TestDifferentialNewExpressions(t *testing.T) {
	newExpr := environment.NewExpressions
	compared := 0
	for _, f := range []celenv.Features{{}, {DRAConsumableCapacity: true}, {DRAListTypeAttributes: true}, {DRAConsumableCapacity: true, DRAListTypeAttributes: true}} {
		up := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: f.DRAConsumableCapacity, EnableListTypeAttributes: f.DRAListTypeAttributes})
		env, err := celenv.NewEnv(celenv.Options{Features: &f, NewExpressions: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, expr := range append(corpus, derivedCorpus...) {
			for _, derived := range []bool{false, true} {
				compared++
				want := up.CompileCELExpression(expr, dracel.Options{EnvType: &newExpr, DerivedAttribute: derived})
				var (
					err     error
					maxCost uint64
				)
				if derived {
					var d *celenv.Derived
					if d, err = env.CompileDerived(expr); err == nil {
						maxCost = d.MaxCost()
					}
				} else {
					var s *celenv.Selector
					if s, err = env.Compile(expr); err == nil {
						maxCost = s.MaxCost()
					}
				}
				if (want.Error != nil) != (err != nil) {
					t.Errorf("features %+v, derived %v, %q: upstream %v, dralloc %v", f, derived, expr, want.Error, err)
				} else if err == nil && maxCost != want.MaxCost {
					t.Errorf("features %+v, derived %v, %q: estimated max cost: upstream %d, dralloc %d", f, derived, expr, want.MaxCost, maxCost)
				}
			}
		}
	}
	t.Logf("%d (features, kind, expression) compilations compared", compared)
}

// derivedCorpus holds derived-attribute expressions of every result type.
var derivedCorpus = []string{
	`device.attributes["gpu.nvidia.com"].index`,
	`device.attributes["gpu.nvidia.com"].productName`,
	`device.attributes["gpu.nvidia.com"].cudaComputeCapability`,
	`device.attributes["gpu.nvidia.com"].index * 2`,
	`device.attributes["gpu.nvidia.com"].architecture.lowerAscii()`,
	`semver("1.2.3")`,
	`[1, 2]`,
	`["a"]`,
	`[semver("1.0.0")]`,
	`[[1]]`,
	`{"a": 1}`,
	`1.5`,
	`2u`,
	`quantity("1")`,
	`device.capacity["gpu.nvidia.com"].memory`,
	`device.attributes["dra.example.com"].ids`,
	`device.attributes["dra.example.com"].ids.map(i, i + 1)`,
	`dyn(1)`,
	`null`,
	`device.attributes`,
}

// TestDifferentialDerived evaluates derived attributes on both sides.
func TestDifferentialDerived(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 37))
	up := upstreamCompiler()
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pairs := 0
	for i := range 30 {
		dev := genDevice(r, i)
		for _, expr := range derivedCorpus {
			want := up.CompileCELExpression(expr, dracel.Options{DerivedAttribute: true})
			d, err := env.CompileDerived(expr)
			if (want.Error != nil) != (err != nil) {
				t.Errorf("compile %q: upstream %v, dralloc %v", expr, want.Error, err)
				continue
			}
			if err != nil {
				continue
			}
			pairs++
			wantAttr, _, wantErr := want.EvaluateDerivedAttribute(ctx, upstreamDevice(dev))
			got, gotErr := d.Evaluate(ctx, celenv.NewDevice(driver, dev))
			switch {
			case (wantErr != nil) != (gotErr != nil):
				t.Errorf("%q on %s: upstream (%v), dralloc (%v)", expr, dev.Name, wantErr, gotErr)
			case wantErr == nil && !reflect.DeepEqual(*wantAttr, got):
				t.Errorf("%q on %s: upstream %+v, dralloc %+v", expr, dev.Name, *wantAttr, got)
			}
		}
	}
	t.Logf("%d (derived expression, device) pairs compared", pairs)
}
