package bench

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Driver is the driver name of every benchmark device.
const Driver = "gpu.example.com"

// Class names used by the scenarios.
const (
	GPUClass = "gpu"
	NICClass = "nic"
)

// GPUSelector is the GPU class's selector; ClaimSelector is the request's.
const (
	GPUSelector   = `device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "H100"`
	ClaimSelector = `device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`
	nicSelector   = `device.driver == "nic.example.com"`
)

// Cluster is one scenario's input: what both allocators are given.
type Cluster struct {
	Nodes     []*v1.Node
	Slices    []*resourceapi.ResourceSlice
	Classes   []*resourceapi.DeviceClass
	Allocated []*resourceapi.ResourceClaim // claims already allocated (the allocated state)
}

// Classes returns the GPU class (selecting every benchmark GPU) and a NIC class that no device matches.
func Classes() []*resourceapi.DeviceClass {
	class := func(name, expr string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{
				{CEL: &resourceapi.CELDeviceSelector{Expression: expr}},
			}},
		}
	}
	return []*resourceapi.DeviceClass{class(GPUClass, GPUSelector), class(NICClass, nicSelector)}
}

// BenchNode is a Node as the API server has it, with the allocatable a kubelet reports for a large GPU
// machine (kube-scheduler's NodeResourcesFit, which the pods package reproduces, fits no pod on a node
// without it).
func BenchNode(name string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("222"), v1.ResourceMemory: resource.MustParse("2000Gi"),
		v1.ResourcePods: resource.MustParse("110")}
	return n
}

// Fleet returns nodes node-0000… each with one ResourceSlice (pool = node name) of gpusPerNode GPUs.
func Fleet(nodes, gpusPerNode int) Cluster {
	c := Cluster{Classes: Classes()}
	for n := 0; n < nodes; n++ {
		name := fmt.Sprintf("node-%04d", n)
		c.Nodes = append(c.Nodes, BenchNode(name))
		c.Slices = append(c.Slices, NodeSlice(name, gpusPerNode, 1))
	}
	return c
}

// NodeSlice is the single ResourceSlice of one node: gpus GPUs with ten attributes (four strings, two ints, two
// versions, one bool and resource.kubernetes.io/pcieRoot) and the capacities memory 80Gi and cores 132.
func NodeSlice(node string, gpus int, generation int64) *resourceapi.ResourceSlice {
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + Driver},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   Driver,
			NodeName: ptr.To(node),
			Pool:     resourceapi.ResourcePool{Name: node, Generation: generation, ResourceSliceCount: 1},
		},
	}
	for i := 0; i < gpus; i++ {
		slice.Spec.Devices = append(slice.Spec.Devices, gpu(i))
	}
	return slice
}

func gpu(i int) resourceapi.Device {
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: ptr.To(s)} }
	num := func(n int64) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{IntValue: ptr.To(n)} }
	ver := func(s string) resourceapi.DeviceAttribute {
		return resourceapi.DeviceAttribute{VersionValue: ptr.To(s)}
	}
	return resourceapi.Device{
		Name: fmt.Sprintf("gpu-%d", i),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"model":                           str("H100"),
			"uuid":                            str(fmt.Sprintf("GPU-%04d", i)),
			"brand":                           str("Nvidia"),
			"architecture":                    str("Hopper"),
			"index":                           num(int64(i)),
			"numaNode":                        num(int64(i / 4)),
			"driverVersion":                   ver("580.95.5"),
			"cudaComputeCapability":           ver("9.0.0"),
			"migCapable":                      {BoolValue: ptr.To(true)},
			"resource.kubernetes.io/pcieRoot": str(fmt.Sprintf("pci0000:%02x", i/2)),
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: resource.MustParse("80Gi")},
			"cores":  {Value: resource.MustParse("132")},
		},
	}
}

// GPUClaim asks for count GPUs with at least 40Gi of memory.
func GPUClaim(name string, count int64) *resourceapi.ResourceClaim {
	gpus := exactly("gpus", GPUClass, count)
	gpus.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: ClaimSelector}}}
	return newClaim(name, gpus)
}

