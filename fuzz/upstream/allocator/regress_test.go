package allocator_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// Minimal cases of disagreements the generated comparison found, kept as fixed regression cases.

func nicCluster(gates verify.Features) *fuzz.Cluster {
	n := &v1.Node{}
	n.Name = "node-0"
	slice := &resourceapi.ResourceSlice{}
	slice.Name = "fabric"
	slice.Spec = resourceapi.ResourceSliceSpec{Driver: fuzz.NICDriver, AllNodes: ptr.To(true),
		Pool: resourceapi.ResourcePool{Name: "fabric", Generation: 1, ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "nic-0", AllowMultipleAllocations: ptr.To(true),
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"bandwidth": {Value: resource.MustParse("100G"),
				RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("10G"))}}}}}}
	nic := &resourceapi.DeviceClass{}
	nic.Name = fuzz.ClassNIC
	nic.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "nic.example.com"`}}}
	held := &resourceapi.ResourceClaim{}
	held.Name, held.Namespace = "allocated-0", "default"
	held.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fuzz.ClassNIC, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
	held.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "req-0", Driver: fuzz.NICDriver, Pool: "fabric", Device: "nic-0", ShareID: ptr.To(types.UID("7f6e4c1a-0000-4000-8000-000000000001")),
		ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"bandwidth": resource.MustParse("10G")}}}}}
	pending := &resourceapi.ResourceClaim{}
	pending.Name, pending.Namespace = "claim-0", "default"
	pending.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fuzz.ClassNIC, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
	return &fuzz.Cluster{Nodes: []*v1.Node{n}, Node: n, Slices: []*resourceapi.ResourceSlice{slice}, Classes: []*resourceapi.DeviceClass{nic},
		Allocated: []*resourceapi.ResourceClaim{held}, Claims: []*resourceapi.ResourceClaim{pending}, Features: &gates}
}

// allWithConstraint: a claim asks for all NICs (or else all GPUs) under a matchAttribute constraint that NICs cannot meet (a fatal
// error upstream, because a device of an All request cannot be added), and a later claim asks for a GPU where
// there is none.
func allWithConstraint() *fuzz.Cluster {
	c := nicCluster(verify.AllFeatures())
	c.Allocated = nil
	c.Slices[0].Spec.Devices[0].AllowMultipleAllocations = nil
	gpu := &resourceapi.DeviceClass{}
	gpu.Name = fuzz.ClassGPU
	gpu.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}}
	c.Classes = append(c.Classes, gpu)
	all := c.Claims[0]
	all.Spec.Devices.Requests[0] = resourceapi.DeviceRequest{Name: "req-0", FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "sub-0", DeviceClassName: fuzz.ClassNIC, AllocationMode: resourceapi.DeviceAllocationModeAll},
		{Name: "sub-1", DeviceClassName: fuzz.ClassGPU, AllocationMode: resourceapi.DeviceAllocationModeAll},
	}}
	model := resourceapi.FullyQualifiedName("gpu.example.com/model")
	all.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &model}}
	second := &resourceapi.ResourceClaim{}
	second.Name, second.Namespace = "claim-1", "default"
	second.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fuzz.ClassGPU, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
	c.Claims = append(c.Claims, second)
	return c
}

// celErrorFirst: the first claim's selector fails at runtime on a GPU (no NIC attributes), the second claim asks
// for a NIC where there is none. Upstream evaluates the first claim first and stops with the CEL error.
func celErrorFirst() *fuzz.Cluster {
	c := allWithConstraint()
	gpus := &resourceapi.ResourceSlice{}
	gpus.Name = "node-0-gpu"
	gpus.Spec = resourceapi.ResourceSliceSpec{Driver: fuzz.GPUDriver, NodeName: ptr.To("node-0"),
		Pool:    resourceapi.ResourcePool{Name: "node-0-gpu", Generation: 1, ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "gpu-0"}}}
	c.Slices = []*resourceapi.ResourceSlice{gpus}
	anyClass := &resourceapi.DeviceClass{}
	anyClass.Name = fuzz.ClassAny
	c.Classes = append(c.Classes, anyClass)
	c.Claims[0].Spec.Devices.Constraints = nil
	c.Claims[0].Spec.Devices.Requests[0] = resourceapi.DeviceRequest{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: fuzz.ClassAny, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["nic.example.com"].speed >= 100`}}}}}
	c.Claims[1].Spec.Devices.Requests[0].Exactly.DeviceClassName = fuzz.ClassNIC
	return c
}

// celErrorInLaterAlternative: a request's first alternative takes the node's only GPU, its second has a selector
// that fails at runtime on it. Upstream tries alternatives in order and stops at the first that serves: alone,
// the claim fits without the second being evaluated; followed by a claim for a NIC where there is none, the
// search comes back to the second alternative and stops with its CEL error.
func celErrorInLaterAlternative(laterClaim bool) *fuzz.Cluster {
	c := celErrorFirst()
	failing := c.Claims[0].Spec.Devices.Requests[0].Exactly
	c.Claims[0].Spec.Devices.Requests[0] = resourceapi.DeviceRequest{Name: "req-0", FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "sub-0", DeviceClassName: fuzz.ClassAny, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		{Name: "sub-1", DeviceClassName: fuzz.ClassAny, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1, Selectors: failing.Selectors},
	}}
	if !laterClaim {
		c.Claims = c.Claims[:1]
	}
	return c
}

