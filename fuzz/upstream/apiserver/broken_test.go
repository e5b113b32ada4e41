package apiserver_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// brokenCase is one object sent to the API server and the verdict Kubernetes gives it, read from
// k8s.io/kubernetes pkg/apis/resource/validation (v1.37): field is the path the rejection names, "" when the
// object is accepted after all.
type brokenCase struct {
	name  string
	obj   runtime.Object
	field string
}

const (
	driver = "gpu.example.com"
	pool   = "node-a"
)

func validSlice() *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
		Driver:   driver,
		Pool:     resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1},
		NodeName: ptr.To(pool),
		Devices: []resourceapi.Device{{
			Name: "gpu-0",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"model":         {StringValue: ptr.To("H100")},
				"driverVersion": {VersionValue: ptr.To("580.95.5")},
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": {Value: resource.MustParse("80Gi")},
			},
		}},
	}}
}

func validCounterSlice() *resourceapi.ResourceSlice {
	s := validSlice()
	s.Spec.Devices = nil
	s.Spec.SharedCounters = []resourceapi.CounterSet{{
		Name:     "gpu-0-counters",
		Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("80Gi")}},
	}}
	return s
}

func validPartitionSlice() *resourceapi.ResourceSlice {
	s := validSlice()
	s.Spec.Devices[0].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{
		CounterSet: "gpu-0-counters",
		Counters:   map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("40Gi")}},
	}}
	return s
}

func sliceWith(base func() *resourceapi.ResourceSlice, edit func(*resourceapi.ResourceSlice)) *resourceapi.ResourceSlice {
	s := base()
	edit(s)
	return s
}

func devices(n int, edit func(i int, d *resourceapi.Device)) []resourceapi.Device {
	out := make([]resourceapi.Device, n)
	for i := range out {
		out[i].Name = fmt.Sprintf("gpu-%d", i)
		if edit != nil {
			edit(i, &out[i])
		}
	}
	return out
}

func counters(n int, value string) map[string]resourceapi.Counter {
	out := map[string]resourceapi.Counter{}
	for i := range n {
		out[fmt.Sprintf("c%d", i)] = resourceapi.Counter{Value: resource.MustParse(value)}
	}
	return out
}

func taint(key string, effect resourceapi.DeviceTaintEffect) resourceapi.DeviceTaint {
	return resourceapi.DeviceTaint{Key: key, Effect: effect}
}

