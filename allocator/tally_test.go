package allocator

import (
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/capacity"
)

// TestTallyMatchesCounters: the dense counter state answers every device's Fits and every counter's
// remainder as capacity.Counters does, after any sequence of adds and removes, with counter sets and
// counters defined twice or not at all, negative capacities, a counter listed twice by one device and
// compatibility groups (repeated ones included).
func TestTallyMatchesCounters(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		setNames := []string{"a", "b", "c", "undefined"}
		counterNames := []string{"x", "y", "undefined"}
		var sets []resourceapi.CounterSet
		for range rapid.IntRange(0, 3).Draw(t, "sets") {
			s := resourceapi.CounterSet{Name: rapid.SampledFrom(setNames[:3]).Draw(t, "set"), Counters: map[string]resourceapi.Counter{}}
			for _, n := range counterNames[:2] {
				if rapid.Bool().Draw(t, "has") {
					s.Counters[n] = resourceapi.Counter{Value: *resource.NewQuantity(int64(rapid.IntRange(-2, 12).Draw(t, "value")), resource.DecimalSI)}
				}
			}
			sets = append(sets, s)
		}
		var cons [][]resourceapi.DeviceCounterConsumption
		for range rapid.IntRange(1, 6).Draw(t, "devices") {
			var list []resourceapi.DeviceCounterConsumption
			for range rapid.IntRange(0, 3).Draw(t, "consumptions") {
				dc := resourceapi.DeviceCounterConsumption{CounterSet: rapid.SampledFrom(setNames).Draw(t, "on"), Counters: map[string]resourceapi.Counter{}}
				for _, n := range counterNames {
					if rapid.Bool().Draw(t, "uses") {
						dc.Counters[n] = resourceapi.Counter{Value: *resource.NewQuantity(int64(rapid.IntRange(0, 6).Draw(t, "amount")), resource.DecimalSI)}
					}
				}
				for range rapid.IntRange(0, 3).Draw(t, "groups") {
					dc.CompatibilityGroups = append(dc.CompatibilityGroups, rapid.SampledFrom([]string{"g1", "g2"}).Draw(t, "group"))
				}
				list = append(list, dc)
			}
			cons = append(cons, list)
		}
		l, compiled, _ := compileEach(sets, cons)
		if !l.dense {
			t.Fatal("integer quantities: the layout should be dense")
		}
		ref := capacity.NewCounters(sets)
		st := l.emptyState()
		check := func(when string) {
			for i, c := range cons {
				want := ref.Fits(c)
				got := len(c) == 0 || st.fits(compiled[i])
				if got != want {
					t.Fatalf("%s: device %d fits %v, capacity.Counters says %v", when, i, got, want)
				}
			}
			l.eachCounter(func(set, name string, i int32) {
				q, ok := ref.Remaining(set, name)
				v, exact := q.AsInt64()
				if !ok || !exact || v != st.remaining[i] {
					t.Fatalf("%s: counter %s/%s: %d left, capacity.Counters says %v (%v)", when, set, name, st.remaining[i], q.String(), ok)
				}
			})
		}
		check("empty")
		var added []int
		for range rapid.IntRange(0, 12).Draw(t, "ops") {
			if len(added) > 0 && rapid.Bool().Draw(t, "remove") {
				k := rapid.IntRange(0, len(added)-1).Draw(t, "which")
				i := added[k]
				added = append(added[:k], added[k+1:]...)
				ref.Remove(cons[i])
				st.add(compiled[i], -1)
				check("after a remove")
				continue
			}
			i := rapid.IntRange(0, len(cons)-1).Draw(t, "device")
			added = append(added, i)
			ref.Add(cons[i])
			st.add(compiled[i], 1)
			check("after an add")
		}
	})
}

// TestTallyFallsBack: quantities that are not exact int64 values keep the pool on capacity.Counters.
func TestTallyFallsBack(t *testing.T) {
	for _, v := range []string{"1500m", "0.5", "1e30"} {
		sets := []resourceapi.CounterSet{{Name: "a", Counters: map[string]resourceapi.Counter{"x": {Value: resource.MustParse(v)}}}}
		if l, _, _ := compileEach(sets, nil); l.dense {
			t.Errorf("capacity %s: layout dense", v)
		}
		cons := [][]resourceapi.DeviceCounterConsumption{{{CounterSet: "a", Counters: map[string]resourceapi.Counter{"x": {Value: resource.MustParse(v)}}}}}
		if l, _, _ := compileEach([]resourceapi.CounterSet{{Name: "a", Counters: map[string]resourceapi.Counter{"x": {Value: resource.MustParse("4")}}}}, cons); l.dense {
			t.Errorf("consumption %s: layout dense", v)
		}
	}
	big := resource.MustParse("5e18")
	sets := []resourceapi.CounterSet{{Name: "a", Counters: map[string]resourceapi.Counter{"x": {Value: big}, "y": {Value: big}}}}
	if l, _, _ := compileEach(sets, nil); l.dense {
		t.Error("sums past int64: layout dense")
	}
}

// compileEach is compileCounters with each consumption compiled into an element of its own.
func compileEach(sets []resourceapi.CounterSet, cons [][]resourceapi.DeviceCounterConsumption) (*counterLayout, []*devCounters, undefinedRef) {
	compiled := make([]*devCounters, len(cons))
	for i := range compiled {
		compiled[i] = new(devCounters)
	}
	l, bad := compileCounters(sets, cons, func(i int) *devCounters { return compiled[i] }, nil)
	return l, compiled, bad
}

// TestPropSetLayoutIndex: a set's table finds each of its counters at its position and no other name,
// however the names collide in it (names of one length and the same first, middle and last bytes
// included), up to the API's 32 counters per set.
func TestPropSetLayoutIndex(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.StringMatching(`[ab]{1,6}`)
		names := rapid.SliceOfNDistinct(name, 0, resourceapi.ResourceSliceMaxCountersPerCounterSet, rapid.ID[string]).Draw(t, "names")
		slices.Sort(names)
		sl := setLayout{first: 5, names: names}
		sl.fillSlots(make([]int32, slotsFor(len(names))))
		for i, n := range names {
			if got, ok := sl.index(n); !ok || got != int32(5+i) {
				t.Fatalf("%q: index %d, %v; want %d", n, got, ok, 5+i)
			}
		}
		absent := name.Draw(t, "absent")
		if _, ok := sl.index(absent); ok != slices.Contains(names, absent) {
			t.Fatalf("%q: found %v, listed %v", absent, ok, slices.Contains(names, absent))
		}
	})
}
