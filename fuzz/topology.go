package fuzz

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/verify"
)

// Standard topology attributes the generated topology nodes publish (KEP-6072's NUMA node, an int, and
// the PCIe root, a string), named as allocator.AttributeNUMANode and allocator.AttributePCIeRoot name them.
const (
	AttributeNUMANode = "resource.kubernetes.io/numaNode"
	AttributePCIeRoot = "resource.kubernetes.io/pcieRoot"
)

// TopologyOptions shape the nodes of TopologyClusterGen.
type TopologyOptions struct {
	// GPUs and NICs are the devices of each kind on the node, spread evenly over Roots PCIe roots, which
	// are spread evenly over NUMANodes NUMA nodes. The zero value is a DGX-like node: 8 GPUs, 8 NICs,
	// 4 PCIe roots, 2 NUMA nodes.
	GPUs, NICs, Roots, NUMANodes int
	// MaxCount bounds the devices one request asks for (default 2).
	MaxCount int
}

func (o TopologyOptions) withDefaults() TopologyOptions {
	if o.GPUs == 0 && o.NICs == 0 && o.Roots == 0 && o.NUMANodes == 0 {
		o.GPUs, o.NICs, o.Roots, o.NUMANodes = 8, 8, 4, 2
	}
	o.Roots, o.NUMANodes = max(o.Roots, 1), max(o.NUMANodes, 1)
	if o.MaxCount == 0 {
		o.MaxCount = 2
	}
	return o
}

// TopologyClusterGen draws one node whose GPUs and NICs sit on PCIe roots and NUMA nodes (the standard
// attributes; a NIC may lack its NUMA node, as some drivers publish none, and NICs may be shareable),
// partly used by allocated claims, and the claims of one pod: one or two claims asking for GPUs and
// NICs in either order, now and then with alternatives (two GPUs, else one) or a matchAttribute
// constraint on the NUMA node. It is the ground of allocator's Topology tests: shapes no preference was
// tuned on.
func TopologyClusterGen(opts TopologyOptions) *rapid.Generator[*Cluster] {
	opts = opts.withDefaults()
	return rapid.Custom(func(t *rapid.T) *Cluster {
		all := verify.AllFeatures()
		c := &Cluster{Features: &all}
		node := &v1.Node{}
		node.Name = "node-0"
		node.Status.Allocatable, node.Status.Capacity = nodeAllocatable(), nodeAllocatable()
		c.Nodes, c.Node = []*v1.Node{node}, node
		shareable := rapid.IntRange(0, 3).Draw(t, "shareableNICs") == 0
		noNUMA := rapid.IntRange(0, 4).Draw(t, "nicsWithoutNUMA") == 0
		kinds := []struct {
			driver, prefix string
			n              int
		}{{GPUDriver, "gpu", opts.GPUs}, {NICDriver, "nic", opts.NICs}}
		var devices []DeviceRef
		for _, k := range kinds {
			s := &resourceapi.ResourceSlice{}
			s.Name = "node-0-" + k.prefix
			s.Spec = resourceapi.ResourceSliceSpec{Driver: k.driver, NodeName: ptr.To(node.Name),
				Pool: resourceapi.ResourcePool{Name: "node-0", Generation: 1, ResourceSliceCount: 1}}
			for i := range k.n {
				root := i * opts.Roots / k.n
				numa := int64(root * opts.NUMANodes / opts.Roots)
				d := resourceapi.Device{Name: fmt.Sprintf("%s-%d", k.prefix, i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					AttributePCIeRoot: {StringValue: ptr.To(fmt.Sprintf("pci0000:%02x", root))},
				}}
				if k.driver == GPUDriver || !noNUMA {
					d.Attributes[AttributeNUMANode] = resourceapi.DeviceAttribute{IntValue: ptr.To(numa)}
				}
				if k.driver == NICDriver && shareable {
					d.AllowMultipleAllocations = ptr.To(true)
				}
				s.Spec.Devices = append(s.Spec.Devices, d)
			}
			c.Slices = append(c.Slices, s)
		}
		for _, s := range c.Slices {
			for i := range s.Spec.Devices {
				devices = append(devices, DeviceRef{ID: verify.DeviceID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: s.Spec.Devices[i].Name}, Device: &s.Spec.Devices[i]})
			}
		}
		for _, k := range kinds {
			c.Classes = append(c.Classes, &resourceapi.DeviceClass{})
			c.Classes[len(c.Classes)-1].Name = k.prefix
			c.Classes[len(c.Classes)-1].Spec.Selectors = []resourceapi.DeviceSelector{cel(fmt.Sprintf("device.driver == %q", k.driver))}
		}
		// Partly used: each device is held by an allocated claim with some probability, drawn per node.
		used := rapid.IntRange(0, 3).Draw(t, "usedQuarters")
		for i, d := range devices {
			if rapid.IntRange(0, 3).Draw(t, "used") >= used {
				continue
			}
			held := &resourceapi.ResourceClaim{}
			held.Namespace, held.Name = "default", fmt.Sprintf("running-%d", i)
			held.UID = types.UID("uid-" + held.Name)
			class := "gpu"
			if d.ID.Driver == NICDriver {
				class = "nic"
			}
			held.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
			r := resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: d.ID.Driver, Pool: d.ID.Pool, Device: d.ID.Device}
			if ptr.Deref(d.Device.AllowMultipleAllocations, false) {
				r.ShareID = ptr.To(types.UID(fmt.Sprintf("00000000-0000-0000-8000-%012x", i+1)))
			}
			held.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
				Results: []resourceapi.DeviceRequestAllocationResult{r}}}
			c.Allocated = append(c.Allocated, held)
		}
		c.Claims = drawTopologyClaims(t, opts)
		return c
	})
}