// newClaim is a claim in namespace default with the given requests.
func newClaim(name string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}},
	}
}

// exactly is a request for count devices of a class.
func exactly(name, class string, count int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           count,
	}}
}

// GPUAndNICClaim asks for k GPUs and one NIC from a class that no device matches: it fits nowhere, and a
// depth-first search that does not count candidates first tries every k-subset of GPUs before it learns that.
func GPUAndNICClaim(k int64) *resourceapi.ResourceClaim {
	claim := GPUClaim(fmt.Sprintf("gpus-%d-and-nic", k), k)
	claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, exactly("nic", NICClass, 1))
	return claim
}

// HalfUsed marks gpu-0..3 of every node as allocated, through one allocated claim per node.
func (c Cluster) HalfUsed() Cluster {
	out := c
	out.Allocated = nil
	for _, node := range c.Nodes {
		claim := GPUClaim("used-"+node.Name, 4)
		claim.Status.Allocation = &resourceapi.AllocationResult{}
		for i := 0; i < 4; i++ {
			claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results,
				resourceapi.DeviceRequestAllocationResult{
					Request: "gpus", Driver: Driver, Pool: node.Name, Device: fmt.Sprintf("gpu-%d", i),
				})
		}
		out.Allocated = append(out.Allocated, claim)
	}
	return out
}

// NICSlice is a slice of two NICs (driver nic.example.com, which the NIC class selects) of the node, on
// NUMA nodes 0 and 1.
func NICSlice(node string) *resourceapi.ResourceSlice {
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-nic.example.com"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   "nic.example.com",
			NodeName: ptr.To(node),
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range 2 {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{
			Name:       fmt.Sprintf("nic-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"numaNode": {IntValue: ptr.To(int64(i))}},
		})
	}
	return slice
}

// GPUsAndNICPairClaim asks for k GPUs and two NICs on the same NUMA node, which the NICs of NICSlice are
// not: the NIC request fails whichever GPUs were taken.
func GPUsAndNICPairClaim(k int64) *resourceapi.ResourceClaim {
	claim := GPUClaim(fmt.Sprintf("gpus-%d-and-nic-pair", k), k)
	claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, exactly("nics", NICClass, 2))
	claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{
		Requests:       []string{"nics"},
		MatchAttribute: ptr.To(resourceapi.FullyQualifiedName("nic.example.com/numaNode")),
	}}
	return claim
}

// SplitClaim asks for k GPUs, then gpus-k GPUs, then one more: one GPU more than a node of gpus GPUs has.
// Every request has enough candidates, so counting cannot decide; the GPUs all differ (serials, indexes),
// but nothing the claim checks tells them apart.
func SplitClaim(k, gpus int64) *resourceapi.ResourceClaim {
	claim := GPUClaim(fmt.Sprintf("split-%d", k), k)
	for i, count := range []int64{gpus - k, 1} {
		claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, exactly(fmt.Sprintf("more-%d", i), GPUClass, count))
	}
	return claim
}

// PartlyUsedGPUs is PartitionableFleet(1, gpus) with the one-slice partition at slice 6 of every GPU
// allocated: no GPU is whole any more.
func PartlyUsedGPUs(gpus int) Cluster {
	c := PartitionableFleet(1, gpus)
	// The request its results name, as the API server requires.
	held := newClaim("held", exactly("part", GPUClass, int64(gpus)))
	held.Status.Allocation = &resourceapi.AllocationResult{}
	for g := range gpus {
		held.Status.Allocation.Devices.Results = append(held.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "part", Driver: Driver, Pool: c.Nodes[0].Name, Device: fmt.Sprintf("gpu-%d-part-1-6", g),
		})
	}
	c.Allocated = append(c.Allocated, held)
	return c
}

// SmallAndWholeClaim asks for k one-slice partitions and a whole GPU.
func SmallAndWholeClaim(k int64) *resourceapi.ResourceClaim {
	return newClaim(fmt.Sprintf("small-%d-and-whole", k), exactly("small", profileClass(1), k), exactly("whole", profileClass(7), 1))
}
