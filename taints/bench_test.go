package taints

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// benchEvaluator has 1,000 rules, each on one device of one of 125 nodes.
func benchEvaluator(b *testing.B) *Evaluator {
	var rules []*resourceapi.DeviceTaintRule
	for i := range 1000 {
		rules = append(rules, newRule(fmt.Sprintf("r-%04d", i), &resourceapi.DeviceTaintSelector{
			Pool: sp(fmt.Sprintf("node-%d", i/8)), Device: sp(fmt.Sprintf("gpu-%d", i%8))}, "maintenance", noSchedule))
	}
	e, err := NewEvaluator(rules)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

func BenchmarkEvaluatorTaints(b *testing.B) {
	e := benchEvaluator(b)
	dev := &resourceapi.Device{Name: "gpu-3"}
	b.Run("no-match", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(e.Taints("gpu.nvidia.com", "node-999", dev)) != 0 {
				b.Fatal("match")
			}
		}
	})
	b.Run("match", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(e.Taints("gpu.nvidia.com", "node-7", dev)) != 1 {
				b.Fatal("no match")
			}
		}
	})
}

func BenchmarkBlocking(b *testing.B) {
	ts := []resourceapi.DeviceTaint{{Key: "a", Effect: none}, {Key: "b", Effect: noSchedule}, {Key: "c", Effect: noExecute}}
	tols := []resourceapi.DeviceToleration{{Key: "b", Operator: exists}, {Key: "c", Operator: exists, Effect: noExecute}}
	b.ReportAllocs()
	for b.Loop() {
		if _, blocked := Blocking(ts, tols); blocked {
			b.Fatal("blocked")
		}
	}
}
