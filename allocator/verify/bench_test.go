package verify_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/celenv"
)

// BenchmarkCheck measures an admission-style check of one claim with two requests against the fixture cluster,
// with a shared CEL environment (its compile cache warm after the first call).
func BenchmarkCheck(b *testing.B) {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		b.Fatal(err)
	}
	in := baseInput()
	in.CEL = env
	c := claim("c", exact("a", "gpu", 1, `device.attributes["gpu.example.com"].model == "a100"`), exact("b", "gpu", 2))
	results := []resourceapi.AllocationResult{local(gpu("a", "gpu-0"), mig("b", "mig-half-0"), mig("b", "mig-half-1"))}
	claims := []*resourceapi.ResourceClaim{c}
	if vs, err := verify.Check(context.Background(), in, claims, results); err != nil || len(vs) > 0 {
		b.Fatalf("fixture allocation not valid: %v %v", vs, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := verify.Check(context.Background(), in, claims, results); err != nil {
			b.Fatal(err)
		}
	}
}
