package capacity

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

func TestLedger(t *testing.T) {
	dev := cmap{"memory": {Value: q("40Gi")}, "cores": {Value: q("8")}}
	tests := []struct {
		name   string
		shares []qmap
		next   qmap
		fits   bool
	}{
		{name: "an empty device fits a share up to its value", next: qmap{"memory": q("40Gi"), "cores": q("8")}, fits: true},
		{name: "shares add up to the value exactly", shares: []qmap{{"memory": q("30Gi"), "cores": q("4")}}, next: qmap{"memory": q("10Gi"), "cores": q("4")}, fits: true},
		{name: "one capacity over the value does not fit", shares: []qmap{{"memory": q("30Gi"), "cores": q("4")}}, next: qmap{"memory": q("10Gi"), "cores": q("5")}, fits: false},
		{name: "fractional shares add exactly", shares: []qmap{{"cores": q("7700m")}}, next: qmap{"cores": q("300m")}, fits: true},
		{name: "a capacity the device lacks never fits", next: qmap{"bandwidth": q("1")}, fits: false},
		{name: "an overcommitted device fits nothing more", shares: []qmap{{"cores": q("9")}}, next: qmap{"cores": q("0")}, fits: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger(dev)
			for _, s := range tc.shares {
				l.Add(s)
			}
			if got := l.Fits(tc.next); got != tc.fits {
				t.Fatalf("Fits = %v, want %v", got, tc.fits)
			}
		})
	}
}

func TestLedgerAddThenRemoveRestores(t *testing.T) {
	l := NewLedger(cmap{"memory": {Value: q("40Gi")}})
	l.Add(qmap{"memory": q("12Gi")})
	l.Add(qmap{"memory": q("1500Mi")})
	l.Remove(qmap{"memory": q("12Gi")})
	if used := l.Used("memory"); used.Cmp(q("1500Mi")) != 0 {
		t.Fatalf("used %s", used.String())
	}
	avail, ok := l.Available("memory")
	if want := q("40Gi"); !ok || func() bool { want.Sub(q("1500Mi")); return avail.Cmp(want) != 0 }() {
		t.Fatalf("available %s", avail.String())
	}
	c := l.Clone()
	c.Add(qmap{"memory": q("1Gi")})
	if used := l.Used("memory"); used.Cmp(q("1500Mi")) != 0 {
		t.Fatalf("clone shares state: used %s", used.String())
	}
}

func consumes(set string, groups []string, counters map[string]string) resourceapi.DeviceCounterConsumption {
	c := resourceapi.DeviceCounterConsumption{CounterSet: set, CompatibilityGroups: groups, Counters: map[string]resourceapi.Counter{}}
	for n, v := range counters {
		c.Counters[n] = resourceapi.Counter{Value: q(v)}
	}
	return c
}

func TestCounters(t *testing.T) {
	sets := []resourceapi.CounterSet{
		{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: q("80Gi")}, "slices": {Value: q("7")}}},
		{Name: "gpu-1", Counters: map[string]resourceapi.Counter{"memory": {Value: q("80Gi")}}},
	}
	half := func(groups ...string) []resourceapi.DeviceCounterConsumption {
		return []resourceapi.DeviceCounterConsumption{consumes("gpu-0", groups, map[string]string{"memory": "40Gi", "slices": "3"})}
	}
	tests := []struct {
		name  string
		added [][]resourceapi.DeviceCounterConsumption
		next  []resourceapi.DeviceCounterConsumption
		fits  bool
	}{
		{name: "a device without counters always fits", added: [][]resourceapi.DeviceCounterConsumption{half(), half()}, next: nil, fits: true},
		{name: "two halves fit one counter set", added: [][]resourceapi.DeviceCounterConsumption{half()}, next: half(), fits: true},
		{name: "a third half overdraws", added: [][]resourceapi.DeviceCounterConsumption{half(), half()}, next: half(), fits: false},
		{name: "another counter set is independent", added: [][]resourceapi.DeviceCounterConsumption{half(), half()},
			next: []resourceapi.DeviceCounterConsumption{consumes("gpu-1", nil, map[string]string{"memory": "80Gi"})}, fits: true},
		{name: "an overdrawn pool admits no further counter-consuming device", added: [][]resourceapi.DeviceCounterConsumption{half(), half(), half()},
			next: []resourceapi.DeviceCounterConsumption{consumes("gpu-1", nil, map[string]string{"memory": "1"})}, fits: false},
		{name: "consumption of an unknown counter is ignored", next: []resourceapi.DeviceCounterConsumption{consumes("gpu-1", nil, map[string]string{"power": "1k"})}, fits: true},
		{name: "groups that intersect share a counter set", added: [][]resourceapi.DeviceCounterConsumption{half("a", "b")}, next: half("b"), fits: true},
		{name: "groups that do not intersect cannot share", added: [][]resourceapi.DeviceCounterConsumption{half("a")}, next: half("b"), fits: false},
		{name: "the intersection over all members must be non-empty", added: [][]resourceapi.DeviceCounterConsumption{half("a", "b"), {consumes("gpu-0", []string{"b", "c"}, nil)}}, next: half("a"), fits: false},
		{name: "a device without groups does not join devices with groups", added: [][]resourceapi.DeviceCounterConsumption{half("a")}, next: half(), fits: false},
		{name: "a device with groups does not join devices without", added: [][]resourceapi.DeviceCounterConsumption{half()}, next: half("a"), fits: false},
		{name: "devices without groups share with each other", added: [][]resourceapi.DeviceCounterConsumption{half()}, next: half(), fits: true},
		{name: "groups on another counter set are not compared", added: [][]resourceapi.DeviceCounterConsumption{half("a")},
			next: []resourceapi.DeviceCounterConsumption{consumes("gpu-1", []string{"b"}, map[string]string{"memory": "1"})}, fits: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCounters(sets)
			for _, a := range tc.added {
				c.Add(a)
			}
			if got := c.Fits(tc.next); got != tc.fits {
				t.Fatalf("Fits = %v, want %v", got, tc.fits)
			}
		})
	}
}

func TestCountersRemoveRestores(t *testing.T) {
	c := NewCounters([]resourceapi.CounterSet{{Name: "s", Counters: map[string]resourceapi.Counter{"m": {Value: q("10")}}}})
	a := []resourceapi.DeviceCounterConsumption{consumes("s", []string{"x"}, map[string]string{"m": "6"})}
	b := []resourceapi.DeviceCounterConsumption{consumes("s", nil, map[string]string{"m": "6"})}
	c.Add(a)
	if c.Fits(b) {
		t.Fatal("b fits next to a")
	}
	c.Remove(a)
	if !c.Fits(b) {
		t.Fatal("b does not fit after removing a")
	}
	if r, ok := c.Remaining("s", "m"); !ok || r.Cmp(q("10")) != 0 {
		t.Fatalf("remaining %v %v", r, ok)
	}
}
