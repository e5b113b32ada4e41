package allocator

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"
)

// TestDeviceContentKnowsTheFields: appendDeviceContent and appendAttribute write the fields of
// capacities, counter consumption and attributes by hand; a field a later API adds to them must be
// added there (and here).
func TestDeviceContentKnowsTheFields(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want []string
	}{
		{resourceapi.DeviceCapacity{}, []string{"Value", "RequestPolicy"}},
		{resourceapi.DeviceCounterConsumption{}, []string{"CounterSet", "Counters", "CompatibilityGroups"}},
		{resourceapi.Counter{}, []string{"Value"}},
		{resourceapi.DeviceAttribute{}, []string{"IntValue", "BoolValue", "StringValue", "VersionValue", "IntValues", "BoolValues", "StringValues", "VersionValues"}},
	} {
		var got []string
		typ := reflect.TypeOf(tc.v)
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s has fields %v, appendDeviceContent knows %v", typ, got, tc.want)
		}
	}
}

// TestDeviceContent: devices that differ in name and attributes only have one content; any difference
// a check can read (a capacity's value or format, its request policy, a counter, a compatibility
// group, nil against empty, a taint) gives another. The devices are not modified.
func TestDeviceContent(t *testing.T) {
	base := func() *resourceapi.Device {
		return &resourceapi.Device{
			Name:       "gpu-0",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": {StringValue: ptrTo("a")}},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": {Value: resource.MustParse("80Gi")}, "cores": {Value: resource.MustParse("132")},
			},
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{
				CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("80Gi")}, "slice-0": {Value: resource.MustParse("1")}},
				CompatibilityGroups: []string{"a"},
			}},
		}
	}
	content := func(d *resourceapi.Device) string {
		before := d.DeepCopy()
		b, ok := appendDeviceContent(nil, d, new(contentScratch))
		if !ok {
			t.Fatal("not written")
		}
		if !reflect.DeepEqual(before, d) {
			t.Fatal("device modified")
		}
		return string(b)
	}
	want := content(base())
	same := base()
	same.Name = "gpu-1"
	same.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": {StringValue: ptrTo("b")}}
	same.Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("80Gi")}
	if got := content(same); got != want {
		t.Error("name and attributes changed the content")
	}
	for name, change := range map[string]func(d *resourceapi.Device){
		"a capacity's value": func(d *resourceapi.Device) {
			d.Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("40Gi")}
		},
		"a capacity's format": func(d *resourceapi.Device) {
			d.Capacity["cores"] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(132, resource.BinarySI)}
		},
		"a capacity more": func(d *resourceapi.Device) {
			d.Capacity["power"] = resourceapi.DeviceCapacity{Value: resource.MustParse("1")}
		},
		"a request policy": func(d *resourceapi.Device) {
			d.Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("80Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{}}
		},
		"no capacity at all":    func(d *resourceapi.Device) { d.Capacity = nil },
		"an empty capacity map": func(d *resourceapi.Device) { d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{} },
		"a counter's amount": func(d *resourceapi.Device) {
			d.ConsumesCounters[0].Counters["slice-0"] = resourceapi.Counter{Value: resource.MustParse("2")}
		},
		"the counter set":           func(d *resourceapi.Device) { d.ConsumesCounters[0].CounterSet = "gpu-1" },
		"a compatibility group":     func(d *resourceapi.Device) { d.ConsumesCounters[0].CompatibilityGroups = []string{"b"} },
		"no compatibility groups":   func(d *resourceapi.Device) { d.ConsumesCounters[0].CompatibilityGroups = nil },
		"no counter consumption":    func(d *resourceapi.Device) { d.ConsumesCounters = nil },
		"an empty consumption list": func(d *resourceapi.Device) { d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{} },
		"a taint": func(d *resourceapi.Device) {
			d.Taints = []resourceapi.DeviceTaint{{Key: "k", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		},
		"allowMultipleAllocations": func(d *resourceapi.Device) { d.AllowMultipleAllocations = ptrTo(true) },
	} {
		d := base()
		change(d)
		if content(d) == want {
			t.Errorf("%s: same content", name)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestAttributeEncoding: attributes that differ in kind or value are written apart, equal ones alike.
func TestAttributeEncoding(t *testing.T) {
	attrs := []resourceapi.DeviceAttribute{
		{IntValue: ptrTo(int64(1))}, {IntValue: ptrTo(int64(2))}, {BoolValue: ptrTo(true)}, {BoolValue: ptrTo(false)},
		{StringValue: ptrTo("1")}, {StringValue: ptrTo("")}, {VersionValue: ptrTo("1.0.0")},
		{IntValues: []int64{}}, {IntValues: []int64{1}}, {BoolValues: []bool{true}}, {StringValues: []string{"1"}},
		{StringValues: []string{"1", "2"}}, {StringValues: []string{"12"}}, {VersionValues: []string{"1.0.0"}}, {},
	}
	seen := map[string]int{}
	for i := range attrs {
		k := string(appendAttribute(nil, &attrs[i]))
		if j, dup := seen[k]; dup {
			t.Errorf("attributes %d and %d written alike", j, i)
		}
		seen[k] = i
		c := attrs[i]
		if string(appendAttribute(nil, &c)) != k {
			t.Errorf("attribute %d written twice differently", i)
		}
	}
}

// TestCounterSetsContent: a pool's counter sets are written alike when they are equal, whatever the
// order their maps were filled in, and apart when anything a counter check reads differs.
func TestCounterSetsContent(t *testing.T) {
	base := func() []resourceapi.CounterSet {
		return []resourceapi.CounterSet{
			{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("80Gi")}, "slice-0": {Value: resource.MustParse("1")}}},
			{Name: "gpu-1", Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("80Gi")}}},
		}
	}
	content := func(sets []resourceapi.CounterSet) string {
		var before []resourceapi.CounterSet
		for i := range sets {
			before = append(before, *sets[i].DeepCopy())
		}
		b, ok := appendCounterSets(nil, sets, new(contentScratch))
		if !ok {
			t.Fatal("not written")
		}
		if len(sets) > 0 && !reflect.DeepEqual(before, sets) {
			t.Fatal("sets modified")
		}
		return string(b)
	}
	want := content(base())
	refilled := base()
	refilled[0].Counters = map[string]resourceapi.Counter{"slice-0": {Value: resource.MustParse("1")}}
	refilled[0].Counters["memory"] = resourceapi.Counter{Value: resource.MustParse("80Gi")}
	if got := content(refilled); got != want {
		t.Error("the order a map was filled in changed the content")
	}
	for name, change := range map[string]func(s []resourceapi.CounterSet) []resourceapi.CounterSet{
		"a set's name": func(s []resourceapi.CounterSet) []resourceapi.CounterSet { s[1].Name = "gpu-2"; return s },
		"a counter's value": func(s []resourceapi.CounterSet) []resourceapi.CounterSet {
			s[0].Counters["slice-0"] = resourceapi.Counter{Value: resource.MustParse("2")}
			return s
		},
		"a counter's format": func(s []resourceapi.CounterSet) []resourceapi.CounterSet {
			s[0].Counters["slice-0"] = resourceapi.Counter{Value: *resource.NewQuantity(1, resource.BinarySI)}
			return s
		},
		"a counter's name": func(s []resourceapi.CounterSet) []resourceapi.CounterSet {
			s[1].Counters = map[string]resourceapi.Counter{"memory-0": {Value: resource.MustParse("80Gi")}}
			return s
		},
		"a counter moved to the other set": func(s []resourceapi.CounterSet) []resourceapi.CounterSet {
			delete(s[0].Counters, "slice-0")
			s[1].Counters["slice-0"] = resourceapi.Counter{Value: resource.MustParse("1")}
			return s
		},
		"the sets' order": func(s []resourceapi.CounterSet) []resourceapi.CounterSet { s[0], s[1] = s[1], s[0]; return s },
		"a set less":      func(s []resourceapi.CounterSet) []resourceapi.CounterSet { return s[:1] },
		"no sets":         func(s []resourceapi.CounterSet) []resourceapi.CounterSet { return nil },
		"a counter less": func(s []resourceapi.CounterSet) []resourceapi.CounterSet {
			delete(s[0].Counters, "slice-0")
			return s
		},
	} {
		if content(change(base())) == want {
			t.Errorf("%s: same content", name)
		}
	}
}

// TestPropScratchSortedKeys: whatever the maps before it, a map's keys come back in order, whether the
// buffer already held its names (reused) or not (sorted again).
func TestPropScratchSortedKeys(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var buf []string
		names := []string{"memory", "memory-slice-0", "memory-slice-1", "multiprocessors", "copy-engines", ""}
		for range rapid.IntRange(1, 8).Draw(t, "maps") {
			m := map[string]int{}
			for _, n := range names {
				if rapid.Bool().Draw(t, "has "+n) {
					m[n] = 1
				}
			}
			want := slices.Sorted(maps.Keys(m))
			if got := scratchSortedKeys(&buf, m); !slices.Equal(got, want) {
				t.Fatalf("keys of %v: got %q, want %q", m, got, want)
			}
		}
	})
}
