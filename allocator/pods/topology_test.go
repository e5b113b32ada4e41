package pods_test

import (
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/fuzz"
)

// A pod's GPU claim and NIC claim (from two templates, the GPU's first) are allocated together in one
// call, so a snapshot's Topology preference places them as one: on a DGX-like node whose only free NIC
// sits on the PCIe root of gpu-6 and gpu-7, the GPU goes to that root, whatever the placement each claim
// would get on its own (gpu-0 is the first GPU of the smallest free domains: both NUMA nodes and all
// roots are alike, so on its own the GPU claim gets gpu-0).
func TestPlaceLinksAPodsClaimsUnderTopology(t *testing.T) {
	c := fuzz.TopologyClusterGen(fuzz.TopologyOptions{}).Example(0)
	for _, s := range c.Slices {
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].AllowMultipleAllocations = nil
		}
		if s.Spec.Driver == fuzz.NICDriver {
			s.Spec.Devices = s.Spec.Devices[7:] // nic-7, on root 03 (gpu-6, gpu-7), NUMA node 1
			s.Spec.Devices[0].Attributes[fuzz.AttributeNUMANode] = resourceapi.DeviceAttribute{IntValue: ptr(int64(1))}
		}
	}
	snap := allocator.NewSnapshot(allocator.Options{Topology: &allocator.Topology{}})
	must(t, snap.AddOrUpdateNode(node(c.Node.Name, nil)))
	for _, s := range c.Slices {
		must(t, snap.AddOrUpdateSlice(s))
	}
	for _, cl := range c.Classes {
		must(t, snap.AddOrUpdateClass(cl))
	}
	cluster := pods.New(snap, pods.Options{NameSuffix: fixedSuffixes()})
	for _, class := range []string{"gpu", "nic"} {
		must(t, cluster.AddOrUpdateTemplate(&resourceapi.ResourceClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: class},
			Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
				Requests: []resourceapi.DeviceRequest{{Name: class, Exactly: &resourceapi.ExactDeviceRequest{
					DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}}}},
		}))
	}
	alone, err := cluster.Place(context.Background(), pod("alone", "gpu=template:gpu"))
	must(t, err)
	pl, err := cluster.Place(context.Background(), pod("train", "gpu=template:gpu", "nic=template:nic"))
	must(t, err)
	var got []string
	for _, pc := range pl.Claims {
		for _, r := range pc.Claim.Status.Allocation.Devices.Results {
			got = append(got, r.Device)
		}
	}
	if alone := alone.Claims[0].Claim.Status.Allocation.Devices.Results[0].Device; alone != "gpu-0" {
		t.Errorf("the GPU claim alone gets %s, want gpu-0", alone)
	}
	if want := "gpu-6 nic-7"; strings.Join(got, " ") != want {
		t.Errorf("the pod's claims get %q, want %q", strings.Join(got, " "), want)
	}
}
