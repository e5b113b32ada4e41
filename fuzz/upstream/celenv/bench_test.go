package celenv_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/celenv"
)

// benchDevice is one GPU as a driver publishes it: six attributes and one
// capacity.
var benchDevice = &resourceapi.Device{
	Name: "gpu-0",
	Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"productName":           {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
		"architecture":          {StringValue: ptr.To("Hopper")},
		"cudaComputeCapability": {VersionValue: ptr.To("9.0.0")},
		"driverVersion":         {VersionValue: ptr.To("560.35.3")},
		"uuid":                  {StringValue: ptr.To("GPU-4d1e7f7a-1b2c-4d5e-8f90-123456789abc")},
		"index":                 {IntValue: ptr.To(int64(0))},
	},
	Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"memory": {Value: resource.MustParse("80Gi")},
	},
}

var benchSelectors = map[string]string{
	"driver":   `device.driver == "gpu.nvidia.com"`,
	"memory":   `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`,
	"hopper":   `device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("9.0.0")) >= 0`,
	"loop":     `["Hopper", "Blackwell"].exists(a, device.attributes["gpu.nvidia.com"].architecture == a)`,
	"combined": `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].architecture in ["Hopper", "Blackwell"] && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`,
}

// BenchmarkSelector evaluates one selector on one device, dralloc on a
// prepared device against upstream's DeviceMatches, in the same run.
func BenchmarkSelector(b *testing.B) {
	benchmarkSelectors(b, context.Background(), []string{"driver", "memory", "hopper", "loop", "combined"})
}

// BenchmarkSelectorCancellable is the same with a context that can be
// cancelled, as a scheduler passes: a selector that loops then runs
// interruptibly.
func BenchmarkSelectorCancellable(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchmarkSelectors(b, ctx, []string{"combined", "loop"})
}

func benchmarkSelectors(b *testing.B, ctx context.Context, names []string) {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dev := celenv.NewDevice(driver, benchDevice)
	up := upstreamCompiler()
	upDev := upstreamDevice(benchDevice)
	for _, name := range names {
		expr := benchSelectors[name]
		b.Run(name+"/dralloc", func(b *testing.B) {
			sel, err := env.Compile(expr)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := sel.Matches(ctx, dev); !ok || err != nil {
					b.Fatalf("got %v, %v", ok, err)
				}
			}
		})
		b.Run(name+"/upstream", func(b *testing.B) {
			res := up.CompileCELExpression(expr, dracel.Options{})
			if res.Error != nil {
				b.Fatal(res.Error)
			}
			b.ReportAllocs()
			for b.Loop() {
				if ok, _, err := res.DeviceMatches(ctx, upDev); !ok || err != nil {
					b.Fatalf("got %v, %v", ok, err)
				}
			}
		})
	}
}

// BenchmarkNewDevice measures the one-time preparation of a device.
func BenchmarkNewDevice(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		celenv.NewDevice(driver, benchDevice)
	}
}

// BenchmarkCompile compiles one selector without a cache on both sides
// (upstream with cost estimation, as API validation does; dralloc always
// estimates).
func BenchmarkCompile(b *testing.B) {
	expr := benchSelectors["combined"]
	b.Run("dralloc", func(b *testing.B) {
		env, err := celenv.NewEnv(celenv.Options{CacheSize: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := env.Compile(expr); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("upstream", func(b *testing.B) {
		up := upstreamCompiler()
		b.ReportAllocs()
		for b.Loop() {
			if res := up.CompileCELExpression(expr, dracel.Options{}); res.Error != nil {
				b.Fatal(res.Error)
			}
		}
	})
}
