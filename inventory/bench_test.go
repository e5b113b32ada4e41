package inventory_test

import (
	"testing"
	"time"

	"github.com/dralloc/dralloc/inventory"
)

// BenchmarkSlicesDGXH100DynamicMIG publishes the shipped DGX H100 profile:
// 8 counter sets and 232 devices in 5 slices.
func BenchmarkSlicesDGXH100DynamicMIG(b *testing.B) {
	p, err := inventory.Profile("dgxh100")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := inventory.Slices(p.Node, inventory.Options{NodeName: "dgx-1", Mode: inventory.ModeDynamicMIG}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateSlice validates one full device slice of the DGX H100
// profile (58 partitionable devices).
func BenchmarkValidateSlice(b *testing.B) {
	p, _ := inventory.Profile("dgxh100")
	slices, err := p.Slices("dgx-1", 0)
	if err != nil {
		b.Fatal(err)
	}
	s := slices[1]
	b.ReportAllocs()
	for b.Loop() {
		if errs := inventory.ValidateSlice(s); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkHealthObserveAndTaints is one poll of one GPU with two active conditions.
func BenchmarkHealthObserveAndTaints(b *testing.B) {
	var p inventory.HealthPolicy
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := p.Observe(inventory.HealthState{}, inventory.Observation{Time: t0, XIDs: []int{48}, ThermalSlowdown: true})
	obs := inventory.Observation{Time: t0.Add(time.Minute), ThermalSlowdown: true}
	b.ReportAllocs()
	for b.Loop() {
		next := p.Observe(s, obs)
		_ = p.Taints(next, obs.Time)
	}
}
