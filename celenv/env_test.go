package celenv

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		expr       string
		wantDetail string
		line, col  int
	}{
		{"syntax error carries its position", "device.driver ==\n  ", "Syntax error", 2, 3},
		{"type error carries its position", `device.driver > 1`, "found no matching overload for '_>_'", 1, 15},
		{"undeclared reference", `gpu.index`, "undeclared reference to 'gpu'", 1, 1},
		{"unknown device field", `device.nosuch`, "undefined field 'nosuch'", 1, 7},
		{"result must be a bool", `device.driver`, "must evaluate to bool or the unknown type, not string", 0, 0},
		{"too long", `true && ` + strings.Repeat("true && ", 1300) + `true`, "expression too long", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testEnv.Compile(tc.expr)
			var ce *CompileError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCompile) {
				t.Fatalf("got %v, want *CompileError", err)
			}
			if !strings.Contains(ce.Detail, tc.wantDetail) || ce.Expression != tc.expr {
				t.Fatalf("got %+v, want detail containing %q", ce, tc.wantDetail)
			}
			if ce.Line != tc.line || ce.Column != tc.col {
				t.Fatalf("position %d:%d, want %d:%d", ce.Line, ce.Column, tc.line, tc.col)
			}
			if !strings.HasPrefix(err.Error(), "compile \"") {
				t.Fatalf("message %q does not name the expression", err)
			}
		})
	}
}

func TestCompileLengthLimitIsTheAPIs(t *testing.T) {
	ok := strings.Repeat(" ", resourceapi.CELSelectorExpressionMaxLength-4) + "true"
	if _, err := testEnv.Compile(ok); err != nil {
		t.Fatalf("expression of exactly the maximum length: %v", err)
	}
	if _, err := testEnv.Compile(" " + ok); err == nil {
		t.Fatal("expression one byte too long compiled")
	}
}

func TestCompileCacheReturnsTheSameSelector(t *testing.T) {
	env, err := NewEnv(Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := env.Compile(`device.driver == "a"`)
	b, _ := env.Compile(`device.driver == "a"`)
	if a != b {
		t.Fatal("second compile did not hit the cache")
	}
	d, _ := env.CompileDerived(`device.driver == "a"`)
	if d == nil {
		t.Fatal("derived compile of the same text failed")
	}
}

func TestCompileCacheIsBounded(t *testing.T) {
	env, err := NewEnv(Options{CacheSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := env.Compile(`device.driver == "0"`)
	for i := 1; i < 10; i++ {
		if _, err := env.Compile(fmt.Sprintf(`device.driver == "%d"`, i)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	env.selectors.entries.Range(func(any, any) bool { n++; return true })
	if n != 3 {
		t.Fatalf("cache holds %d entries, want 3", n)
	}
	again, _ := env.Compile(`device.driver == "0"`)
	if again == first {
		t.Fatal("oldest entry was not evicted")
	}
}

func TestCompileCacheDisabled(t *testing.T) {
	env, err := NewEnv(Options{CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := env.Compile(`true`)
	b, _ := env.Compile(`true`)
	if a == b {
		t.Fatal("cache disabled but the same selector came back")
	}
}

func TestCompileConcurrently(t *testing.T) {
	env, err := NewEnv(Options{CacheSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 40 {
				expr := fmt.Sprintf(`device.attributes["gpu.nvidia.com"].index == %d`, (i+w)%12)
				s, err := env.Compile(expr)
				if err != nil || s.Expression() != expr {
					t.Errorf("compile %q: %v", expr, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestMaxCostEstimate(t *testing.T) {
	for _, tc := range []struct {
		expr    string
		atMost  uint64
		atLeast uint64
	}{
		{`device.driver == "gpu.nvidia.com"`, 10, 1},
		{`device.attributes["gpu.nvidia.com"].index > 1`, 10, 1},
		// Iterating every attribute of every domain: bounded by the API's
		// 32 domains x 32 names.
		{`device.attributes.all(d, device.attributes[d].all(n, n.size() > 0))`, resourceapi.CELSelectorExpressionMaxCost, 1000},
		{`lists.range(1000).all(i, lists.range(1000).all(j, true))`, ^uint64(0), resourceapi.CELSelectorExpressionMaxCost + 1},
	} {
		sel, err := testEnv.Compile(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if c := sel.MaxCost(); c > tc.atMost || c < tc.atLeast {
			t.Errorf("%s: MaxCost %d, want within [%d, %d]", tc.expr, c, tc.atLeast, tc.atMost)
		}
	}
}

func TestNewExpressionsFollowFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		name     string
		features Features
		expr     string
		wantOK   bool
	}{
		{"allowMultipleAllocations needs consumable capacity", Features{}, `device.allowMultipleAllocations`, false},
		{"allowMultipleAllocations with consumable capacity", Features{DRAConsumableCapacity: true}, `device.allowMultipleAllocations`, true},
		{"includes needs list-type attributes", Features{}, `[1].includes(1)`, false},
		{"includes with list-type attributes", Features{DRAListTypeAttributes: true}, `[1].includes(1)`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := NewEnv(Options{Features: &tc.features, NewExpressions: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = env.Compile(tc.expr)
			if (err == nil) != tc.wantOK {
				t.Fatalf("compile %q: %v, want ok=%v", tc.expr, err, tc.wantOK)
			}
		})
	}
	// Stored expressions (the scheduler's view) have every declaration.
	env, err := NewEnv(Options{Features: &Features{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, expr := range []string{`device.allowMultipleAllocations`, `[1].includes(1)`} {
		if _, err := env.Compile(expr); err != nil {
			t.Errorf("stored expression %q: %v", expr, err)
		}
	}
}
