package celenv_test

import (
	"context"
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/celenv"
)

func exampleGPU(name, arch, cc string, memory string) *resourceapi.Device {
	return &resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"architecture":          {StringValue: ptr.To(arch)},
			"cudaComputeCapability": {VersionValue: ptr.To(cc)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: resource.MustParse(memory)},
		},
	}
}

func ExampleNewEnv() {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		panic(err)
	}
	sel, err := env.Compile(`device.driver == "gpu.nvidia.com"`)
	if err != nil {
		panic(err)
	}
	dev := celenv.NewDevice("gpu.nvidia.com", exampleGPU("gpu-0", "Hopper", "9.0.0", "80Gi"))
	ok, err := sel.Matches(context.Background(), dev)
	fmt.Println(ok, err)
	// Output: true <nil>
}

func ExampleEnv_Compile() {
	env, _ := celenv.NewEnv(celenv.Options{})
	sel, err := env.Compile(`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`)
	fmt.Println(sel.Expression(), err)

	_, err = env.Compile(`device.capacity["gpu.nvidia.com"].memory >= "40Gi"`)
	var ce *celenv.CompileError
	fmt.Println(errors.Is(err, celenv.ErrCompile), errors.As(err, &ce), ce.Line, ce.Column)
	// Output:
	// device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0 <nil>
	// true true 1 42
}

func ExampleNewDevice() {
	env, _ := celenv.NewEnv(celenv.Options{})
	// Prepared once; every selector below reads the converted values.
	dev := celenv.NewDevice("gpu.nvidia.com", exampleGPU("gpu-0", "Hopper", "9.0.0", "80Gi"))
	for _, expr := range []string{
		// Names without a domain are in the driver's domain.
		`device.attributes["gpu.nvidia.com"].architecture == "Hopper"`,
		`device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("9.0.0")) >= 0`,
		// An unknown domain reads as an empty map.
		`device.attributes["other.example.com"].size() == 0`,
	} {
		sel, _ := env.Compile(expr)
		ok, _ := sel.Matches(context.Background(), dev)
		fmt.Println(ok)
	}
	fmt.Println(dev.Name())
	// Output:
	// true
	// true
	// true
	// gpu.nvidia.com/gpu-0
}

// The GPUs of a fleet often publish the same attributes and capacity: each is prepared from the
// first one's converted values, under its own name.
func ExampleDevice_Named() {
	env, _ := celenv.NewEnv(celenv.Options{})
	first := celenv.NewDevice("gpu.nvidia.com", exampleGPU("gpu-0", "Hopper", "9.0.0", "80Gi"))
	fits, _ := env.Compile(`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`)
	h100, _ := env.Compile(`device.attributes["gpu.nvidia.com"].model == "H100"`)
	for _, name := range []string{"gpu-0", "gpu-1"} {
		dev := first.Named("gpu.nvidia.com", name)
		ok, _ := fits.Matches(context.Background(), dev)
		_, err := h100.Matches(context.Background(), dev)
		var ev *celenv.EvalError
		errors.As(err, &ev)
		fmt.Println(dev.Name(), ok, ev.Device)
	}
	// Output:
	// gpu.nvidia.com/gpu-0 true gpu.nvidia.com/gpu-0
	// gpu.nvidia.com/gpu-1 true gpu.nvidia.com/gpu-1
}

func ExampleSelector_Matches() {
	env, _ := celenv.NewEnv(celenv.Options{})
	sel, _ := env.Compile(`device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA")`)
	_, err := sel.Matches(context.Background(), celenv.NewDevice("gpu.nvidia.com", exampleGPU("gpu-0", "Hopper", "9.0.0", "80Gi")))
	var ev *celenv.EvalError
	fmt.Println(errors.Is(err, celenv.ErrRuntime), errors.Is(err, celenv.ErrMissingAttribute), errors.As(err, &ev), ev.Device)
	fmt.Println(err)
	// Output:
	// true true true gpu.nvidia.com/gpu-0
	// evaluate "device.attributes[\"gpu.nvidia.com\"].productName.startsWith(\"NVIDIA\")" on device gpu.nvidia.com/gpu-0: no such key: productName (consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields)
}

