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
	"github.com/dralloc/dralloc/fuzz/watchdog"
)

// FuzzDifferential mutates selector expressions (seeded with the corpus)
// and checks that both implementations accept the same ones and agree on
// three fixed devices. Run with -fuzz=FuzzDifferential to explore.
func FuzzDifferential(f *testing.F) {
	for _, expr := range corpus {
		// Skip the seeds that run up to the cost limit: each takes a second.
		if !strings.Contains(expr, "lists.range(1000)") && !strings.Contains(expr, "lists.range(100)") {
			f.Add(expr)
		}
	}
	r := rand.New(rand.NewPCG(4, 37))
	devices := []*resourceapi.Device{genDevice(r, 0), genDevice(r, 1), genDevice(r, 2)}
	prepared := make([]*celenv.Device, len(devices))
	for i, d := range devices {
		prepared[i] = celenv.NewDevice(driver, d)
	}
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		f.Fatal(err)
	}
	up := upstreamCompiler()
	f.Fuzz(func(t *testing.T, expr string) {
		watchdog.Run(t, expr, func(ctx context.Context) {
			if len(expr) > resourceapi.CELSelectorExpressionMaxLength {
				return // the API rejects it before compiling
			}
			want := up.CompileCELExpression(expr, dracel.Options{})
			sel, err := env.Compile(expr)
			if (want.Error != nil) != (err != nil) {
				t.Fatalf("compile %q: upstream %v, dralloc %v", expr, want.Error, err)
			}
			if err != nil {
				return
			}
			if want.MaxCost != sel.MaxCost() {
				t.Fatalf("%q: estimated max cost: upstream %d, dralloc %d", expr, want.MaxCost, sel.MaxCost())
			}
			for i, dev := range devices {
				gotOK, gotErr := sel.Matches(ctx, prepared[i])
				if errors.Is(gotErr, celenv.ErrCostLimit) || errors.Is(gotErr, celenv.ErrQuantityOutOfRange) {
					// dralloc bounds evaluation where upstream may run for minutes (calls Kubernetes
					// underprices, huge quantities): not compared, TestDifferentialCostLimit compares
					// the cost limit on the corpus.
					continue
				}
				wantOK, _, wantErr := want.DeviceMatches(ctx, upstreamDevice(dev))
				if ctx.Err() != nil {
					return // too slow: the watchdog reports it
				}
				if (wantErr != nil) != (gotErr != nil) || wantOK != gotOK {
					t.Fatalf("%q on %s: upstream (%v, %v), dralloc (%v, %v)", expr, dev.Name, wantOK, wantErr, gotOK, gotErr)
				}
				if wantErr != nil && strings.Contains(wantErr.Error(), "cost limit exceeded") {
					t.Fatalf("%q on %s: upstream %v, dralloc %v", expr, dev.Name, wantErr, gotErr)
				}
			}
		})
	})
}
