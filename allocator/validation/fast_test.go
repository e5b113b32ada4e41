package validation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
)

// The fast checks accept exactly what the apimachinery checks accept.
func TestPropFastChecksAgreeWithApimachinery(t *testing.T) {
	alphabet := []rune("aZz09_-.A/")
	rapid.Check(t, func(rt *rapid.T) {
		s := string(rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 12).Draw(rt, "s"))
		if long := rapid.IntRange(0, 5).Draw(rt, "long"); long > 0 {
			s = strings.Repeat("a", 60*long) + s // around the length limits
		}
		if got, want := isCIdentifier(s), len(validation.IsCIdentifier(s)) == 0; got != want {
			rt.Errorf("isCIdentifier(%q) = %v, apimachinery %v", s, got, want)
		}
		if got, want := isDNSLabel(s), len(validation.IsDNS1123Label(s)) == 0; got != want {
			rt.Errorf("isDNSLabel(%q) = %v, apimachinery %v", s, got, want)
		}
		if got, want := isDNSSubdomain(s), len(validation.IsDNS1123Subdomain(s)) == 0; got != want {
			rt.Errorf("isDNSSubdomain(%q) = %v, apimachinery %v", s, got, want)
		}
		for _, prefix := range []bool{false, true} {
			if got, want := nameIsDNSSubdomain(s, prefix), apivalidation.NameIsDNSSubdomain(s, prefix); !slices.Equal(got, want) {
				rt.Errorf("nameIsDNSSubdomain(%q, %v) = %q, apimachinery %q", s, prefix, got, want)
			}
		}
	})
}

// deviceOK never accepts a device that the full check rejects: devices are drawn around every rule it
// covers (names, limits, attribute values, quantities, counter consumption) and with the fields it leaves to
// the full check.
func TestPropDeviceOKImpliesValid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := drawDevice(rt)
		ok := deviceOK(&d, &checked{})
		errs := device(field.NewPath("device"), &d, false, Options{})
		if ok && len(errs) > 0 {
			rt.Fatalf("deviceOK accepts a device the full check rejects: %v\n%#v", errs, d)
		}
	})
}

