package inventory_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/inventory"
	"github.com/dralloc/dralloc/taints"
)

func validSlice() *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a-gpu"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   "gpu.example.com",
			NodeName: ptr.To("node-a"),
			Pool:     resourceapi.ResourcePool{Name: "node-a", Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{
				Name:       "gpu-0",
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: ptr.To("x")}},
				Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("1Gi")}},
			}},
		},
	}
}

func TestValidateSliceNamesTheField(t *testing.T) {
	manyDevices := func(n int, taint bool) func(*resourceapi.ResourceSlice) {
		return func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = nil
			for i := range n {
				d := resourceapi.Device{Name: fmt.Sprintf("d-%d", i)}
				if taint && i == 0 {
					d.Taints = []resourceapi.DeviceTaint{{Key: "k", Effect: resourceapi.DeviceTaintEffectNone}}
				}
				s.Spec.Devices = append(s.Spec.Devices, d)
			}
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*resourceapi.ResourceSlice)
		want string // "" means valid
	}{
		{"the valid slice is valid", func(*resourceapi.ResourceSlice) {}, ""},
		{"128 plain devices are allowed", manyDevices(128, false), ""},
		{"129 plain devices are too many", manyDevices(129, false), "spec.devices: Too many: 129: must have at most 128 items"},
		{"65 devices are too many when one has a taint", manyDevices(65, true), "spec.devices: Too many: 65: must have at most 64 items"},
		{"devices and counters in one slice", func(s *resourceapi.ResourceSlice) {
			s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "c", Counters: map[string]resourceapi.Counter{"a": {}}}}
		}, "spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed"},
		{"nine counter sets", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = nil
			for i := range 9 {
				s.Spec.SharedCounters = append(s.Spec.SharedCounters, resourceapi.CounterSet{Name: fmt.Sprintf("c%d", i), Counters: map[string]resourceapi.Counter{"a": {}}})
			}
		}, "spec.sharedCounters: Too many: 9: must have at most 8 items"},
		{"33 counters in a set", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = nil
			cs := resourceapi.CounterSet{Name: "c", Counters: map[string]resourceapi.Counter{}}
			for i := range 33 {
				cs.Counters[fmt.Sprintf("k%d", i)] = resourceapi.Counter{}
			}
			s.Spec.SharedCounters = []resourceapi.CounterSet{cs}
		}, "spec.sharedCounters[0].counters: Too many: 33"},
		{"counter name not a DNS label", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = nil
			s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "c", Counters: map[string]resourceapi.Counter{"copyEngines": {}}}}
		}, "spec.sharedCounters[0].counters: Invalid value: \"copyEngines\""},
		{"33 attributes and capacities", func(s *resourceapi.ResourceSlice) {
			for i := range 32 {
				s.Spec.Devices[0].Attributes[resourceapi.QualifiedName(fmt.Sprintf("a%d", i))] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(i))}
			}
		}, "spec.devices[0]: Invalid value: 34: the total number of attributes and capacities must not exceed 32"},
		{"version not strict semver", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["driverVersion"] = resourceapi.DeviceAttribute{VersionValue: ptr.To("580.95.05")}
		}, "spec.devices[0].attributes[driverVersion].version: Invalid value: \"580.95.05\""},
		{"attribute with two values", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["model"] = resourceapi.DeviceAttribute{StringValue: ptr.To("x"), IntValue: ptr.To(int64(1))}
		}, "spec.devices[0].attributes[model]: Invalid value: 2: exactly one value must be specified"},
		{"string longer than 64", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["model"] = resourceapi.DeviceAttribute{StringValue: ptr.To(strings.Repeat("x", 65))}
		}, "spec.devices[0].attributes[model].string: Too long"},
		{"attribute name not a C identifier", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["gpu.example.com/bad-name"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(1))}
		}, "spec.devices[0].attributes: Invalid value: \"bad-name\""},
		{"device name not a DNS label", func(s *resourceapi.ResourceSlice) { s.Spec.Devices[0].Name = "gpu-0-mig-1g.10gb-0-0" }, "spec.devices[0].name: Invalid value"},
		{"duplicate device names", func(s *resourceapi.ResourceSlice) { s.Spec.Devices = append(s.Spec.Devices, s.Spec.Devices[0]) }, "spec.devices[1]: Duplicate value: \"gpu-0\""},
		{"taint key not a label name", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "gpu lost", Effect: resourceapi.DeviceTaintEffectNoExecute}}
		}, "spec.devices[0].taints[0].key: Invalid value"},
		{"taint effect PreferNoSchedule", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "k", Effect: "PreferNoSchedule"}}
		}, "spec.devices[0].taints[0].effect: Unsupported value"},
		{"three counter consumptions", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "a"}, {CounterSet: "b"}, {CounterSet: "c"}}
		}, "spec.devices[0].consumesCounters: Too many: 3"},
		{"five binding conditions", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].BindingConditions = []string{"a", "b", "c", "d", "e"}
		}, "spec.devices[0].bindingConditions: Too many: 5"},
		{"a compatibility group twice", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "a", CompatibilityGroups: []string{"g", "g"}}}
		}, "spec.devices[0].consumesCounters[0].compatibilityGroups[1]: Duplicate value"},
		{"no node selection", func(s *resourceapi.ResourceSlice) { s.Spec.NodeName = nil }, "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"},
		{"two node selections", func(s *resourceapi.ResourceSlice) { s.Spec.AllNodes = ptr.To(true) }, "but multiple fields are set"},
		{"zero slice count", func(s *resourceapi.ResourceSlice) { s.Spec.Pool.ResourceSliceCount = 0 }, "spec.pool.resourceSliceCount: Invalid value: 0"},
		{"missing pool name", func(s *resourceapi.ResourceSlice) { s.Spec.Pool.Name = "" }, "spec.pool.name: Required value"},
		{"driver name with upper case is a valid CSI driver name", func(s *resourceapi.ResourceSlice) { s.Spec.Driver = "GPU.example.com" }, ""},
		{"driver name with an underscore", func(s *resourceapi.ResourceSlice) { s.Spec.Driver = "gpu_example.com" }, "spec.driver: Invalid value"},
		{"negative capacity", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("-1")}
		}, "spec.devices[0].capacity[memory].value: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validSlice()
			tc.edit(s)
			errs := inventory.ValidateSlice(s)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("unexpected errors: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("errors = %v, want one containing %q", got, tc.want)
			}
		})
	}
}

