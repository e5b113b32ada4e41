package celenv

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestDeviceVariable(t *testing.T) {
	g := `device.attributes["gpu.nvidia.com"]`
	runExprCases(t, []exprCase{
		{"driver", `device.driver == "gpu.nvidia.com"`, true, nil},
		{"allowMultipleAllocations defaults to false", `device.allowMultipleAllocations`, false, nil},
		{"bare attribute names are in the driver's domain", g + `.productName.startsWith("NVIDIA")`, true, nil},
		{"qualified attribute names keep their domain", `device.attributes["dra.example.com"].ids.size() == 2`, true, nil},
		{"an unknown domain is an empty map", `device.attributes["unknown.example.com"].size() == 0`, true, nil},
		{"an unknown capacity domain is an empty map", `device.capacity["unknown.example.com"].size() == 0`, true, nil},
		{"in sees only published domains", `"unknown.example.com" in device.attributes`, false, nil},
		{"has on a present attribute", `has(` + g + `.mig)`, true, nil},
		{"has on a missing attribute", `has(` + g + `.nosuch)`, false, nil},
		{"capacity in the driver's domain", `has(device.capacity["gpu.nvidia.com"].memory)`, true, nil},
		{"iteration over domains is sorted", `device.attributes.map(d, d) == ["dra.example.com", "gpu.nvidia.com"]`, true, nil},
		{"missing attribute is a runtime error", g + `.nosuch == 1`, false, ErrRuntime},
		{"unknown field is a compile error", `device.nosuch == 1`, false, ErrCompile},
		{"undeclared variable is a compile error", `gpu.index == 1`, false, ErrCompile},
		{"an attribute that is not a bool fails at runtime", g + `.productName`, false, ErrRuntime},
		{"an attribute that is a bool is a valid result", g + `.mig`, false, nil},
		{"a string result is rejected", `device.driver`, false, ErrCompile},
	})
}

func TestMatchesAllowMultipleAllocations(t *testing.T) {
	dev := testGPU()
	dev.AllowMultipleAllocations = ptr.To(true)
	got, err := eval(t, `device.allowMultipleAllocations`, dev)
	if err != nil || !got {
		t.Fatalf("got (%v, %v), want true", got, err)
	}
}