var brokenSlices = []brokenCase{
	{"129 devices", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.Devices = devices(129, nil) }), "spec.devices"},
	{"128 devices is the limit", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.Devices = devices(128, nil) }), ""},
	{"65 devices when one has a taint", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices = devices(65, func(i int, d *resourceapi.Device) {
			if i == 0 {
				d.Taints = []resourceapi.DeviceTaint{taint("example.com/broken", resourceapi.DeviceTaintEffectNoSchedule)}
			}
		})
	}), "spec.devices"},
	{"65 devices when one consumes counters", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices = devices(65, func(i int, d *resourceapi.Device) {
			if i == 0 {
				d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "set", Counters: counters(1, "1")}}
			}
		})
	}), "spec.devices"},
	{"duplicate device names", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices = append(s.Spec.Devices, *s.Spec.Devices[0].DeepCopy())
	}), "spec.devices[1]"},
	{"device name not a DNS label", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.Devices[0].Name = "GPU_0" }), "spec.devices[0].name"},
	{"slice name not a DNS subdomain", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Name = "Slice_A" }), "metadata.name"},
	// Driver names are checked as CSI driver names: case-insensitively, with a warning for upper case.
	{"driver name with upper case", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.Driver = "GPU.example.com" }), ""},
	{"driver name with an underscore", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.Driver = "gpu_example.com" }), "spec.driver"},
	{"pool name not a DNS subdomain", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.Pool.Name = "Pool_A" }), "spec.pool.name"},
	{"resourceSliceCount 0", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.Pool.ResourceSliceCount = 0 }), "spec.pool.resourceSliceCount"},
	{"negative generation", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.Pool.Generation = -1 }), "spec.pool.generation"},
	{"no node selection", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.NodeName = nil }), "spec"},
	{"nodeName and allNodes", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.AllNodes = ptr.To(true) }), "spec"},
	{"empty nodeName", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) { s.Spec.NodeName = ptr.To("") }), "spec.nodeName"},
	{"node selector with two terms", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.NodeName = nil
		term := corev1NodeSelectorTerm("zone", "a")
		s.Spec.NodeSelector = nodeSelector(term, term)
	}), "spec.nodeSelector.nodeSelectorTerms"},
	{"device nodeName without perDeviceNodeSelection", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].NodeName = ptr.To(pool)
	}), "spec.devices[0]"},
	{"devices and sharedCounters in one slice", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.SharedCounters = validCounterSlice().Spec.SharedCounters
	}), "spec"},
	{"33 attributes and capacities", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		for i := range 31 {
			s.Spec.Devices[0].Attributes[resourceapi.QualifiedName(fmt.Sprintf("a%d", i))] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(i))}
		}
	}), "spec.devices[0]"},
	{"attribute with two values", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Attributes["model"] = resourceapi.DeviceAttribute{StringValue: ptr.To("H100"), IntValue: ptr.To(int64(1))}
	}), "spec.devices[0].attributes[model]"},
	{"attribute without a value", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Attributes["model"] = resourceapi.DeviceAttribute{}
	}), "spec.devices[0].attributes[model]"},
	{"version attribute not semver", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Attributes["driverVersion"] = resourceapi.DeviceAttribute{VersionValue: ptr.To("580.95.05")}
	}), "spec.devices[0].attributes[driverVersion].version"},
	{"string attribute of 65 characters", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Attributes["model"] = resourceapi.DeviceAttribute{StringValue: ptr.To(fmt.Sprintf("%065d", 0))}
	}), "spec.devices[0].attributes[model].string"},
	// Kubernetes does not check names with more than one slash (a TODO in validateQualifiedName).
	{"attribute name with two slashes", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Attributes["a.com/b.com/model"] = resourceapi.DeviceAttribute{StringValue: ptr.To("x")}
	}), ""},
	{"attribute domain with an underscore", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Attributes["gpu_example.com/model"] = resourceapi.DeviceAttribute{StringValue: ptr.To("x")}
	}), "spec.devices[0].attributes"},
	{"attribute name of 33 characters", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Attributes[resourceapi.QualifiedName(fmt.Sprintf("a%032d", 0))] = resourceapi.DeviceAttribute{StringValue: ptr.To("x")}
	}), "spec.devices[0].attributes"},
	{"capacity 1E100000000", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("1E100000000")}
	}), ""},
	{"request policy on a device that is not shareable", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("80Gi"),
			RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("1Gi"))}}
	}), "spec.devices[0].capacity[memory].requestPolicy"},
	{"negative capacity", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("-1")}
	}), ""},
	{"binding conditions without failure conditions", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].BindingConditions = []string{"example.com/attached"}
	}), "spec.devices[0].bindingFailureConditions"},
	{"binding and failure conditions overlap", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].BindingConditions = []string{"example.com/attached"}
		s.Spec.Devices[0].BindingFailureConditions = []string{"example.com/attached"}
	}), "spec.devices[0].bindingFailureConditions[0]"},
	{"binding condition not a label name", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].BindingConditions = []string{"attached?"}
		s.Spec.Devices[0].BindingFailureConditions = []string{"example.com/failed"}
	}), "spec.devices[0].bindingConditions[0]"},
	{"taint with an unknown effect", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{taint("example.com/broken", "Evict")}
	}), "spec.devices[0].taints[0].effect"},
	{"taint key not a label name", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{taint("example.com/broken key", resourceapi.DeviceTaintEffectNoSchedule)}
	}), "spec.devices[0].taints[0].key"},
	{"17 taints", sliceWith(validSlice, func(s *resourceapi.ResourceSlice) {
		for i := range 17 {
			s.Spec.Devices[0].Taints = append(s.Spec.Devices[0].Taints, taint(fmt.Sprintf("example.com/t%d", i), resourceapi.DeviceTaintEffectNone))
		}
	}), "spec.devices[0].taints"},
	{"duplicate counter set names", sliceWith(validCounterSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.SharedCounters = append(s.Spec.SharedCounters, *s.Spec.SharedCounters[0].DeepCopy())
	}), "spec.sharedCounters[1]"},
	{"9 counter sets", sliceWith(validCounterSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.SharedCounters = nil
		for i := range 9 {
			s.Spec.SharedCounters = append(s.Spec.SharedCounters, resourceapi.CounterSet{Name: fmt.Sprintf("set-%d", i), Counters: counters(1, "1")})
		}
	}), "spec.sharedCounters"},
	{"counter set without counters", sliceWith(validCounterSlice, func(s *resourceapi.ResourceSlice) { s.Spec.SharedCounters[0].Counters = nil }), "spec.sharedCounters[0].counters"},
	{"33 counters in a set", sliceWith(validCounterSlice, func(s *resourceapi.ResourceSlice) { s.Spec.SharedCounters[0].Counters = counters(33, "1") }), "spec.sharedCounters[0].counters"},
	{"counter set name not a DNS label", sliceWith(validCounterSlice, func(s *resourceapi.ResourceSlice) { s.Spec.SharedCounters[0].Name = "Set_0" }), "spec.sharedCounters[0].name"},
	{"counter name not a DNS label", sliceWith(validCounterSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.SharedCounters[0].Counters = map[string]resourceapi.Counter{"Memory_A": {Value: resource.MustParse("1")}}
	}), "spec.sharedCounters[0].counters"},
	// Kubernetes accepts any quantity a counter parses to ("any parsed quantity is valid").
	{"negative counter", sliceWith(validCounterSlice, func(s *resourceapi.ResourceSlice) { s.Spec.SharedCounters[0].Counters = counters(1, "-1") }), ""},
	{"counter 1E100000000", sliceWith(validCounterSlice, func(s *resourceapi.ResourceSlice) { s.Spec.SharedCounters[0].Counters = counters(1, "1E100000000") }), ""},
	{"counter 0E100000000", sliceWith(validCounterSlice, func(s *resourceapi.ResourceSlice) { s.Spec.SharedCounters[0].Counters = counters(1, "0E100000000") }), ""},
	{"device consumes one counter set twice", sliceWith(validPartitionSlice, func(s *resourceapi.ResourceSlice) {
		d := &s.Spec.Devices[0]
		d.ConsumesCounters = append(d.ConsumesCounters, *d.ConsumesCounters[0].DeepCopy())
	}), "spec.devices[0].consumesCounters[1]"},
	{"three counter consumptions", sliceWith(validPartitionSlice, func(s *resourceapi.ResourceSlice) {
		d := &s.Spec.Devices[0]
		for _, set := range []string{"a", "b"} {
			d.ConsumesCounters = append(d.ConsumesCounters, resourceapi.DeviceCounterConsumption{CounterSet: set, Counters: counters(1, "1")})
		}
	}), "spec.devices[0].consumesCounters"},
	{"counter consumption without counters", sliceWith(validPartitionSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].ConsumesCounters[0].Counters = nil
	}), "spec.devices[0].consumesCounters[0].counters"},
	{"33 counters in one consumption", sliceWith(validPartitionSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].ConsumesCounters[0].Counters = counters(33, "1")
	}), "spec.devices[0].consumesCounters[0].counters"},
	{"consumed counter 1E100000000", sliceWith(validPartitionSlice, func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices[0].ConsumesCounters[0].Counters = counters(1, "1E100000000")
	}), ""},
}

