package allocator_test

import (
	"context"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// distinctModels is n devices, each of its own model.
func distinctModels(n int) []resourceapi.Device {
	out := make([]resourceapi.Device, n)
	for i := range out {
		out[i] = modelDevice(fmt.Sprintf("dev-%02d", i), fmt.Sprintf("m%d", i))
	}
	return out
}

func TestExplainConstraintIsBounded(t *testing.T) {
	// 8 devices with one value among 32 with distinct values: the largest group is 1, found by counting
	// values, not by trying combinations (there are 10 518 300 of them); the search gives up first.
	s := allocator.NewSnapshot(allocator.Options{StepBudget: 1000})
	scenario{slices: attrSlice(distinctModels(32)...), classes: []*resourceapi.DeviceClass{anyClass}}.fill(t, s)
	c := withConstraints(claim("c", exact("req", "any", 8)), matchAttr(driverA+"/model"))
	e, err := s.Explain(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Obstacles) == 0 || e.Obstacles[0].Reason != allocator.ReasonConstraint || e.Obstacles[0].Largest != 1 || e.Obstacles[0].Needed != 8 || len(e.Obstacles[0].Values) != 32 {
		t.Fatalf("obstacles %+v, want the constraint with a largest group of 1 of 8 first\n%s", e.Obstacles, e)
	}
	if e.Steps > 1001 {
		t.Errorf("explaining took %d search steps, more than the budget", e.Steps)
	}
}

func benchSnapshot(b *testing.B) *allocator.Snapshot {
	s := allocator.NewSnapshot(allocator.Options{})
	for _, sl := range attrSlice(distinctModels(64)...) {
		if err := s.AddOrUpdateSlice(sl); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.AddOrUpdateClass(anyClass); err != nil {
		b.Fatal(err)
	}
	if err := s.AddOrUpdateClass(class("m7", `device.attributes["`+driverA+`"].model == "m7"`)); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAllocateUnsatisfiable is the answer a filter pass meets on most nodes: too few devices
// match.
func BenchmarkAllocateUnsatisfiable(b *testing.B) {
	s := benchSnapshot(b)
	claims := []*resourceapi.ResourceClaim{claim("c", exact("req", "m7", 2))}
	n := node(node1, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Allocate(context.Background(), n, claims); err == nil {
			b.Fatal("fits")
		}
	}
}

func BenchmarkExplain(b *testing.B) {
	s := benchSnapshot(b)
	claims := []*resourceapi.ResourceClaim{claim("c", exact("req", "m7", 2))}
	n := node(node1, nil)
	b.ReportAllocs()
	for b.Loop() {
		if e, err := s.Explain(context.Background(), n, claims); err != nil || e.Fits {
			b.Fatal(err)
		}
	}
}
