package validation_test

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/allocator/validation"
)

func validSlice() *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   "gpu.example.com",
			Pool:     resourceapi.ResourcePool{Name: "node-1", Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr("node-1"),
			Devices: []resourceapi.Device{{
				Name: "gpu-0",
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"model":                   {StringValue: ptr("A100")},
					"gpu.example.com/driver":  {VersionValue: ptr("550.54.15")},
					"index":                   {IntValue: ptr(int64(0))},
					"gpu.example.com/healthy": {BoolValue: ptr(true)},
				},
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: q("80Gi")}},
			}},
		},
	}
}

func sharedDevice(policy *resourceapi.CapacityRequestPolicy) resourceapi.Device {
	return resourceapi.Device{Name: "shared-0", AllowMultipleAllocations: ptr(true),
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: q("40Gi"), RequestPolicy: policy}}}
}

func rangePolicy(def, lo, hi, step string) *resourceapi.CapacityRequestPolicy {
	r := &resourceapi.CapacityRequestPolicyRange{Min: qp(lo)}
	if hi != "" {
		r.Max = qp(hi)
	}
	if step != "" {
		r.Step = qp(step)
	}
	return &resourceapi.CapacityRequestPolicy{Default: qp(def), ValidRange: r}
}

func devicesN(n int, mod func(*resourceapi.Device)) []resourceapi.Device {
	out := make([]resourceapi.Device, n)
	for i := range out {
		out[i] = resourceapi.Device{Name: "dev-" + strings.Repeat("x", 0) + itoa(i)}
		if mod != nil {
			mod(&out[i])
		}
	}
	return out
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func TestResourceSlice(t *testing.T) {
	dev := "spec.devices[0]"
	tests := []struct {
		name   string
		mutate func(s *resourceapi.ResourceSlice)
		path   string
		typ    field.ErrorType
	}{
		{"a valid slice passes", func(*resourceapi.ResourceSlice) {}, "", ""},
		{"the name must be a DNS subdomain", func(s *resourceapi.ResourceSlice) { s.Name = "Node_1" }, "metadata.name", field.ErrorTypeInvalid},
		{"the name is required", func(s *resourceapi.ResourceSlice) { s.Name = "" }, "metadata.name", field.ErrorTypeRequired},
		{"the driver is required", func(s *resourceapi.ResourceSlice) { s.Spec.Driver = "" }, "spec.driver", field.ErrorTypeRequired},
		{"the driver is at most 63 characters", func(s *resourceapi.ResourceSlice) { s.Spec.Driver = strings.Repeat("a", 64) + ".com" }, "spec.driver", field.ErrorTypeTooLong},
		{"the driver must be a DNS subdomain", func(s *resourceapi.ResourceSlice) { s.Spec.Driver = "gpu_example" }, "spec.driver", field.ErrorTypeInvalid},
		{"the driver may have upper case letters", func(s *resourceapi.ResourceSlice) { s.Spec.Driver = "GPU.example.com" }, "", ""},
		{"the pool name is required", func(s *resourceapi.ResourceSlice) { s.Spec.Pool.Name = "" }, "spec.pool.name", field.ErrorTypeRequired},
		{"pool name segments are DNS subdomains", func(s *resourceapi.ResourceSlice) { s.Spec.Pool.Name = "rack-1//node" }, "spec.pool.name", field.ErrorTypeInvalid},
		{"the slice count must be positive", func(s *resourceapi.ResourceSlice) { s.Spec.Pool.ResourceSliceCount = 0 }, "spec.pool.resourceSliceCount", field.ErrorTypeInvalid},
		{"the generation must not be negative", func(s *resourceapi.ResourceSlice) { s.Spec.Pool.Generation = -1 }, "spec.pool.generation", field.ErrorTypeInvalid},
		{"one node selection is required", func(s *resourceapi.ResourceSlice) { s.Spec.NodeName = nil }, "spec", field.ErrorTypeRequired},
		{"two node selections are invalid", func(s *resourceapi.ResourceSlice) { s.Spec.AllNodes = ptr(true) }, "spec", field.ErrorTypeInvalid},
		{"nodeName must not be empty", func(s *resourceapi.ResourceSlice) { s.Spec.NodeName = ptr("") }, "spec.nodeName", field.ErrorTypeInvalid},
		{"nodeName must be a node name", func(s *resourceapi.ResourceSlice) { s.Spec.NodeName = ptr("Node 1") }, "spec.nodeName", field.ErrorTypeInvalid},
		{"allNodes false is invalid", func(s *resourceapi.ResourceSlice) { s.Spec.NodeName = nil; s.Spec.AllNodes = ptr(false) }, "spec.allNodes", field.ErrorTypeInvalid},
		{"perDeviceNodeSelection false is invalid", func(s *resourceapi.ResourceSlice) { s.Spec.PerDeviceNodeSelection = ptr(false) }, "spec.perDeviceNodeSelection", field.ErrorTypeInvalid},
		{"a node selector needs exactly one term", func(s *resourceapi.ResourceSlice) {
			s.Spec.NodeName = nil
			term := v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpExists}}}
			s.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{term, term}}
		}, "spec.nodeSelector.nodeSelectorTerms", field.ErrorTypeInvalid},
		{"a node selector without terms is invalid", func(s *resourceapi.ResourceSlice) {
			s.Spec.NodeName = nil
			s.Spec.NodeSelector = &v1.NodeSelector{}
		}, "spec.nodeSelector.nodeSelectorTerms", field.ErrorTypeRequired},
		{"a node selector operator must be known", func(s *resourceapi.ResourceSlice) {
			s.Spec.NodeName = nil
			s.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: "Near"}}}}}
		}, "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator", field.ErrorTypeNotSupported},
		{"a node selector key must be a label name", func(s *resourceapi.ResourceSlice) {
			s.Spec.NodeName = nil
			s.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "bad key", Operator: v1.NodeSelectorOpExists}}}}}
		}, "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].key", field.ErrorTypeInvalid},
		{"a node selector value must be a label value", func(s *resourceapi.ResourceSlice) {
			s.Spec.NodeName = nil
			s.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a b"}}}}}}
		}, "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]", field.ErrorTypeInvalid},
		{"In needs values", func(s *resourceapi.ResourceSlice) {
			s.Spec.NodeName = nil
			s.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn}}}}}
		}, "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values", field.ErrorTypeRequired},
		{"a field selector may only match metadata.name", func(s *resourceapi.ResourceSlice) {
			s.Spec.NodeName = nil
			s.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "spec.unschedulable", Operator: v1.NodeSelectorOpIn, Values: []string{"true"}}}}}}
		}, "spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].key", field.ErrorTypeInvalid},
		{"devices and shared counters are not in one slice", func(s *resourceapi.ResourceSlice) {
			s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: q("80Gi")}}}}
		}, "spec", field.ErrorTypeInvalid},
		{"at most 128 devices", func(s *resourceapi.ResourceSlice) { s.Spec.Devices = devicesN(129, nil) }, "spec.devices", field.ErrorTypeTooMany},
		{"128 devices are allowed", func(s *resourceapi.ResourceSlice) { s.Spec.Devices = devicesN(128, nil) }, "", ""},
		{"at most 64 devices when a device has taints", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = devicesN(65, func(d *resourceapi.Device) {
				d.Taints = []resourceapi.DeviceTaint{{Key: "example.com/unhealthy", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
			})
		}, "spec.devices", field.ErrorTypeTooMany},
		{"at most 64 devices when a device has list attributes", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = devicesN(65, func(d *resourceapi.Device) {
				d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"links": {IntValues: []int64{1}}}
			})
		}, "spec.devices", field.ErrorTypeTooMany},
		{"device names are unique", func(s *resourceapi.ResourceSlice) { s.Spec.Devices = append(s.Spec.Devices, s.Spec.Devices[0]) }, "spec.devices[1]", field.ErrorTypeDuplicate},
		{"device names are DNS labels", func(s *resourceapi.ResourceSlice) { s.Spec.Devices[0].Name = "gpu.0" }, dev + ".name", field.ErrorTypeInvalid},
		{"at most 32 attributes and capacities", func(s *resourceapi.ResourceSlice) {
			for i := range 30 {
				s.Spec.Devices[0].Attributes[resourceapi.QualifiedName("a"+itoa(i))] = resourceapi.DeviceAttribute{IntValue: ptr(int64(i))}
			}
		}, dev, field.ErrorTypeInvalid},
		{"at most 48 attribute values", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["links"] = resourceapi.DeviceAttribute{IntValues: make([]int64, 48)}
		}, dev, field.ErrorTypeInvalid},
		{"an attribute has exactly one value", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["index"] = resourceapi.DeviceAttribute{IntValue: ptr(int64(1)), BoolValue: ptr(true)}
		}, dev + ".attributes[index]", field.ErrorTypeInvalid},
		{"an attribute without value is invalid", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["index"] = resourceapi.DeviceAttribute{}
		}, dev + ".attributes[index]", field.ErrorTypeInvalid},
		{"an empty list value is invalid", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["links"] = resourceapi.DeviceAttribute{IntValues: []int64{}}
		}, dev + ".attributes[links].ints", field.ErrorTypeInvalid},
		{"a version must be semver", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["gpu.example.com/driver"] = resourceapi.DeviceAttribute{VersionValue: ptr("550.54")}
		}, dev + ".attributes[gpu.example.com/driver].version", field.ErrorTypeInvalid},
		{"a version must not have leading zeros", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["gpu.example.com/driver"] = resourceapi.DeviceAttribute{VersionValue: ptr("1.02.3")}
		}, dev + ".attributes[gpu.example.com/driver].version", field.ErrorTypeInvalid},
		{"a version may have a pre-release and build", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["gpu.example.com/driver"] = resourceapi.DeviceAttribute{VersionValue: ptr("1.2.3-rc.1+build.5")}
		}, "", ""},
		{"a string is at most 64 bytes", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["model"] = resourceapi.DeviceAttribute{StringValue: ptr(strings.Repeat("x", 65))}
		}, dev + ".attributes[model].string", field.ErrorTypeTooLong},
		{"a list string is at most 64 bytes", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["models"] = resourceapi.DeviceAttribute{StringValues: []string{"a", strings.Repeat("x", 65)}}
		}, dev + ".attributes[models].strings[1]", field.ErrorTypeTooLong},
		{"an attribute name is a C identifier", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["bad-name"] = resourceapi.DeviceAttribute{IntValue: ptr(int64(1))}
		}, dev + ".attributes", field.ErrorTypeInvalid},
		{"an attribute name is at most 32 characters", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes[resourceapi.QualifiedName(strings.Repeat("a", 33))] = resourceapi.DeviceAttribute{IntValue: ptr(int64(1))}
		}, dev + ".attributes", field.ErrorTypeTooLong},
		{"an attribute domain is a DNS subdomain", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["bad_domain/name"] = resourceapi.DeviceAttribute{IntValue: ptr(int64(1))}
		}, dev + ".attributes", field.ErrorTypeInvalid},
		{"an attribute name has at most one slash", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Attributes["a.com/b/c"] = resourceapi.DeviceAttribute{IntValue: ptr(int64(1))}
		}, dev + ".attributes", field.ErrorTypeInvalid},
		{"a capacity value must not be negative", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: q("-1")}
		}, dev + ".capacity[memory].value", field.ErrorTypeInvalid},
		{"a capacity value must be bounded", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: q("1E100000000")}
		}, dev + ".capacity[memory].value", field.ErrorTypeInvalid},
		{"a zero with a huge exponent is unbounded", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: q("0E100000000")}
		}, dev + ".capacity[memory].value", field.ErrorTypeInvalid},
		{"a request policy needs allowMultipleAllocations", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: q("80Gi"), RequestPolicy: rangePolicy("1Gi", "1Gi", "", "")}
		}, dev + ".capacity[memory].requestPolicy", field.ErrorTypeForbidden},
		{"a valid range policy passes", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(rangePolicy("4Gi", "4Gi", "40Gi", "4Gi"))}
		}, "", ""},
		{"a range needs min", func(s *resourceapi.ResourceSlice) {
			p := rangePolicy("4Gi", "4Gi", "", "")
			p.ValidRange.Min = nil
			s.Spec.Devices = []resourceapi.Device{sharedDevice(p)}
		}, dev + ".capacity[memory].requestPolicy.validRange.min", field.ErrorTypeRequired},
		{"a policy needs a default", func(s *resourceapi.ResourceSlice) {
			p := rangePolicy("4Gi", "4Gi", "", "")
			p.Default = nil
			s.Spec.Devices = []resourceapi.Device{sharedDevice(p)}
		}, dev + ".capacity[memory].requestPolicy.default", field.ErrorTypeRequired},
		{"min must not exceed max", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(rangePolicy("8Gi", "8Gi", "4Gi", ""))}
		}, dev + ".capacity[memory].requestPolicy.validRange.max", field.ErrorTypeInvalid},
		{"max must not exceed the capacity", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(rangePolicy("4Gi", "4Gi", "80Gi", ""))}
		}, dev + ".capacity[memory].requestPolicy.validRange.max", field.ErrorTypeInvalid},
		{"the default must not be below min", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(rangePolicy("1Gi", "4Gi", "", ""))}
		}, dev + ".capacity[memory].requestPolicy.validRange.default", field.ErrorTypeInvalid},
		{"the default must not be above max", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(rangePolicy("20Gi", "4Gi", "8Gi", ""))}
		}, dev + ".capacity[memory].requestPolicy.validRange.default", field.ErrorTypeInvalid},
		{"step 0 is invalid", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(rangePolicy("4Gi", "4Gi", "", "0"))}
		}, dev + ".capacity[memory].requestPolicy.validRange.step", field.ErrorTypeInvalid},
		{"the default must be on the step grid", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(rangePolicy("5Gi", "4Gi", "", "4Gi"))}
		}, dev + ".capacity[memory].requestPolicy.validRange.step", field.ErrorTypeInvalid},
		{"an unbounded step is refused before arithmetic", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(rangePolicy("4Gi", "4Gi", "", "1E100000000"))}
		}, dev + ".capacity[memory].requestPolicy.validRange.step", field.ErrorTypeInvalid},
		{"validValues and validRange are exclusive", func(s *resourceapi.ResourceSlice) {
			p := rangePolicy("4Gi", "4Gi", "", "")
			p.ValidValues = []resource.Quantity{q("4Gi")}
			s.Spec.Devices = []resourceapi.Device{sharedDevice(p)}
		}, dev + ".capacity[memory].requestPolicy", field.ErrorTypeForbidden},
		{"validValues must be sorted", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(&resourceapi.CapacityRequestPolicy{Default: qp("4Gi"), ValidValues: []resource.Quantity{q("8Gi"), q("4Gi")}})}
		}, dev + ".capacity[memory].requestPolicy.validValues[1]", field.ErrorTypeInvalid},
		{"validValues must be unique", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(&resourceapi.CapacityRequestPolicy{Default: qp("4Gi"), ValidValues: []resource.Quantity{q("4Gi"), q("4096Mi")}})}
		}, dev + ".capacity[memory].requestPolicy.validValues[1]", field.ErrorTypeDuplicate},
		{"the default must be one of validValues", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(&resourceapi.CapacityRequestPolicy{Default: qp("2Gi"), ValidValues: []resource.Quantity{q("4Gi"), q("8Gi")}})}
		}, dev + ".capacity[memory].requestPolicy.validValues", field.ErrorTypeInvalid},
		{"validValues must not exceed the capacity", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = []resourceapi.Device{sharedDevice(&resourceapi.CapacityRequestPolicy{Default: qp("4Gi"), ValidValues: []resource.Quantity{q("4Gi"), q("80Gi")}})}
		}, dev + ".capacity[memory].requestPolicy.validValues[1]", field.ErrorTypeInvalid},
		{"at most 16 taints", func(s *resourceapi.ResourceSlice) {
			for range 17 {
				s.Spec.Devices[0].Taints = append(s.Spec.Devices[0].Taints, resourceapi.DeviceTaint{Key: "example.com/t", Effect: resourceapi.DeviceTaintEffectNoSchedule})
			}
		}, dev + ".taints", field.ErrorTypeTooMany},
		{"a taint needs a key", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		}, dev + ".taints[0].key", field.ErrorTypeRequired},
		{"a taint key is a label name", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "bad key", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		}, dev + ".taints[0].key", field.ErrorTypeInvalid},
		{"a taint effect must be known", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "example.com/t", Effect: "PreferNoSchedule"}}
		}, dev + ".taints[0].effect", field.ErrorTypeNotSupported},
		{"a taint needs an effect", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "example.com/t"}}
		}, dev + ".taints[0].effect", field.ErrorTypeRequired},
		{"at most 2 counter consumptions", func(s *resourceapi.ResourceSlice) {
			c := map[string]resourceapi.Counter{"memory": {Value: q("1Gi")}}
			s.Spec.Devices[0].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "a", Counters: c}, {CounterSet: "b", Counters: c}, {CounterSet: "c", Counters: c}}
		}, dev + ".consumesCounters", field.ErrorTypeTooMany},
		{"counter sets consumed are unique", func(s *resourceapi.ResourceSlice) {
			c := map[string]resourceapi.Counter{"memory": {Value: q("1Gi")}}
			s.Spec.Devices[0].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "a", Counters: c}, {CounterSet: "a", Counters: c}}
		}, dev + ".consumesCounters[1]", field.ErrorTypeDuplicate},
		{"a consumption needs counters", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "a"}}
		}, dev + ".consumesCounters[0].counters", field.ErrorTypeRequired},
		{"a consumed counter must not be negative", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "a", Counters: map[string]resourceapi.Counter{"memory": {Value: q("-1Gi")}}}}
		}, dev + ".consumesCounters[0].counters[memory].value", field.ErrorTypeInvalid},
		{"a consumed counter must be bounded", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "a", Counters: map[string]resourceapi.Counter{"memory": {Value: q("1E100000000")}}}}
		}, dev + ".consumesCounters[0].counters[memory].value", field.ErrorTypeInvalid},
		{"node selection per device needs perDeviceNodeSelection", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].NodeName = ptr("node-1")
		}, dev, field.ErrorTypeInvalid},
		{"perDeviceNodeSelection needs a selection on every device", func(s *resourceapi.ResourceSlice) {
			s.Spec.NodeName = nil
			s.Spec.PerDeviceNodeSelection = ptr(true)
		}, dev, field.ErrorTypeRequired},
		{"perDeviceNodeSelection with one selection per device passes", func(s *resourceapi.ResourceSlice) {
			s.Spec.NodeName = nil
			s.Spec.PerDeviceNodeSelection = ptr(true)
			s.Spec.Devices[0].AllNodes = ptr(true)
		}, "", ""},
		{"binding conditions need failure conditions", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices[0].BindingConditions = []string{"example.com/ready"}
		}, dev + ".bindingFailureConditions", field.ErrorTypeInvalid},
		{"at most 8 counter sets", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = nil
			for i := range 9 {
				s.Spec.SharedCounters = append(s.Spec.SharedCounters, resourceapi.CounterSet{Name: "gpu-" + itoa(i), Counters: map[string]resourceapi.Counter{"memory": {Value: q("80Gi")}}})
			}
		}, "spec.sharedCounters", field.ErrorTypeTooMany},
		{"at most 32 counters per set", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = nil
			c := map[string]resourceapi.Counter{}
			for i := range 33 {
				c["c"+itoa(i)] = resourceapi.Counter{Value: q("1")}
			}
			s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: c}}
		}, "spec.sharedCounters[0].counters", field.ErrorTypeTooMany},
		{"a shared counter must not be negative", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = nil
			s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: q("-80Gi")}}}}
		}, "spec.sharedCounters[0].counters[memory].value", field.ErrorTypeInvalid},
		{"a counter set needs counters", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = nil
			s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0"}}
		}, "spec.sharedCounters[0].counters", field.ErrorTypeRequired},
		{"counter set names are unique", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = nil
			c := map[string]resourceapi.Counter{"memory": {Value: q("80Gi")}}
			s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: c}, {Name: "gpu-0", Counters: c}}
		}, "spec.sharedCounters[1]", field.ErrorTypeDuplicate},
		{"counter names are DNS labels", func(s *resourceapi.ResourceSlice) {
			s.Spec.Devices = nil
			s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"Memory": {Value: q("80Gi")}}}}
		}, "spec.sharedCounters[0].counters", field.ErrorTypeInvalid},
		{"skipping NodePrepareResources needs NodeUnprepareResources", func(s *resourceapi.ResourceSlice) {
			s.Spec.SkipNodeOperations = []resourceapi.SkipNodeOperation{resourceapi.SkipNodeOperationNodePrepareResources}
		}, "spec.skipNodeOperations", field.ErrorTypeInvalid},
		{"partitionTypeAttribute needs devices that consume counters", func(s *resourceapi.ResourceSlice) {
			s.Spec.PartitionTypeAttribute = ptr(resourceapi.FullyQualifiedName("gpu.example.com/profile"))
		}, "spec.partitionTypeAttribute", field.ErrorTypeInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validSlice()
			tc.mutate(s)
			before := s.DeepCopy()
			errs := validation.ResourceSlice(s, validation.Options{})
			wantField(t, errs, tc.path, tc.typ)
			if !equalSlices(before, s) {
				t.Error("the slice was modified")
			}
		})
	}
}

func equalSlices(a, b *resourceapi.ResourceSlice) bool { return reflect.DeepEqual(a, b) }
