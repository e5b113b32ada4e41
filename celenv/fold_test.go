package celenv

import (
	"context"
	"testing"
)

func TestConstantConstructorsDoNotAllocate(t *testing.T) {
	dev := NewDevice("gpu.nvidia.com", testGPU())
	for _, expr := range []string{
		`device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("1Gi"))`,
		`device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("v8", true))`,
		`cidr("10.0.0.0/8").containsIP(ip("10.1.2.3"))`,
		`ip("10.0.0.1").family() == 4 && ip("::1").isLoopback()`,
	} {
		sel, err := testEnv.Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(20, func() {
			if ok, err := sel.Matches(context.Background(), dev); !ok || err != nil {
				t.Fatalf("%s: %v %v", expr, ok, err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations, want 0 (constant not folded)", expr, allocs)
		}
	}
}

func TestFoldingKeepsFailuresAtRuntime(t *testing.T) {
	runExprCases(t, []exprCase{
		{"bad quantity literal", `quantity("1x").isInteger()`, false, ErrRuntime},
		{"bad semver literal", `semver("1.0").major() == 1`, false, ErrRuntime},
		{"bad ip literal", `ip("1.2.3").family() == 4`, false, ErrRuntime},
		{"bad cidr literal", `cidr("1.2.3.4/40").prefixLength() == 40`, false, ErrRuntime},
		{"ip of a constant cidr", `cidr("10.0.0.0/8").ip() == ip("10.0.0.0")`, true, nil},
	})
}
