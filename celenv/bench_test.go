package celenv

import (
	"context"
	"testing"
)

func BenchmarkCompileCached(b *testing.B) {
	expr := `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`
	if _, err := testEnv.Compile(expr); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := testEnv.Compile(expr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatches(b *testing.B) {
	sel, err := testEnv.Compile(`device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("9.0.0")) >= 0`)
	if err != nil {
		b.Fatal(err)
	}
	dev := NewDevice("gpu.nvidia.com", testGPU())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := sel.Matches(ctx, dev); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkCompileUncached(b *testing.B) {
	env, err := NewEnv(Options{CacheSize: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := env.Compile(`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewEnv(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewEnv(Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