func TestValidateSliceDoesNotModifyTheSlice(t *testing.T) {
	s := validSlice()
	s.Spec.Devices[0].Name = "Bad.Name"
	before := marshal(t, s)
	inventory.ValidateSlice(s)
	if marshal(t, s) != before {
		t.Error("ValidateSlice modified its input")
	}
}

func TestValidatePoolChecksAcrossSlices(t *testing.T) {
	counters := func() *resourceapi.ResourceSlice {
		s := validSlice()
		s.Name = "counters"
		s.Spec.Devices = nil
		s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0-counter-set", Counters: map[string]resourceapi.Counter{
			"memory-slice-0": {Value: resource.MustParse("1")}}}}
		return s
	}
	consumer := func(set, counter, value string) *resourceapi.ResourceSlice {
		s := validSlice()
		s.Spec.Devices[0].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set,
			Counters: map[string]resourceapi.Counter{counter: {Value: resource.MustParse(value)}}}}
		return s
	}
	pool := func(ss ...*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
		for _, s := range ss {
			s.Spec.Pool.ResourceSliceCount = int64(len(ss))
		}
		return ss
	}
	for _, tc := range []struct {
		name   string
		slices []*resourceapi.ResourceSlice
		want   string
	}{
		{"counters in one slice, consumers in another", pool(counters(), consumer("gpu-0-counter-set", "memory-slice-0", "1")), ""},
		{"consuming an unknown counter set", pool(counters(), consumer("gpu-1-counter-set", "memory-slice-0", "1")),
			"slices[1].spec.devices[0].consumesCounters[0].counterSet: Not found: \"gpu-1-counter-set\""},
		{"consuming an unknown counter", pool(counters(), consumer("gpu-0-counter-set", "memory-slice-9", "1")),
			"slices[1].spec.devices[0].consumesCounters[0].counters[memory-slice-9]: Not found"},
		{"consuming more than the set has", pool(counters(), consumer("gpu-0-counter-set", "memory-slice-0", "2")),
			"exceeds the counter set's 1"},
		{"consuming an unbounded amount is refused before comparing", pool(counters(), consumer("gpu-0-counter-set", "memory-slice-0", "0E100000000")),
			"slices[1].spec.devices[0].consumesCounters[0].counters[memory-slice-0].value: Invalid value: \"<omitted>\": quantity out of bounds"},
		{"consumers of a pool without shared counters", pool(consumer("gpu-0-counter-set", "memory-slice-0", "1")),
			"slices[0].spec.devices[0].consumesCounters[0].counterSet: Not found"},
		{"wrong slice count", []*resourceapi.ResourceSlice{counters(), consumer("gpu-0-counter-set", "memory-slice-0", "1")},
			"slices[0].spec.pool.resourceSliceCount: Invalid value: 1: the pool has 2 slices"},
		{"a device name twice in the pool", pool(validSlice(), validSlice()), "slices[1].spec.devices[0].name: Invalid value: \"gpu-0\": duplicate device name in the pool"},
		{"generations differ", func() []*resourceapi.ResourceSlice {
			ss := pool(counters(), consumer("gpu-0-counter-set", "memory-slice-0", "1"))
			ss[1].Spec.Pool.Generation = 2
			return ss
		}(), "slices[1].spec.pool.generation: Invalid value: 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := inventory.ValidatePool(tc.slices).ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("unexpected errors: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("errors = %v, want one containing %q", got, tc.want)
			}
		})
	}
}

