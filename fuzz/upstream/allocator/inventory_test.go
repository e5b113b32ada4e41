package allocator_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
	"github.com/dralloc/dralloc/inventory"
)

// gpuClasses are DeviceClasses as written for NVIDIA's driver.
func gpuClasses() []*resourceapi.DeviceClass {
	class := func(name, typ string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf(`device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == %q`, typ)}}}}}
	}
	return []*resourceapi.DeviceClass{class("gpu.nvidia.com", "gpu"), class("mig.nvidia.com", "mig")}
}

// TestDifferentialShippedProfiles runs the slices inventory publishes for
// each shipped DGX profile (NVIDIA's dynamic-MIG layout: counter sets with
// zero-valued counters, one slice per GPU, devices by name) through the
// upstream allocator: both must accept them and agree, device for device.
func TestDifferentialShippedProfiles(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}
	for _, name := range inventory.ProfileNames() {
		p, err := inventory.Profile(name)
		if err != nil {
			t.Fatal(err)
		}
		slices, err := p.Slices(node.Name, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, class, selector string
			count                 int64
		}{
			{"one whole GPU", "gpu.nvidia.com", "", 1},
			{"eight whole GPUs", "gpu.nvidia.com", "", 8},
			{"nine whole GPUs", "gpu.nvidia.com", "", 9},
			{"two MIG devices of at least 20 GiB", "mig.nvidia.com", `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0`, 2},
			{"six 1-slice MIG devices", "mig.nvidia.com", `device.attributes["gpu.nvidia.com"].profile.startsWith("1g.")`, 6},
			{"a whole GPU by its multiprocessors", "gpu.nvidia.com", `device.capacity["gpu.nvidia.com"].multiprocessors.compareTo(quantity("100")) >= 0`, 1},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claim-0", UID: "uid-claim-0"}}
				req := resourceapi.DeviceRequest{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: tc.class,
					AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: tc.count}}
				if tc.selector != "" {
					req.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: tc.selector}}}
				}
				c.Spec.Devices.Requests = []resourceapi.DeviceRequest{req}
				got, _ := compareWithin(t, &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node, Slices: slices, Classes: gpuClasses(),
					Claims: []*resourceapi.ResourceClaim{c}, Features: new(verify.AllFeatures())}, hangTimeout)
				// The A100 profile runs with MIG enabled, which an Ampere
				// GPU cannot leave without a reset: it has no whole GPUs.
				want := allocated
				if tc.count > 8 || (name == "dgxa100" && tc.class == "gpu.nvidia.com") {
					want = doesNotFit
				}
				if got != want {
					t.Errorf("outcome %s, want %s", got, want)
				}
			})
		}
	}
}

// TestDifferentialDynamicMIGShapes runs the dgxh100 profile in dynamic MIG (counter sets shared by a whole
// GPU and its MIG placements) with whole GPUs already allocated, asked for MIG devices, whole GPUs and a
// whole GPU else a MIG device (firstAvailable): both allocators must agree on feasibility and on the
// devices FirstFit takes.
func TestDifferentialDynamicMIGShapes(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}
	p, err := inventory.Profile("dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	slices, err := p.Slices(node.Name, 1)
	if err != nil {
		t.Fatal(err)
	}
	var wholeGPUs []resourceapi.DeviceRequestAllocationResult
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			if t := d.Attributes[inventory.AttrType].StringValue; t != nil && *t == "gpu" {
				wholeGPUs = append(wholeGPUs, resourceapi.DeviceRequestAllocationResult{Request: "held", Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name})
			}
		}
	}
	mig := func(name string, count int64) resourceapi.DeviceRequest {
		return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "mig.nvidia.com",
			AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count,
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`}}}}}
	}
	whole := func(name string, count int64) resourceapi.DeviceRequest {
		return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com",
			AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
	}
	wholeElseMIG := resourceapi.DeviceRequest{Name: "gpu", FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "whole", DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		{Name: "mig", DeviceClassName: "mig.nvidia.com", Selectors: mig("", 1).Exactly.Selectors, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
	}}
	for _, tc := range []struct {
		name    string
		held    int // whole GPUs allocated before the claim
		request resourceapi.DeviceRequest
		want    outcome
	}{
		{"one 1g.10gb on an empty node", 0, mig("mig", 1), allocated},
		{"two whole GPUs on an empty node", 0, whole("gpus", 2), allocated},
		{"a whole GPU else a 1g.10gb on an empty node", 0, wholeElseMIG, allocated},
		{"five whole GPUs with four in use", 4, whole("gpus", 5), doesNotFit},
		{"four whole GPUs with four in use", 4, whole("gpus", 4), allocated},
		// A free H100 has seven 1g.10gb placements but five decoders, and each 1g.10gb takes one.
		{"six 1g.10gb with seven GPUs in use", 7, mig("mig", 6), doesNotFit},
		{"five 1g.10gb with seven GPUs in use", 7, mig("mig", 5), allocated},
		{"a whole GPU else a 1g.10gb with every GPU in use", 8, wholeElseMIG, doesNotFit},
		{"a whole GPU else a 1g.10gb with seven GPUs in use", 7, wholeElseMIG, allocated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node, Slices: slices, Classes: gpuClasses(), Features: new(verify.AllFeatures())}
			if tc.held > 0 {
				held := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held", UID: "uid-held"}}
				held.Spec.Devices.Requests = []resourceapi.DeviceRequest{whole("held", int64(tc.held))}
				held.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: wholeGPUs[:tc.held]}}
				c.Allocated = []*resourceapi.ResourceClaim{held}
			}
			claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claim-0", UID: "uid-claim-0"}}
			claim.Spec.Devices.Requests = []resourceapi.DeviceRequest{tc.request}
			c.Claims = []*resourceapi.ResourceClaim{claim}
			if got, _ := compareWithin(t, c, hangTimeout); got != tc.want {
				t.Errorf("outcome %s, want %s", got, tc.want)
			}
		})
	}
}
