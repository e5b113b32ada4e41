package fuzz

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/gates"
	"github.com/dralloc/dralloc/allocator/verify"
)

// Drivers, attribute names and capacity names used by the generated devices. Selectors and constraints of the
// generated classes and claims refer to them.
const (
	GPUDriver = "gpu.example.com"
	NICDriver = "nic.example.com"

	// ZoneLabel is the node label that network-attached pools select on.
	ZoneLabel = "topology.example.com/zone"
)

// Cluster is one generated cluster: everything an allocator needs to allocate Claims on Node.
type Cluster struct {
	Nodes      []*v1.Node
	Slices     []*resourceapi.ResourceSlice
	Classes    []*resourceapi.DeviceClass
	TaintRules []*resourceapi.DeviceTaintRule
	// Allocated are claims that already hold devices (the allocated state).
	Allocated []*resourceapi.ResourceClaim
	// Claims are the pending claims to allocate together.
	Claims []*resourceapi.ResourceClaim
	// Node is the node the claims are to be allocated for; it is one of Nodes.
	Node *v1.Node
	// Features are the feature gates the cluster runs with. As everywhere in dralloc (allocator.Options,
	// verify.Input), nil means the gates Kubernetes 1.37 enables by default, and a pointer to the zero
	// Features switches every gate off. ClusterGen sets every gate on, the alpha ones included.
	Features *verify.Features
}

// Gates returns the feature gates the cluster runs with: *c.Features, or the default gates when it is nil.
func (c *Cluster) Gates() verify.Features { return gates.Or(c.Features) }

// ClusterGen draws whole clusters with the features chosen in opts.
func ClusterGen(opts Options) *rapid.Generator[*Cluster] {
	opts = opts.withDefaults()
	return rapid.Custom(func(t *rapid.T) *Cluster {
		all := verify.AllFeatures()
		c := &Cluster{Features: &all}
		c.Nodes = drawNodes(t, opts)
		c.Slices = drawSlices(t, opts, c.Nodes)
		c.Classes = drawClasses(t, opts)
		if opts.Taints {
			c.TaintRules = drawTaintRules(t, c.Slices)
		}
		if opts.Allocated {
			c.Allocated = drawAllocated(t, opts, c.Slices)
		}
		c.Claims = drawClaims(t, opts, c.Classes, c.Slices)
		c.Node = c.Nodes[rapid.IntRange(0, len(c.Nodes)-1).Draw(t, "node")]
		return c
	})
}

// ClaimsGen draws pending claims for the classes and slices of a cluster, with the features chosen in opts.
func ClaimsGen(opts Options, classes []*resourceapi.DeviceClass, slices []*resourceapi.ResourceSlice) *rapid.Generator[[]*resourceapi.ResourceClaim] {
	opts = opts.withDefaults()
	return rapid.Custom(func(t *rapid.T) []*resourceapi.ResourceClaim {
		return drawClaims(t, opts, classes, slices)
	})
}

func drawNodes(t *rapid.T, opts Options) []*v1.Node {
	n := rapid.IntRange(1, opts.MaxNodes).Draw(t, "nodes")
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		name := nodeName(i)
		zone := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "zone")
		nodes[i] = &v1.Node{}
		nodes[i].Name = name
		nodes[i].Labels = map[string]string{ZoneLabel: zone, "kubernetes.io/hostname": name}
		// A real node's allocatable: kube-scheduler's NodeResourcesFit fits no pod on a node without
		// allocatable pods. Fixed, so that the draws are those of a cluster without it.
		nodes[i].Status.Allocatable = nodeAllocatable()
		nodes[i].Status.Capacity = nodeAllocatable()
		if opts.NodeOperations && rapid.Bool().Draw(t, "declaresNodeOperations") {
			nodes[i].Status.DeclaredFeatures = []string{"DRAOptionalNodeOperations"}
		}
	}
	return nodes
}

// nodeAllocatable is the status.allocatable of the generated nodes: 110 pods (the kubelet's default),
// 64 CPUs, 512Gi of memory and 1Ti of ephemeral storage, room for every pod the generators draw.
func nodeAllocatable() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceCPU:              resource.MustParse("64"),
		v1.ResourceMemory:           resource.MustParse("512Gi"),
		v1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
}

// DeviceRef is one published device: its identity and the device as its ResourceSlice publishes it.
type DeviceRef struct {
	ID     verify.DeviceID
	Device *resourceapi.Device
}

// Devices lists the devices of the newest generation of every pool, in the order of the slices.
func (c *Cluster) Devices() []DeviceRef {
	type key struct{ driver, pool string }
	newest := map[key]int64{}
	for _, s := range c.Slices {
		k := key{s.Spec.Driver, s.Spec.Pool.Name}
		newest[k] = max(newest[k], s.Spec.Pool.Generation)
	}
	var out []DeviceRef
	for _, s := range c.Slices {
		if s.Spec.Pool.Generation != newest[key{s.Spec.Driver, s.Spec.Pool.Name}] {
			continue
		}
		for i := range s.Spec.Devices {
			out = append(out, DeviceRef{ID: verify.DeviceID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: s.Spec.Devices[i].Name}, Device: &s.Spec.Devices[i]})
		}
	}
	return out
}