// drawDevice draws a device that is mostly valid, each field wrong now and then, so that a device wrong
// in a single place is common.
func drawDevice(rt *rapid.T) resourceapi.Device {
	long := strings.Repeat("x", 65)
	// choose draws from valid, and from invalid one time in sixteen.
	choose := func(label string, valid, invalid []string) string {
		if rapid.IntRange(0, 15).Draw(rt, label+"Wrong") == 0 {
			return rapid.SampledFrom(invalid).Draw(rt, label)
		}
		return rapid.SampledFrom(valid).Draw(rt, label)
	}
	names := []string{"gpu-0", "mig-1g-10gb-0-3", strings.Repeat("a", 63)}
	badNames := []string{"", "GPU", "-a", "a.b", strings.Repeat("a", 64)}
	qnames := []string{"model", "gpu.example.com/model", "uuid", "example.com/" + strings.Repeat("m", 32)}
	badQNames := []string{"example.com/" + strings.Repeat("m", 33), strings.Repeat("m", 33), strings.Repeat("d", 64) + "/x",
		"bad-name", "a/b/c", "/x", "x/", "Example_com/x"}
	quantities := []string{"0", "1", "80Gi", "500m", "1e-3", "9e18"}
	badQuantities := []string{"-1", "1e-30", "1e30", "-500m"}
	strs := []string{"", "h100", strings.Repeat("s", 64)}
	versions := []string{"1.2.3", "1.2.3-rc.1+b", "0.0.0"}
	badVersions := []string{"1.2", "01.2.3", "v1.2.3", "1.2.3-" + long}
	maybe := func(label string) bool { return rapid.IntRange(0, 15).Draw(rt, label) == 0 }

	d := resourceapi.Device{Name: choose("name", names, badNames)}
	for range rapid.IntRange(0, 3).Draw(rt, "attributes") {
		if d.Attributes == nil {
			d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
		}
		// Usually one kind of value, sometimes none or two.
		kinds := []int{rapid.IntRange(0, 7).Draw(rt, "kind")}
		switch rapid.IntRange(0, 9).Draw(rt, "kinds") {
		case 0:
			kinds = nil
		case 1:
			kinds = append(kinds, rapid.IntRange(0, 7).Draw(rt, "kind2"))
		}
		var a resourceapi.DeviceAttribute
		for _, k := range kinds {
			switch k {
			case 0:
				a.BoolValue = ptr.To(true)
			case 1:
				a.IntValue = ptr.To(int64(3))
			case 2:
				a.StringValue = ptr.To(choose("stringValue", strs, []string{long}))
			case 3:
				a.VersionValue = ptr.To(choose("versionValue", versions, badVersions))
			case 4:
				a.BoolValues = make([]bool, rapid.IntRange(0, 3).Draw(rt, "nBools"))
			case 5:
				a.IntValues = make([]int64, rapid.IntRange(0, 50).Draw(rt, "nInts"))
			case 6:
				a.StringValues = rapid.SliceOfN(rapid.SampledFrom(append(strs, long)), 0, 3).Draw(rt, "stringValues")
			case 7:
				a.VersionValues = rapid.SliceOfN(rapid.SampledFrom(append(versions, badVersions...)), 0, 3).Draw(rt, "versionValues")
			}
		}
		d.Attributes[resourceapi.QualifiedName(choose("attribute", qnames, badQNames))] = a
	}
	if maybe("manyAttributes") {
		if d.Attributes == nil {
			d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
		}
		for i := range rapid.IntRange(28, 33).Draw(rt, "nAttributes") {
			d.Attributes[resourceapi.QualifiedName(fmt.Sprintf("a%d", i))] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(i))}
		}
	}
	for range rapid.IntRange(0, 2).Draw(rt, "capacities") {
		if d.Capacity == nil {
			d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
		}
		c := resourceapi.DeviceCapacity{Value: resource.MustParse(choose("capacity", quantities, badQuantities))}
		if maybe("requestPolicy") {
			c.RequestPolicy = &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("1"))}
		}
		d.Capacity[resourceapi.QualifiedName(choose("capacityName", qnames, badQNames))] = c
	}
	for range rapid.IntRange(0, 3).Draw(rt, "consumptions") {
		c := resourceapi.DeviceCounterConsumption{CounterSet: choose("counterSet", []string{"gpu-0", "gpu-1"}, []string{"", "Bad"})}
		for range rapid.IntRange(0, 2).Draw(rt, "counters") {
			if c.Counters == nil {
				c.Counters = map[string]resourceapi.Counter{}
			}
			c.Counters[choose("counter", []string{"memory", "sms"}, []string{"", "Bad_name"})] = resourceapi.Counter{Value: resource.MustParse(choose("counterValue", quantities, badQuantities))}
		}
		if maybe("manyCounters") {
			if c.Counters == nil {
				c.Counters = map[string]resourceapi.Counter{}
			}
			for i := range rapid.IntRange(30, 34).Draw(rt, "nCounters") {
				c.Counters[fmt.Sprintf("c%d", i)] = resourceapi.Counter{Value: resource.MustParse("1")}
			}
		}
		if maybe("groups") {
			c.CompatibilityGroups = rapid.SliceOfN(rapid.SampledFrom([]string{"g1", "g2", "g3", "g4", "g5", "g6", "g7", "g8", "g9", "", "G"}), 0, 10).Draw(rt, "groups")
		}
		d.ConsumesCounters = append(d.ConsumesCounters, c)
	}
	if maybe("taints") {
		d.Taints = []resourceapi.DeviceTaint{{Key: "example.com/t", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	}
	if maybe("binding") {
		d.BindingConditions = []string{"example.com/ready"}
	}
	if maybe("nodeName") {
		d.NodeName = ptr.To("node-0")
	}
	if maybe("allNodes") {
		d.AllNodes = ptr.To(true)
	}
	if maybe("multi") {
		d.AllowMultipleAllocations = ptr.To(rapid.Bool().Draw(rt, "allowMultiple"))
	}
	return d
}

// deviceOK accepts a device as MIG drivers publish it, and refuses it once any one rule is broken.
func TestDeviceOKRefusesEachBrokenRule(t *testing.T) {
	base := func() resourceapi.Device {
		return resourceapi.Device{
			Name: "gpu-0-mig-1g-10gb-0",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type":                        {StringValue: ptr.To("mig")},
				"gpu.nvidia.com/index":        {IntValue: ptr.To(int64(0))},
				"driverVersion":               {VersionValue: ptr.To("550.54.15")},
				"resource.kubernetes.io/pcie": {StringValues: []string{"0000:00:01.0"}},
				resourceapi.QualifiedName("example.com/" + strings.Repeat("i", 32)): {BoolValue: ptr.To(true)},
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("10Gi")}},
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{
				CounterSet:          "gpu-0-counters",
				Counters:            map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("10Gi")}, "memory-slice-0": {Value: resource.MustParse("1")}},
				CompatibilityGroups: []string{"a", "b"},
			}},
		}
	}
	if d := base(); !deviceOK(&d, &checked{}) {
		t.Fatalf("deviceOK refuses the valid device; full check: %v", device(field.NewPath("d"), &d, false, Options{}))
	}
	for name, breakIt := range map[string]func(d *resourceapi.Device){
		"device name not a DNS label": func(d *resourceapi.Device) { d.Name = "GPU_0" },
		"attribute name too long": func(d *resourceapi.Device) {
			d.Attributes[resourceapi.QualifiedName(strings.Repeat("a", 33))] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(1))}
		},
		"attribute id after domain too long": func(d *resourceapi.Device) {
			d.Attributes[resourceapi.QualifiedName("example.com/"+strings.Repeat("a", 33))] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(1))}
		},
		"attribute without a value": func(d *resourceapi.Device) { d.Attributes["empty"] = resourceapi.DeviceAttribute{} },
		"attribute with two values": func(d *resourceapi.Device) {
			d.Attributes["two"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(1)), BoolValue: ptr.To(true)}
		},
		"string too long": func(d *resourceapi.Device) {
			d.Attributes["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To(strings.Repeat("s", 65))}
		},
		"version not semver": func(d *resourceapi.Device) {
			d.Attributes["driverVersion"] = resourceapi.DeviceAttribute{VersionValue: ptr.To("550.54")}
		},
		"empty list": func(d *resourceapi.Device) {
			d.Attributes["resource.kubernetes.io/pcie"] = resourceapi.DeviceAttribute{StringValues: []string{}}
		},
		"list string too long": func(d *resourceapi.Device) {
			d.Attributes["resource.kubernetes.io/pcie"] = resourceapi.DeviceAttribute{StringValues: []string{strings.Repeat("s", 65)}}
		},
		"too many attribute values": func(d *resourceapi.Device) {
			d.Attributes["links"] = resourceapi.DeviceAttribute{IntValues: make([]int64, 48)}
		},
		"too many attributes and capacities": func(d *resourceapi.Device) {
			for i := range 28 {
				d.Capacity[resourceapi.QualifiedName(fmt.Sprintf("c%d", i))] = resourceapi.DeviceCapacity{Value: resource.MustParse("1")}
			}
		},
		"negative capacity": func(d *resourceapi.Device) {
			d.Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("-1")}
		},
		"unbounded capacity": func(d *resourceapi.Device) {
			d.Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("1e40")}
		},
		"bad capacity name": func(d *resourceapi.Device) {
			d.Capacity["bad-name"] = resourceapi.DeviceCapacity{Value: resource.MustParse("1")}
		},
		"request policy without multi": func(d *resourceapi.Device) {
			d.Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("1"), RequestPolicy: &resourceapi.CapacityRequestPolicy{}}
		},
		"taint without effect":                          func(d *resourceapi.Device) { d.Taints = []resourceapi.DeviceTaint{{Key: "example.com/t"}} },
		"node name without per-device selection":        func(d *resourceapi.Device) { d.NodeName = ptr.To("node-0") },
		"binding conditions without failure conditions": func(d *resourceapi.Device) { d.BindingConditions = []string{"example.com/ready"} },
		"node allocatable without mapping or overhead": func(d *resourceapi.Device) {
			d.NodeAllocatableResources = map[v1.ResourceName]resourceapi.NodeAllocatableResource{"cpu": {}}
		},
		"three counter consumptions": func(d *resourceapi.Device) {
			c := d.ConsumesCounters[0]
			d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{c, c, c}
			d.ConsumesCounters[1].CounterSet, d.ConsumesCounters[2].CounterSet = "x", "y"
		},
		"counter set twice":    func(d *resourceapi.Device) { d.ConsumesCounters = append(d.ConsumesCounters, d.ConsumesCounters[0]) },
		"bad counter set name": func(d *resourceapi.Device) { d.ConsumesCounters[0].CounterSet = "Bad" },
		"no counters":          func(d *resourceapi.Device) { d.ConsumesCounters[0].Counters = nil },
		"bad counter name":     func(d *resourceapi.Device) { d.ConsumesCounters[0].Counters["Bad_name"] = resourceapi.Counter{} },
		"negative counter": func(d *resourceapi.Device) {
			d.ConsumesCounters[0].Counters["memory"] = resourceapi.Counter{Value: resource.MustParse("-1")}
		},
		"too many counters": func(d *resourceapi.Device) {
			for i := range resourceapi.ResourceSliceMaxCountersPerDeviceCounterConsumption {
				d.ConsumesCounters[0].Counters[fmt.Sprintf("c%d", i)] = resourceapi.Counter{}
			}
		},
		"three compatibility groups":    func(d *resourceapi.Device) { d.ConsumesCounters[0].CompatibilityGroups = []string{"a", "b", "c"} },
		"duplicate compatibility group": func(d *resourceapi.Device) { d.ConsumesCounters[0].CompatibilityGroups = []string{"a", "a"} },
		"bad compatibility group":       func(d *resourceapi.Device) { d.ConsumesCounters[0].CompatibilityGroups = []string{"A"} },
	} {
		t.Run(name, func(t *testing.T) {
			d := base()
			breakIt(&d)
			if len(device(field.NewPath("d"), &d, false, Options{})) == 0 {
				t.Fatal("the full check accepts the broken device: the case tests nothing")
			}
			if deviceOK(&d, &checked{}) {
				t.Error("deviceOK accepts the broken device")
			}
		})
	}
}