func corev1NodeSelectorTerm(key, value string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
		Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value},
	}}}
}

func nodeSelector(terms ...corev1.NodeSelectorTerm) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: terms}
}

func validClaim() *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: "gpu.example.com",
			AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
			Count:           1,
			Selectors:       []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}},
		}}},
	}}}
}

func claimWith(edit func(*resourceapi.ResourceClaim)) *resourceapi.ResourceClaim {
	c := validClaim()
	edit(c)
	return c
}

func exactly(c *resourceapi.ResourceClaim) *resourceapi.ExactDeviceRequest {
	return c.Spec.Devices.Requests[0].Exactly
}

func selectors(n int) []resourceapi.DeviceSelector {
	out := make([]resourceapi.DeviceSelector, n)
	for i := range out {
		out[i].CEL = &resourceapi.CELDeviceSelector{Expression: "true"}
	}
	return out
}

func subRequests(names ...string) []resourceapi.DeviceSubRequest {
	var out []resourceapi.DeviceSubRequest
	for _, n := range names {
		out = append(out, resourceapi.DeviceSubRequest{Name: n, DeviceClassName: "gpu.example.com",
			AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1})
	}
	return out
}

var brokenClaims = []brokenCase{
	{"count -1", claimWith(func(c *resourceapi.ResourceClaim) { exactly(c).Count = -1 }), "spec.devices.requests[0].exactly.count"},
	{"count 0 is defaulted to 1", claimWith(func(c *resourceapi.ResourceClaim) { exactly(c).Count = 0 }), ""},
	{"count 2 with allocationMode All", claimWith(func(c *resourceapi.ResourceClaim) {
		exactly(c).AllocationMode, exactly(c).Count = resourceapi.DeviceAllocationModeAll, 2
	}), "spec.devices.requests[0].exactly.count"},
	{"unknown allocationMode", claimWith(func(c *resourceapi.ResourceClaim) { exactly(c).AllocationMode = "Some" }), "spec.devices.requests[0].exactly.allocationMode"},
	{"no device class", claimWith(func(c *resourceapi.ResourceClaim) { exactly(c).DeviceClassName = "" }), "spec.devices.requests[0].exactly.deviceClassName"},
	{"duplicate request names", claimWith(func(c *resourceapi.ResourceClaim) {
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, *c.Spec.Devices.Requests[0].DeepCopy())
	}), "spec.devices.requests[1]"},
	{"request name not a DNS label", claimWith(func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[0].Name = "GPU_0" }), "spec.devices.requests[0].name"},
	{"33 requests", claimWith(func(c *resourceapi.ResourceClaim) {
		r := c.Spec.Devices.Requests[0]
		c.Spec.Devices.Requests = nil
		for i := range 33 {
			r := *r.DeepCopy()
			r.Name = fmt.Sprintf("gpu-%d", i)
			c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, r)
		}
	}), "spec.devices.requests"},
	{"selector that does not compile", claimWith(func(c *resourceapi.ResourceClaim) {
		exactly(c).Selectors[0].CEL.Expression = `device.driver ==`
	}), "spec.devices.requests[0].exactly.selectors[0].cel.expression"},
	{"selector that is not a bool", claimWith(func(c *resourceapi.ResourceClaim) {
		exactly(c).Selectors[0].CEL.Expression = `device.driver`
	}), "spec.devices.requests[0].exactly.selectors[0].cel.expression"},
	{"selector on an unknown variable", claimWith(func(c *resourceapi.ResourceClaim) {
		exactly(c).Selectors[0].CEL.Expression = `node.name == "a"`
	}), "spec.devices.requests[0].exactly.selectors[0].cel.expression"},
	{"33 selectors", claimWith(func(c *resourceapi.ResourceClaim) { exactly(c).Selectors = selectors(33) }), "spec.devices.requests[0].exactly.selectors"},
	{"exactly and firstAvailable", claimWith(func(c *resourceapi.ResourceClaim) {
		c.Spec.Devices.Requests[0].FirstAvailable = subRequests("a")
	}), "spec.devices.requests[0]"},
	{"neither exactly nor firstAvailable", claimWith(func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly = nil }), "spec.devices.requests[0]"},
	{"duplicate subrequest names", claimWith(func(c *resourceapi.ResourceClaim) {
		c.Spec.Devices.Requests[0].Exactly = nil
		c.Spec.Devices.Requests[0].FirstAvailable = subRequests("a", "a")
	}), "spec.devices.requests[0].firstAvailable[1]"},
	{"subrequest count -1", claimWith(func(c *resourceapi.ResourceClaim) {
		c.Spec.Devices.Requests[0].Exactly = nil
		c.Spec.Devices.Requests[0].FirstAvailable = subRequests("a")
		c.Spec.Devices.Requests[0].FirstAvailable[0].Count = -1
	}), "spec.devices.requests[0].firstAvailable[0].count"},
	{"constraint on an unknown request", claimWith(func(c *resourceapi.ResourceClaim) {
		c.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{Requests: []string{"nic"}, MatchAttribute: ptr.To(resourceapi.FullyQualifiedName("gpu.example.com/numa"))}}
	}), "spec.devices.constraints[0].requests[0]"},
	{"constraint attribute without a domain", claimWith(func(c *resourceapi.ResourceClaim) {
		c.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName("numa"))}}
	}), "spec.devices.constraints[0].matchAttribute"},
	{"toleration with an unknown operator", claimWith(func(c *resourceapi.ResourceClaim) {
		exactly(c).Tolerations = []resourceapi.DeviceToleration{{Key: "example.com/broken", Operator: "In"}}
	}), "spec.devices.requests[0].exactly.tolerations[0].operator"},
	{"Exists toleration with a value", claimWith(func(c *resourceapi.ResourceClaim) {
		exactly(c).Tolerations = []resourceapi.DeviceToleration{{Key: "example.com/broken", Operator: resourceapi.DeviceTolerationOpExists, Value: "x"}}
	}), "spec.devices.requests[0].exactly.tolerations[0].value"},
	{"toleration with an unknown effect", claimWith(func(c *resourceapi.ResourceClaim) {
		exactly(c).Tolerations = []resourceapi.DeviceToleration{{Key: "example.com/broken", Operator: resourceapi.DeviceTolerationOpExists, Effect: "Evict"}}
	}), "spec.devices.requests[0].exactly.tolerations[0].effect"},
	{"config for an unknown request", claimWith(func(c *resourceapi.ResourceClaim) {
		c.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{Requests: []string{"nic"}, DeviceConfiguration: opaque(driver, `{}`)}}
	}), "spec.devices.config[0].requests[0]"},
	{"capacity request 1E100000000", claimWith(func(c *resourceapi.ResourceClaim) {
		exactly(c).Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("1E100000000")}}
	}), ""},
	{"capacity request 0E100000000", claimWith(func(c *resourceapi.ResourceClaim) {
		exactly(c).Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("0E100000000")}}
	}), ""},
}

