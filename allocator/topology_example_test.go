package allocator_test

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// topologyNode publishes, on node-a, eight GPUs in two NUMA nodes (four each) on four PCIe roots (two
// GPUs each) and one RDMA NIC on the PCIe root of gpu-6 and gpu-7, with the standard attributes.
func topologyNode() []*resourceapi.ResourceSlice {
	node := "node-a"
	slice := func(driver string) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver},
			Spec: resourceapi.ResourceSliceSpec{
				Driver: driver, NodeName: &node,
				Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			},
		}
	}
	device := func(name string, numa int64, root string) resourceapi.Device {
		return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			resourceapi.QualifiedName(allocator.AttributeNUMANode): {IntValue: &numa},
			resourceapi.QualifiedName(allocator.AttributePCIeRoot): {StringValue: &root},
		}}
	}
	gpus, nics := slice("gpu.example.com"), slice("nic.example.com")
	for g := range 8 {
		gpus.Spec.Devices = append(gpus.Spec.Devices, device(fmt.Sprintf("gpu-%d", g), int64(g/4), fmt.Sprintf("pci0000:%02x", g/2)))
	}
	nics.Spec.Devices = append(nics.Spec.Devices, device("nic-0", 1, "pci0000:03"))
	return []*resourceapi.ResourceSlice{gpus, nics}
}

// ExampleTopology asks for an RDMA NIC and two GPUs in one claim, once in upstream order and once with
// the topology preference: FirstFit takes the first two GPUs, on NUMA node 0, far from the NIC; with
// Topology the GPUs share the NIC's PCIe root. Then, with gpu-0 in use, a claim for four GPUs spans both
// NUMA nodes in upstream order, and the preference takes the four GPUs of NUMA node 1. Last, a pod with
// a GPU claim and a NIC claim, allocated together in one call, the GPU first: the preference judges the
// whole placement, so the GPU goes to the root of the node's only NIC (a GPU placed first on its own
// would take gpu-1, the last free GPU of the smallest free domain, on the other NUMA node).
func ExampleTopology() {
	classes := []*resourceapi.DeviceClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "nic"}, Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "nic.example.com"`}}}}},
	}
	request := func(name, class string, count int64) resourceapi.DeviceRequest {
		return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count,
		}}
	}
	claim := func(name string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}},
		}
	}
	rdma := claim("rdma", request("nic", "nic", 1), request("gpus", "gpu", 2))
	four := claim("four", request("gpus", "gpu", 4))
	running := claim("running", request("gpus", "gpu", 1))
	running.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpus", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-0"}},
	}}
	podGPU, podNIC := claim("pod-gpu", request("gpu", "gpu", 1)), claim("pod-nic", request("nic", "nic", 1))
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	for _, opts := range []allocator.Options{{}, {Topology: &allocator.Topology{}}} {
		snap := allocator.NewSnapshot(opts)
		for _, s := range topologyNode() {
			if err := snap.AddOrUpdateSlice(s); err != nil {
				panic(err)
			}
		}
		for _, c := range classes {
			if err := snap.AddOrUpdateClass(c); err != nil {
				panic(err)
			}
		}
		name := "upstream order"
		if opts.Topology != nil {
			name = "topology"
		}
		for _, pod := range [][]*resourceapi.ResourceClaim{{rdma}, {four}, {podGPU, podNIC}} {
			if pod[0] == four {
				if err := snap.AddOrUpdateClaim(running); err != nil {
					panic(err)
				}
			}
			res, err := snap.Allocate(context.Background(), node, pod)
			if err != nil {
				panic(err)
			}
			var devices []string
			for _, claim := range res {
				for _, r := range claim.Devices.Results {
					devices = append(devices, r.Device)
				}
			}
			fmt.Printf("%s, %s: %s\n", name, pod[0].Name, strings.Join(devices, " "))
		}
	}
	// Output:
	// upstream order, rdma: nic-0 gpu-0 gpu-1
	// upstream order, four: gpu-1 gpu-2 gpu-3 gpu-4
	// upstream order, pod-gpu: gpu-1 nic-0
	// topology, rdma: nic-0 gpu-6 gpu-7
	// topology, four: gpu-4 gpu-5 gpu-6 gpu-7
	// topology, pod-gpu: gpu-6 nic-0
}
