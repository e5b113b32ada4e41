package verify_test

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The fixture: node-a in zone a with two local GPUs (gpu-1 tainted), a partitionable GPU published as a full
// device and two halves drawing on one counter set, and a shareable NIC in a network-attached pool.

func node(name, zone string) *v1.Node {
	n := &v1.Node{}
	n.Name = name
	n.Labels = map[string]string{"zone": zone}
	return n
}

func str(s string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: ptr.To(s)}
}
func num(i int64) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{IntValue: ptr.To(i)}
}
func q(s string) resource.Quantity { return resource.MustParse(s) }
func sel(expr string) resourceapi.DeviceSelector {
	return resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}
}

func zoneSelector(zone string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
		Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{zone}}}}}}
}

func onNode(name string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{
		Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{name}}}}}}
}

func fixtureSlices() []*resourceapi.ResourceSlice {
	gpus := &resourceapi.ResourceSlice{}
	gpus.Name = "node-a-gpus"
	gpus.Spec = resourceapi.ResourceSliceSpec{
		Driver: "gpu.example.com", Pool: resourceapi.ResourcePool{Name: "node-a", Generation: 1, ResourceSliceCount: 1},
		NodeName: ptr.To("node-a"),
		Devices: []resourceapi.Device{
			{Name: "gpu-0", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": str("a100"), "numa": num(0)}},
			{Name: "gpu-1", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": str("h100"), "numa": num(1)},
				Taints: []resourceapi.DeviceTaint{{Key: "example.com/broken", Effect: resourceapi.DeviceTaintEffectNoSchedule}}},
		},
	}
	counters := &resourceapi.ResourceSlice{}
	counters.Name = "node-a-mig-counters"
	counters.Spec = resourceapi.ResourceSliceSpec{
		Driver: "gpu.example.com", Pool: resourceapi.ResourcePool{Name: "node-a-mig", Generation: 1, ResourceSliceCount: 2},
		NodeName:       ptr.To("node-a"),
		SharedCounters: []resourceapi.CounterSet{{Name: "gpu-2", Counters: map[string]resourceapi.Counter{"memory": {Value: q("40Gi")}}}},
	}
	part := func(name, mem string) resourceapi.Device {
		return resourceapi.Device{Name: name,
			Attributes:       map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": str("a100"), "numa": num(0)},
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-2", Counters: map[string]resourceapi.Counter{"memory": {Value: q(mem)}}}}}
	}
	mig := &resourceapi.ResourceSlice{}
	mig.Name = "node-a-mig-devices"
	mig.Spec = resourceapi.ResourceSliceSpec{
		Driver: "gpu.example.com", Pool: resourceapi.ResourcePool{Name: "node-a-mig", Generation: 1, ResourceSliceCount: 2},
		NodeName: ptr.To("node-a"),
		Devices:  []resourceapi.Device{part("mig-full", "40Gi"), part("mig-half-0", "20Gi"), part("mig-half-1", "20Gi")},
	}
	nics := &resourceapi.ResourceSlice{}
	nics.Name = "fabric"
	nics.Spec = resourceapi.ResourceSliceSpec{
		Driver: "nic.example.com", Pool: resourceapi.ResourcePool{Name: "fabric", Generation: 1, ResourceSliceCount: 1},
		NodeSelector: zoneSelector("a"),
		Devices: []resourceapi.Device{{Name: "nic-0", AllowMultipleAllocations: ptr.To(true),
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"bandwidth": {Value: q("100G"),
				RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(q("10G")),
					ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(q("10G")), Step: ptr.To(q("10G"))}}}}}},
	}
	return []*resourceapi.ResourceSlice{gpus, counters, mig, nics}
}

func classes() []*resourceapi.DeviceClass {
	gpu := &resourceapi.DeviceClass{}
	gpu.Name = "gpu"
	gpu.Spec.Selectors = []resourceapi.DeviceSelector{sel(`device.driver == "gpu.example.com"`)}
	nic := &resourceapi.DeviceClass{}
	nic.Name = "nic"
	nic.Spec.Selectors = []resourceapi.DeviceSelector{sel(`device.driver == "nic.example.com"`)}
	return []*resourceapi.DeviceClass{gpu, nic}
}

func claim(name string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{}
	c.Name, c.Namespace, c.UID = name, "default", types.UID("uid-"+name)
	c.Spec.Devices.Requests = requests
	return c
}

func exact(name, class string, count int64, selectors ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
	for _, s := range selectors {
		r.Exactly.Selectors = append(r.Exactly.Selectors, sel(s))
	}
	return r
}

func result(request, driver, pool, dev string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: request, Driver: driver, Pool: pool, Device: dev}
}

func gpu(request, dev string) resourceapi.DeviceRequestAllocationResult {
	return result(request, "gpu.example.com", "node-a", dev)
}

func mig(request, dev string) resourceapi.DeviceRequestAllocationResult {
	return result(request, "gpu.example.com", "node-a-mig", dev)
}

func local(results ...resourceapi.DeviceRequestAllocationResult) resourceapi.AllocationResult {
	return resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}, NodeSelector: onNode("node-a")}
}