// drawTopologyClaims draws the claims of one pod: GPU and NIC requests, in one claim or two, in either
// order.
func drawTopologyClaims(t *rapid.T, opts TopologyOptions) []*resourceapi.ResourceClaim {
	request := func(name, class string) resourceapi.DeviceRequest {
		count := int64(rapid.IntRange(1, opts.MaxCount).Draw(t, name+"Count"))
		r := resourceapi.DeviceRequest{Name: name}
		if class == "gpu" && count > 1 && rapid.IntRange(0, 3).Draw(t, "alternatives") == 0 {
			r.FirstAvailable = []resourceapi.DeviceSubRequest{
				{Name: "many", DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count},
				{Name: "one", DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
			}
			return r
		}
		r.Exactly = &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
		return r
	}
	var reqs []resourceapi.DeviceRequest
	switch rapid.IntRange(0, 3).Draw(t, "requests") {
	case 0:
		reqs = []resourceapi.DeviceRequest{request("gpu", "gpu"), request("nic", "nic")}
	case 1:
		reqs = []resourceapi.DeviceRequest{request("nic", "nic"), request("gpu", "gpu")}
	case 2:
		reqs = []resourceapi.DeviceRequest{request("gpu", "gpu")}
	default:
		reqs = []resourceapi.DeviceRequest{request("gpu", "gpu"), request("nic", "nic"), request("gpu2", "gpu")}
	}
	claim := func(name string, reqs []resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{}
		c.Namespace, c.Name = "default", name
		c.Spec.Devices.Requests = reqs
		return c
	}
	if len(reqs) > 1 && rapid.Bool().Draw(t, "claimPerRequest") {
		out := make([]*resourceapi.ResourceClaim, len(reqs))
		for i, r := range reqs {
			out[i] = claim(fmt.Sprintf("pod-%s", r.Name), []resourceapi.DeviceRequest{r})
		}
		return out
	}
	c := claim("pod", reqs)
	if len(reqs) > 1 && reqs[0].Exactly != nil && reqs[1].Exactly != nil && rapid.IntRange(0, 3).Draw(t, "sameNUMA") == 0 {
		c.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{
			Requests: []string{reqs[0].Name, reqs[1].Name}, MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(AttributeNUMANode))}}
	}
	return []*resourceapi.ResourceClaim{c}
}