func ExampleSelector_MaxCost() {
	env, _ := celenv.NewEnv(celenv.Options{})
	cheap, _ := env.Compile(`device.driver == "gpu.nvidia.com"`)
	loop, _ := env.Compile(`cel.bind(r, lists.range(2000), r.all(i, r.all(j, i != j || i == j)))`)
	// The API server rejects new selectors whose estimate exceeds the limit.
	fmt.Println(cheap.MaxCost() <= resourceapi.CELSelectorExpressionMaxCost)
	fmt.Println(loop.MaxCost() <= resourceapi.CELSelectorExpressionMaxCost)

	// At runtime the limit stops the evaluation (here a small one).
	small, _ := celenv.NewEnv(celenv.Options{CostLimit: 1000})
	loop, _ = small.Compile(loop.Expression())
	_, err := loop.Matches(context.Background(), celenv.NewDevice("gpu.nvidia.com", nil))
	fmt.Println(errors.Is(err, celenv.ErrCostLimit))
	// Output:
	// true
	// false
	// true
}

func ExampleEnv_CompileDerived() {
	env, _ := celenv.NewEnv(celenv.Options{})
	d, _ := env.CompileDerived(`device.attributes["gpu.nvidia.com"].architecture.lowerAscii()`)
	attr, err := d.Evaluate(context.Background(), celenv.NewDevice("gpu.nvidia.com", exampleGPU("gpu-0", "Hopper", "9.0.0", "80Gi")))
	fmt.Println(*attr.StringValue, err, d.Expression())

	_, err = env.CompileDerived(`device.capacity["gpu.nvidia.com"].memory`)
	fmt.Println(err)
	// Output:
	// hopper <nil> device.attributes["gpu.nvidia.com"].architecture.lowerAscii()
	// compile "device.capacity[\"gpu.nvidia.com\"].memory": must evaluate to a primitive scalar (string, integer, boolean, semver) or a list of these scalars, not kubernetes.Quantity
}

func ExampleDerived_Evaluate() {
	env, _ := celenv.NewEnv(celenv.Options{})
	d, _ := env.CompileDerived(`device.attributes["gpu.nvidia.com"].cudaComputeCapability.major() * 10`)
	attr, _ := d.Evaluate(context.Background(), celenv.NewDevice("gpu.nvidia.com", exampleGPU("gpu-0", "Hopper", "9.0.0", "80Gi")))
	fmt.Println(*attr.IntValue)
	// Output: 90
}

func ExampleEnv_Lint() {
	env, _ := celenv.NewEnv(celenv.Options{})
	devices := []*celenv.Device{
		celenv.NewDevice("gpu.nvidia.com", exampleGPU("gpu-0", "Hopper", "9.0.0", "80Gi")),
		celenv.NewDevice("gpu.nvidia.com", exampleGPU("gpu-1", "Ampere", "8.0.0", "40Gi")),
	}
	report, _ := env.Lint(context.Background(),
		`device.attributes["gpu.nvidia.com"].cudaComputeCapability >= "9.0" && device.attributes["gpu.nvidia.com"].memory > 1`, devices)
	for _, f := range report.Findings {
		fmt.Println(f.Kind, f.Message)
	}
	for _, o := range report.Outcomes {
		fmt.Println(o.Device, o.Matched, o.Err != nil)
	}
	// Output:
	// TypeMismatch attribute gpu.nvidia.com/cudaComputeCapability is published as version on 2 of the 2 devices, but it is compared (>=) with the string "9.0"; compare versions with semver(...), e.g. device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("1.0.0")) >= 0
	// UnknownName attribute gpu.nvidia.com/memory is not published by any of the 2 devices; it is a capacity: use device.capacity["gpu.nvidia.com"].memory
	// gpu.nvidia.com/gpu-0 false true
	// gpu.nvidia.com/gpu-1 false true
}

func ExampleDefaultFeatures() {
	f := celenv.DefaultFeatures()
	fmt.Println(f.DRAConsumableCapacity, f.DRAListTypeAttributes)
	env, _ := celenv.NewEnv(celenv.Options{Features: &f, NewExpressions: true})
	_, err := env.Compile(`device.attributes["gpu.nvidia.com"].ids.includes(1)`)
	fmt.Println(err != nil)
	// Output:
	// true false
	// true
}
