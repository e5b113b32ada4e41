package capacity

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

func BenchmarkConsumed(b *testing.B) {
	dev := cmap{
		"memory": {Value: q("80Gi"), RequestPolicy: rangePolicy("4Gi", "4Gi", "40Gi", "4Gi")},
		"cores":  {Value: q("8"), RequestPolicy: rangePolicy("100m", "0", "", "100m")},
	}
	req := qmap{"memory": q("10Gi"), "cores": q("250m")}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Consumed(req, dev, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLedgerFits(b *testing.B) {
	dev := cmap{"memory": {Value: q("80Gi")}, "cores": {Value: q("8")}}
	l := NewLedger(dev)
	l.Add(qmap{"memory": q("40Gi"), "cores": q("4")})
	share := qmap{"memory": q("12Gi"), "cores": q("1")}
	b.ReportAllocs()
	for b.Loop() {
		if !l.Fits(share) {
			b.Fatal("does not fit")
		}
	}
}

func BenchmarkCountersFits(b *testing.B) {
	c := NewCounters([]resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: q("80Gi")}, "slices": {Value: q("7")}}}})
	part := []resourceapi.DeviceCounterConsumption{consumes("gpu-0", []string{"a"}, map[string]string{"memory": "20Gi", "slices": "2"})}
	c.Add(part)
	b.ReportAllocs()
	for b.Loop() {
		if !c.Fits(part) {
			b.Fatal("does not fit")
		}
	}
}