func opaque(driver, params string) resourceapi.DeviceConfiguration {
	return resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(params)}}}
}

func validClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}},
	}}
}

func classWith(edit func(*resourceapi.DeviceClass)) *resourceapi.DeviceClass {
	c := validClass()
	edit(c)
	return c
}

var brokenClasses = []brokenCase{
	{"class name with upper case", classWith(func(c *resourceapi.DeviceClass) { c.Name = "GPU" }), "metadata.name"},
	{"selector that does not compile", classWith(func(c *resourceapi.DeviceClass) { c.Spec.Selectors[0].CEL.Expression = `device.driver ==` }), "spec.selectors[0].cel.expression"},
	{"selector without CEL", classWith(func(c *resourceapi.DeviceClass) { c.Spec.Selectors[0].CEL = nil }), "spec.selectors[0].cel"},
	{"33 selectors", classWith(func(c *resourceapi.DeviceClass) { c.Spec.Selectors = selectors(33) }), "spec.selectors"},
	{"config without opaque", classWith(func(c *resourceapi.DeviceClass) {
		c.Spec.Config = []resourceapi.DeviceClassConfiguration{{}}
	}), "spec.config[0].opaque"},
	{"opaque config driver with upper case", classWith(func(c *resourceapi.DeviceClass) {
		c.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: opaque("GPU.example.com", `{}`)}}
	}), ""},
	{"opaque config driver with an underscore", classWith(func(c *resourceapi.DeviceClass) {
		c.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: opaque("gpu_example.com", `{}`)}}
	}), "spec.config[0].opaque.driver"},
	{"opaque parameters not a JSON object", classWith(func(c *resourceapi.DeviceClass) {
		c.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: opaque(driver, `[1]`)}}
	}), "spec.config[0].opaque.parameters"},
	{"extended resource name without a domain", classWith(func(c *resourceapi.DeviceClass) {
		c.Spec.ExtendedResourceName = ptr.To("gpu")
	}), "spec.extendedResourceName"},
}