// inventory.ValidateTaint and taints.ValidateTaint restate one rule: they reject the same taints, with the
// same error types at the same fields (an empty key is a required value for both).
func TestValidateTaintAgreesWithTaints(t *testing.T) {
	p := field.NewPath("taints").Index(0)
	for _, tc := range []struct {
		name string
		t    resourceapi.DeviceTaint
	}{
		{"valid", resourceapi.DeviceTaint{Key: "example.com/t", Value: "v", Effect: resourceapi.DeviceTaintEffectNoSchedule}},
		{"empty key", resourceapi.DeviceTaint{Effect: resourceapi.DeviceTaintEffectNoSchedule}},
		{"key not a label name", resourceapi.DeviceTaint{Key: "a b", Effect: resourceapi.DeviceTaintEffectNone}},
		{"value not a label value", resourceapi.DeviceTaint{Key: "k", Value: "a b", Effect: resourceapi.DeviceTaintEffectNoExecute}},
		{"no effect", resourceapi.DeviceTaint{Key: "k"}},
		{"unknown effect", resourceapi.DeviceTaint{Key: "k", Effect: "PreferNoSchedule"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kinds := func(errs field.ErrorList) []string {
				var out []string
				for _, e := range errs {
					out = append(out, e.Field+" "+string(e.Type))
				}
				return out
			}
			got, want := kinds(inventory.ValidateTaint(tc.t, p)), kinds(taints.ValidateTaint(tc.t, p))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("inventory: %v, taints: %v", got, want)
			}
		})
	}
	if errs := inventory.ValidateTaint(resourceapi.DeviceTaint{Effect: resourceapi.DeviceTaintEffectNone}, p); len(errs) != 1 || errs[0].Type != field.ErrorTypeRequired {
		t.Errorf("empty key: %v, want one required value", errs)
	}
}