func TestMatchesMissingAttributeErrorNamesExpressionDeviceAndHint(t *testing.T) {
	expr := `device.attributes["gpu.nvidia.com"].nosuch == 1`
	_, err := eval(t, expr, nil)
	var ev *EvalError
	if !errors.As(err, &ev) {
		t.Fatalf("got %v, want *EvalError", err)
	}
	if !ev.MissingKey || ev.Device != "gpu.nvidia.com/gpu-0" || ev.Expression != expr || !errors.Is(err, ErrRuntime) || !errors.Is(err, ErrMissingAttribute) {
		t.Fatalf("got %+v", ev)
	}
	for _, want := range []string{"no such key: nosuch", "gpu.nvidia.com/gpu-0", "has()", "optional chaining"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestMatchesBadAttributeValueFailsEveryEvaluation(t *testing.T) {
	for name, attr := range map[string]resourceapi.DeviceAttribute{
		"invalid version":    {VersionValue: ptr.To("9.0")},
		"invalid in a list":  {VersionValues: []string{"1.0.0", "x"}},
		"attribute no value": {},
	} {
		t.Run(name, func(t *testing.T) {
			dev := testGPU()
			dev.Attributes["bad"] = attr
			_, err := eval(t, `true`, dev)
			if !errors.Is(err, ErrRuntime) || !strings.Contains(err.Error(), "attribute bad") {
				t.Fatalf("got %v, want a runtime error naming attribute bad", err)
			}
		})
	}
}

func TestMatchesCostLimit(t *testing.T) {
	expr := `cel.bind(r, lists.range(1000), r.all(i, r.all(j, i + j >= 0)))`
	_, err := eval(t, expr, nil)
	if !errors.Is(err, ErrCostLimit) || errors.Is(err, ErrRuntime) {
		t.Fatalf("got %v, want only ErrCostLimit", err)
	}
	sel, err := testEnv.Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	if sel.MaxCost() <= resourceapi.CELSelectorExpressionMaxCost {
		t.Fatalf("MaxCost %d should exceed the limit", sel.MaxCost())
	}
}

func TestMatchesCustomCostLimit(t *testing.T) {
	env, err := NewEnv(Options{CostLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := env.Compile(`[1, 2, 3, 4, 5, 6].all(x, x > 0)`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sel.Matches(context.Background(), NewDevice("d", testGPU())); !errors.Is(err, ErrCostLimit) {
		t.Fatalf("got %v, want ErrCostLimit", err)
	}
}

func TestMatchesContextCancelled(t *testing.T) {
	cause := errors.New("scheduling cycle aborted")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	for _, expr := range []string{`true`, `lists.range(100).all(i, true)`} {
		sel, err := testEnv.Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		_, err = sel.Matches(ctx, NewDevice("d", testGPU()))
		if !errors.Is(err, ErrRuntime) || !errors.Is(err, cause) {
			t.Errorf("%s: got %v, want a runtime error wrapping the cause", expr, err)
		}
	}
}

func TestMatchesContextCancelledDuringLoop(t *testing.T) {
	// Without a cost limit to stop it, this loop would run for hours; only
	// the interrupt check of the cancelled context can end it.
	env, err := NewEnv(Options{CostLimit: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := env.Compile(`lists.range(100000).all(i, lists.range(100000).all(j, i + j >= 0))`)
	if err != nil {
		t.Fatal(err)
	}
	// The context is cancelled as Matches checks it before evaluating: only the loop's interrupt check
	// can see it, however the goroutines are scheduled.
	ctx := &cancelledOnFirstCheck{Context: context.Background(), done: make(chan struct{})}
	_, err = sel.Matches(ctx, NewDevice("d", testGPU()))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrRuntime) {
		t.Fatalf("got %v, want a runtime error wrapping context.Canceled", err)
	}
}

// cancelledOnFirstCheck is a context that is live when its Err is first asked and cancelled right after:
// a cancellation that arrives once an evaluation has started, without a timer.
type cancelledOnFirstCheck struct {
	context.Context
	asked atomic.Bool
	done  chan struct{}
}

func (c *cancelledOnFirstCheck) Done() <-chan struct{} { return c.done }

func (c *cancelledOnFirstCheck) Err() error {
	if c.asked.CompareAndSwap(false, true) {
		close(c.done)
		return nil
	}
	return context.Canceled
}

func TestMatchesDoesNotAllocate(t *testing.T) {
	dev := NewDevice("gpu.nvidia.com", testGPU())
	ctx := context.Background()
	for _, expr := range []string{
		`device.driver == "gpu.nvidia.com"`,
		`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`,
		`device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("9.0.0")) >= 0`,
		`device.attributes["gpu.nvidia.com"].architecture in ["Hopper", "Blackwell"] && !device.attributes["gpu.nvidia.com"].mig`,
		`has(device.attributes["gpu.nvidia.com"].index) && device.attributes["gpu.nvidia.com"].index < 4`,
	} {
		sel, err := testEnv.Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(50, func() {
			if ok, err := sel.Matches(ctx, dev); !ok || err != nil {
				t.Fatalf("%s: got %v, %v", expr, ok, err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per evaluation, want 0", expr, allocs)
		}
	}
}

func TestMatchesConcurrently(t *testing.T) {
	dev := testGPU()
	// A quantity too precise for the int64 form is kept as a decimal, the
	// form Quantity.Cmp converts to in place.
	dev.Capacity["dra.example.com/precise"] = resourceapi.DeviceCapacity{Value: resource.MustParse("0.000000000001")}
	dev.Capacity["dra.example.com/huge"] = resourceapi.DeviceCapacity{Value: resource.MustParse("123456789012345678901234567890")}
	prepared := NewDevice("gpu.nvidia.com", dev)
	var selectors []*Selector
	for _, expr := range []string{
		`device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("40G")) && device.capacity["dra.example.com"].bandwidth.isLessThan(quantity("2"))`,
		`device.capacity["dra.example.com"].precise.compareTo(quantity("1")) < 0`,
		`quantity("1").compareTo(device.capacity["dra.example.com"].precise) > 0`,
		`device.capacity["dra.example.com"].precise == quantity("0.000000000001")`,
		`device.capacity["gpu.nvidia.com"].memory.add(device.capacity["dra.example.com"].precise).isGreaterThan(quantity("80Gi"))`,
		`device.capacity["dra.example.com"].precise.asApproximateFloat() > 0.0`,
		`device.capacity["gpu.nvidia.com"].memory.compareTo(device.capacity["dra.example.com"].huge) < 0`,
		`device.capacity["dra.example.com"].huge.isGreaterThan(device.capacity["gpu.nvidia.com"].memory)`,
		`device.capacity["dra.example.com"].huge == quantity("123456789012345678901234567890")`,
		`!device.capacity["dra.example.com"].huge.isInteger() && sign(device.capacity["dra.example.com"].huge.sub(1)) == 1`,
		`device.attributes["gpu.nvidia.com"].cudaComputeCapability.isLessThan(semver("10.0.0"))`,
		`device.attributes["dra.example.com"].ids.sum() == 11 && device.attributes["dra.example.com"].zones.includes("a")`,
	} {
		sel, err := testEnv.Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		selectors = append(selectors, sel)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				for _, sel := range selectors {
					if ok, err := sel.Matches(context.Background(), prepared); !ok || err != nil {
						t.Errorf("%s: got %v, %v", sel.Expression(), ok, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestNewDeviceDoesNotModifyInput(t *testing.T) {
	dev := testGPU()
	before := dev.DeepCopy()
	d := NewDevice("gpu.nvidia.com", dev)
	if !before.Capacity["memory"].Value.Equal(dev.Capacity["memory"].Value) || len(dev.Attributes) != len(before.Attributes) {
		t.Fatal("input modified")
	}
	// Later changes to the input do not reach the prepared device.
	dev.Attributes["index"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(99))}
	sel, _ := testEnv.Compile(`device.attributes["gpu.nvidia.com"].index == 3`)
	if ok, err := sel.Matches(context.Background(), d); !ok || err != nil {
		t.Fatalf("got %v, %v", ok, err)
	}
}

func TestNewDeviceNil(t *testing.T) {
	d := NewDevice("gpu.nvidia.com", nil)
	sel, _ := testEnv.Compile(`device.attributes.size() == 0 && device.driver == "gpu.nvidia.com"`)
	if ok, err := sel.Matches(context.Background(), d); !ok || err != nil {
		t.Fatalf("got %v, %v", ok, err)
	}
	if d.Name() != "gpu.nvidia.com/" {
		t.Fatalf("name %q", d.Name())
	}
}

func TestMatchesOversizedDeviceStillEnforcesCost(t *testing.T) {
	// A device beyond the API's limits may cost more than the estimate; it
	// must run with cost tracking.
	dev := testGPU()
	long := make([]int64, 5000)
	dev.Attributes["dra.example.com/long"] = resourceapi.DeviceAttribute{IntValues: long}
	env, err := NewEnv(Options{CostLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := env.Compile(`device.attributes["dra.example.com"].ids.all(i, i >= 0)`)
	if err != nil {
		t.Fatal(err)
	}
	if sel.MaxCost() > 1000 {
		t.Fatalf("estimate %d unexpectedly above the limit", sel.MaxCost())
	}
	sel2, err := env.Compile(`device.attributes["dra.example.com"].long.all(i, i >= 0)`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sel2.Matches(context.Background(), NewDevice("gpu.nvidia.com", dev)); !errors.Is(err, ErrCostLimit) {
		t.Fatalf("got %v, want ErrCostLimit", err)
	}
}

func TestMatchesCostLimitWhereTheEstimateIsLow(t *testing.T) {
	// validate() of the uri format costs 276 at runtime although Kubernetes
	// estimates it at 32; the limit must still apply, as it does there.
	env, err := NewEnv(Options{CostLimit: 200})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := env.Compile(`format.uri().validate("https://x").hasValue()`)
	if err != nil {
		t.Fatal(err)
	}
	if sel.MaxCost() > 200 {
		t.Fatalf("estimate %d, expected below the limit", sel.MaxCost())
	}
	if _, err := sel.Matches(context.Background(), NewDevice("d", nil)); !errors.Is(err, ErrCostLimit) {
		t.Fatalf("got %v, want ErrCostLimit", err)
	}
}

func TestMatchesNilDevice(t *testing.T) {
	sel, _ := testEnv.Compile(`true`)
	if _, err := sel.Matches(context.Background(), nil); !errors.Is(err, ErrRuntime) {
		t.Fatalf("got %v, want ErrRuntime", err)
	}
}

// A device is prepared the same way whatever order its maps are read in: of two bad attributes the error
// names the first by name, and of two spellings of one attribute ("model" and "<driver>/model") the last
// by name wins.
func TestNewDeviceIsDeterministic(t *testing.T) {
	for range 20 {
		dev := testGPU()
		dev.Attributes["zz-bad"] = resourceapi.DeviceAttribute{}
		dev.Attributes["aa-bad"] = resourceapi.DeviceAttribute{VersionValue: ptr.To("9.0")}
		if _, err := eval(t, `true`, dev); err == nil || !strings.Contains(err.Error(), "attribute aa-bad") {
			t.Fatalf("got %v, want the error of attribute aa-bad", err)
		}

		dev = testGPU()
		dev.Attributes["spelled"] = resourceapi.DeviceAttribute{StringValue: ptr.To("short")}
		dev.Attributes["gpu.nvidia.com/spelled"] = resourceapi.DeviceAttribute{StringValue: ptr.To("qualified")}
		dev.Capacity["slots"] = resourceapi.DeviceCapacity{Value: resource.MustParse("1")}
		dev.Capacity["gpu.nvidia.com/slots"] = resourceapi.DeviceCapacity{Value: resource.MustParse("2")}
		ok, err := eval(t, `device.attributes["gpu.nvidia.com"].spelled == "short" && device.capacity["gpu.nvidia.com"].slots == quantity("1")`, dev)
		if err != nil || !ok {
			t.Fatalf("got %v, %v; want the unqualified spellings (last by name) to win", ok, err)
		}
	}
}