// twinsBeforeAll: a claim takes one of two identical NICs, a later claim asks for all NICs under a
// distinctAttribute constraint that NICs, lacking the attribute, break. With the first NIC taken the All
// request stops, silently, at that NIC in use; with the second taken it reaches the first and breaks the
// constraint, a fatal error. So the two NICs are not interchangeable for the first claim: upstream tries
// the second and stops with the error.
func twinsBeforeAll() *fuzz.Cluster {
	c := nicCluster(verify.AllFeatures())
	c.Allocated = nil
	c.Slices[0].Spec.Devices = []resourceapi.Device{{Name: "nic-0"}, {Name: "nic-1"}}
	all := &resourceapi.ResourceClaim{}
	all.Name, all.Namespace = "claim-1", "default"
	all.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fuzz.ClassNIC, AllocationMode: resourceapi.DeviceAllocationModeAll}}}
	numa := resourceapi.FullyQualifiedName("gpu.example.com/numa")
	all.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: &numa}}
	c.Claims = append(c.Claims, all)
	return c
}

// stableOrderDependent: only the GA gates (Kubernetes' stable variant, which visits pools in Go map
// order) and a request for all devices of two pools under matchAttribute: the device of pool a is held
// by another claim, the device of pool b lacks the attribute. Visiting a first, the request stops at the
// held device (does not fit); visiting b first, it breaks the constraint (a fatal error).
func stableOrderDependent() *fuzz.Cluster {
	gates := verify.Features{DRAAdminAccess: true, DRAPrioritizedList: true, DRADeviceTaints: true, DRAPartitionableDevices: true}
	n := &v1.Node{}
	n.Name = "node-0"
	pool := func(name string, dev resourceapi.Device) *resourceapi.ResourceSlice {
		s := &resourceapi.ResourceSlice{}
		s.Name = name
		s.Spec = resourceapi.ResourceSliceSpec{Driver: fuzz.GPUDriver, NodeName: ptr.To("node-0"),
			Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1}, Devices: []resourceapi.Device{dev}}
		return s
	}
	model := "a100"
	a := pool("a", resourceapi.Device{Name: "gpu-0", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: &model}}})
	b := pool("b", resourceapi.Device{Name: "gpu-0"})
	anyClass := &resourceapi.DeviceClass{}
	anyClass.Name = fuzz.ClassAny
	held := &resourceapi.ResourceClaim{}
	held.Name, held.Namespace = "allocated-0", "default"
	held.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fuzz.ClassAny, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
	held.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "req-0", Driver: fuzz.GPUDriver, Pool: "a", Device: "gpu-0"}}}}
	all := &resourceapi.ResourceClaim{}
	all.Name, all.Namespace = "claim-0", "default"
	all.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fuzz.ClassAny, AllocationMode: resourceapi.DeviceAllocationModeAll}}}
	attr := resourceapi.FullyQualifiedName(fuzz.GPUDriver + "/model")
	all.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &attr}}
	return &fuzz.Cluster{Nodes: []*v1.Node{n}, Node: n, Slices: []*resourceapi.ResourceSlice{a, b}, Classes: []*resourceapi.DeviceClass{anyClass},
		Allocated: []*resourceapi.ResourceClaim{held}, Claims: []*resourceapi.ResourceClaim{all}, Features: &gates}
}

// TestStableVariantOutcomeDependsOnPoolOrder: why compare looks for another answer of the stable variant
// (stableAnswer) before it reports a disagreement. Upstream answers both "does not fit" and a fatal
// error on the same objects, depending on the order of its slices; dralloc always answers as for pools
// in sorted order, which visits pool a first: does not fit.
func TestStableVariantOutcomeDependsOnPoolOrder(t *testing.T) {
	c := stableOrderDependent()
	if !stableVariant(c.Gates()) {
		t.Fatal("the gates do not select the stable variant")
	}
	ctx := t.Context()
	for _, want := range []outcome{doesNotFit, fatal} {
		if _, ok := stableAnswer(ctx, c, want, hangTimeout); !ok {
			t.Errorf("upstream never answers %s", want)
		}
	}
	if got := runDralloc(ctx, c); got.outcome != doesNotFit {
		t.Errorf("dralloc: %s (%v), want does not fit", got.outcome, got.err)
	}
	// Whichever order upstream's first run visits, the comparison finds dralloc's outcome among its answers.
	for range 20 {
		compareWithin(t, c, hangTimeout)
	}
}

func TestDifferentialRegressions(t *testing.T) {
	gateOff := verify.AllFeatures()
	gateOff.DRAConsumableCapacity = false
	for _, tc := range []struct {
		name    string
		cluster *fuzz.Cluster
		want    outcome // what upstream answers, when the case is about it; empty: any
	}{
		// D1: kube-scheduler counts a share as a share only while DRAConsumableCapacity is on; with the gate off
		// the device is held exclusively, so it is not allocated again.
		{"a share in the state holds the device exclusively while DRAConsumableCapacity is off", nicCluster(gateOff), ""},
		{"a share in the state leaves room for another share", nicCluster(verify.AllFeatures()), ""},
		// D2: upstream meets the fatal constraint error of the All request before it finds that the later claim
		// has no candidate.
		{"an All request that breaks a constraint is fatal even when a later claim cannot fit", allWithConstraint(), ""},
		{"a CEL runtime error in an earlier claim is fatal even when a later claim cannot fit", celErrorFirst(), ""},
		// Counting the last request's alternatives stops at the first one with enough candidates.
		{"a CEL runtime error in an alternative after one that serves is not reached", celErrorInLaterAlternative(false), allocated},
		{"a CEL runtime error in an alternative is reached when a later claim cannot fit", celErrorInLaterAlternative(true), fatal},
		// D3: twins are not interchangeable for a choice before an All request (found in CI, 2026-12-02).
		{"a device taken before an All request is not skipped as a twin of one that failed", twinsBeforeAll(), fatal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := compareWithin(t, tc.cluster, hangTimeout); tc.want != "" && got != tc.want {
				t.Errorf("upstream: %s, want %s", got, tc.want)
			}
		})
	}
}