// Validating slices whose devices share maps (as a snapshot's private copies share them), with a Memo
// across the slices, finds what validating copies that share nothing finds.
func TestPropMemoChangesNoVerdict(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pool := make([]resourceapi.Device, rapid.IntRange(1, 4).Draw(rt, "pool"))
		for i := range pool {
			pool[i] = drawDevice(rt)
		}
		var memo Memo
		for s := range rapid.IntRange(1, 4).Draw(rt, "slices") {
			slice := &resourceapi.ResourceSlice{}
			slice.Name = fmt.Sprintf("slice-%d", s)
			slice.Spec = resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To("node"),
				Pool: resourceapi.ResourcePool{Name: "pool", ResourceSliceCount: 1}}
			for i := range rapid.IntRange(1, 6).Draw(rt, "devices") {
				d := pool[rapid.IntRange(0, len(pool)-1).Draw(rt, "device")] // its maps are shared
				d.Name = fmt.Sprintf("dev-%d", i)
				slice.Spec.Devices = append(slice.Spec.Devices, d)
			}
			// The deep copy's devices share no maps: every map of it is checked.
			with, without := ResourceSlice(slice, Options{Memo: &memo}), ResourceSlice(slice.DeepCopy(), Options{})
			if fmt.Sprint(with) != fmt.Sprint(without) {
				rt.Fatalf("with shared maps and a Memo: %v\nwithout: %v", with, without)
			}
			for i := range slice.Spec.Devices {
				if errs := device(field.NewPath("device"), &slice.Spec.Devices[i], false, Options{}); len(errs) > 0 && len(with) == 0 {
					rt.Fatalf("device %d is invalid (%v), the slice passed", i, errs)
				}
			}
		}
	})
}

// A versionMemo remembers valid versions only, and no more than maxKnownVersions of them.
func TestVersionMemo(t *testing.T) {
	var m versionMemo
	if !m.valid("1.2.3") {
		t.Error("a valid version refused")
	}
	if _, ok := m.ok["1.2.3"]; !ok {
		t.Error("a valid version is not remembered")
	}
	for _, v := range []string{"01.2.3", "1.2", "v1.2.3", ""} {
		for try := range 2 { // the second time after the first may have remembered it
			if m.valid(v) {
				t.Errorf("invalid version %q accepted (try %d)", v, try+1)
			}
		}
		if _, ok := m.ok[v]; ok {
			t.Errorf("invalid version %q remembered", v)
		}
	}
	for i := range 3 * maxKnownVersions {
		if !m.valid(fmt.Sprintf("1.0.%d", i)) {
			t.Fatalf("1.0.%d refused", i)
		}
		if len(m.ok) > maxKnownVersions {
			t.Fatalf("%d versions remembered, at most %d", len(m.ok), maxKnownVersions)
		}
	}
}
