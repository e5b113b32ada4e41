package bench

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/inventory"
)

// NVIDIA's DeviceClasses: whole GPUs and MIG devices of driver gpu.nvidia.com.
const (
	NVIDIAGPUClass = "gpu.nvidia.com"
	NVIDIAMIGClass = "mig.nvidia.com"
)

// NVIDIAClasses returns the classes NVIDIA's driver ships: whole GPUs and MIG devices, told apart by the
// type attribute.
func NVIDIAClasses() []*resourceapi.DeviceClass {
	class := func(name, typ string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == %q`, typ),
			}}},
		}}
	}
	return []*resourceapi.DeviceClass{class(NVIDIAGPUClass, "gpu"), class(NVIDIAMIGClass, "mig")}
}

// DGXFleet returns nodes node-0000… each publishing what inventory publishes for the shipped profile (such
// as dgxh100: eight GPUs in dynamic MIG, one counter set per GPU, every whole GPU and MIG placement a
// device drawing on it).
func DGXFleet(nodes int, profile string) (Cluster, error) {
	return DGXFleetMode(nodes, profile, "")
}

// DGXFleetMode is DGXFleet with the profile's GPUs published in another mode (whole GPUs, static or
// dynamic MIG); the empty mode keeps the profile's own.
func DGXFleetMode(nodes int, profile string, mode inventory.Mode) (Cluster, error) {
	t, err := inventory.Profile(profile)
	if err != nil {
		return Cluster{}, err
	}
	if mode != "" {
		t.Mode = mode
	}
	c := Cluster{Classes: NVIDIAClasses()}
	for n := range nodes {
		name := fmt.Sprintf("node-%04d", n)
		c.Nodes = append(c.Nodes, BenchNode(name))
		slices, err := t.Slices(name, 1)
		if err != nil {
			return Cluster{}, err
		}
		c.Slices = append(c.Slices, slices...)
	}
	return c, nil
}

// HalfUsedGPUs marks the first used whole GPUs of every node (by slice order) as allocated, through one
// allocated claim per node.
func (c Cluster) HalfUsedGPUs(used int) Cluster {
	out := c
	out.Allocated = nil
	for _, node := range c.Nodes {
		claim := newClaim("used-"+node.Name, exactly("gpus", NVIDIAGPUClass, int64(used)))
		claim.Status.Allocation = &resourceapi.AllocationResult{}
		for _, s := range c.Slices {
			if s.Spec.NodeName == nil || *s.Spec.NodeName != node.Name {
				continue
			}
			for _, d := range s.Spec.Devices {
				if len(claim.Status.Allocation.Devices.Results) == used {
					break
				}
				if t := d.Attributes[inventory.AttrType].StringValue; t != nil && *t == "gpu" {
					claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results,
						resourceapi.DeviceRequestAllocationResult{Request: "gpus", Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name})
				}
			}
		}
		out.Allocated = append(out.Allocated, claim)
	}
	return out
}

// migRequest asks for count MIG devices of one profile (such as 1g.10gb).
func migRequest(name, profile string, count int64) resourceapi.DeviceRequest {
	r := exactly(name, NVIDIAMIGClass, count)
	r.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: fmt.Sprintf(`device.attributes["gpu.nvidia.com"].profile == %q`, profile),
	}}}
	return r
}

// MIGClaim asks for count MIG devices of one profile.
func MIGClaim(profile string, count int64) *resourceapi.ResourceClaim {
	return newClaim("mig-"+profile, migRequest("mig", profile, count))
}

// WholeGPUsClaim asks for count whole GPUs of NVIDIA's class.
func WholeGPUsClaim(count int64) *resourceapi.ResourceClaim {
	return newClaim(fmt.Sprintf("whole-%d", count), exactly("gpus", NVIDIAGPUClass, count))
}

// WholeElseMIGClaim asks for one whole GPU, else one MIG device of the profile (firstAvailable).
func WholeElseMIGClaim(profile string) *resourceapi.ResourceClaim {
	whole := exactly("whole", NVIDIAGPUClass, 1).Exactly
	mig := migRequest("mig", profile, 1)
	return newClaim("whole-else-"+profile, resourceapi.DeviceRequest{Name: "gpu", FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "whole", DeviceClassName: whole.DeviceClassName, AllocationMode: whole.AllocationMode, Count: whole.Count},
		{Name: "mig", DeviceClassName: mig.Exactly.DeviceClassName, Selectors: mig.Exactly.Selectors, AllocationMode: mig.Exactly.AllocationMode, Count: 1},
	}})
}

// NUMAFleet returns nodes of gpus GPUs each (NodeSlice's GPUs), perNUMA of them on each
// resource.kubernetes.io/numaNode and two on each resource.kubernetes.io/pcieRoot.
func NUMAFleet(nodes, gpus, perNUMA int) Cluster {
	c := Fleet(nodes, gpus)
	for _, s := range c.Slices {
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].Attributes["resource.kubernetes.io/numaNode"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(i / perNUMA))}
		}
	}
	return c
}

// AttributeKind is the type of the attribute NUMAFleetKind groups GPUs by.
type AttributeKind string

// The attribute kinds of the NUMA family: the standard resource.kubernetes.io/numaNode (an int) and a
// driver's own attribute gpu.example.com/numa as an int, a string or a version.
const (
	NUMAStandard AttributeKind = "numaNode"
	NUMAInt      AttributeKind = "int"
	NUMAString   AttributeKind = "string"
	NUMAVersion  AttributeKind = "version"
)

// Attribute is the fully qualified name NUMAFleetKind publishes for the kind.
func (k AttributeKind) Attribute() resourceapi.FullyQualifiedName {
	if k == NUMAStandard {
		return "resource.kubernetes.io/numaNode"
	}
	return "gpu.example.com/numa"
}

// NUMAFleetKind returns nodes of gpus GPUs each (NodeSlice's GPUs), perNUMA of them sharing one value of
// kind's attribute: group i has the int i, the string "numa-i" or the version "i.0.0".
func NUMAFleetKind(nodes, gpus, perNUMA int, kind AttributeKind) Cluster {
	c := Fleet(nodes, gpus)
	for _, s := range c.Slices {
		for i := range s.Spec.Devices {
			group := i / perNUMA
			var value resourceapi.DeviceAttribute
			switch kind {
			case NUMAString:
				value.StringValue = ptr.To(fmt.Sprintf("numa-%d", group))
			case NUMAVersion:
				value.VersionValue = ptr.To(fmt.Sprintf("%d.0.0", group))
			default:
				value.IntValue = ptr.To(int64(group))
			}
			s.Spec.Devices[i].Attributes[resourceapi.QualifiedName(kind.Attribute())] = value
		}
	}
	return c
}

// AlignedClaim asks for count GPUs that share one value of the attribute (matchAttribute).
func AlignedClaim(count int64, attribute resourceapi.FullyQualifiedName) *resourceapi.ResourceClaim {
	claim := GPUClaim(fmt.Sprintf("aligned-%d", count), count)
	claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: ptr.To(attribute)}}
	return claim
}

// ReplicateNode returns a fleet of n nodes node-0000… each publishing what the single node of c publishes
// (node name, pool and slice names renamed), with c's classes: a large fleet without running the
// inventory for every node.
func ReplicateNode(c Cluster, n int) Cluster {
	src := c.Nodes[0].Name
	out := Cluster{Classes: c.Classes}
	for i := range n {
		name := fmt.Sprintf("node-%04d", i)
		node := c.Nodes[0].DeepCopy()
		node.Name, node.UID = name, types.UID("uid-"+name)
		out.Nodes = append(out.Nodes, node)
		for _, s := range c.Slices {
			s = s.DeepCopy()
			s.Name = strings.Replace(s.Name, src, name, 1)
			s.Spec.Pool.Name = strings.Replace(s.Spec.Pool.Name, src, name, 1)
			if s.Spec.NodeName != nil {
				s.Spec.NodeName = ptr.To(name)
			}
			out.Slices = append(out.Slices, s)
		}
	}
	return out
}