func validRule() *resourceapi.DeviceTaintRule {
	return &resourceapi.DeviceTaintRule{Spec: resourceapi.DeviceTaintRuleSpec{
		DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(driver), Pool: ptr.To(pool), Device: ptr.To("gpu-0")},
		Taint:          taint("example.com/broken", resourceapi.DeviceTaintEffectNoSchedule),
	}}
}

func ruleWith(edit func(*resourceapi.DeviceTaintRule)) *resourceapi.DeviceTaintRule {
	r := validRule()
	edit(r)
	return r
}

var brokenRules = []brokenCase{
	{"unknown effect", ruleWith(func(r *resourceapi.DeviceTaintRule) { r.Spec.Taint.Effect = "Evict" }), "spec.taint.effect"},
	{"no effect", ruleWith(func(r *resourceapi.DeviceTaintRule) { r.Spec.Taint.Effect = "" }), "spec.taint.effect"},
	{"taint key not a label name", ruleWith(func(r *resourceapi.DeviceTaintRule) { r.Spec.Taint.Key = "broken key" }), "spec.taint.key"},
	{"taint value not a label value", ruleWith(func(r *resourceapi.DeviceTaintRule) { r.Spec.Taint.Value = "not a value" }), "spec.taint.value"},
	{"selector driver with upper case", ruleWith(func(r *resourceapi.DeviceTaintRule) { r.Spec.DeviceSelector.Driver = ptr.To("GPU.example.com") }), ""},
	{"selector driver with an underscore", ruleWith(func(r *resourceapi.DeviceTaintRule) { r.Spec.DeviceSelector.Driver = ptr.To("gpu_example.com") }), "spec.deviceSelector.driver"},
	{"selector pool not a DNS subdomain", ruleWith(func(r *resourceapi.DeviceTaintRule) { r.Spec.DeviceSelector.Pool = ptr.To("Pool_A") }), "spec.deviceSelector.pool"},
	{"selector device not a DNS label", ruleWith(func(r *resourceapi.DeviceTaintRule) { r.Spec.DeviceSelector.Device = ptr.To("GPU_0") }), "spec.deviceSelector.device"},
	{"effect None", ruleWith(func(r *resourceapi.DeviceTaintRule) { r.Spec.Taint.Effect = resourceapi.DeviceTaintEffectNone }), ""},
}
