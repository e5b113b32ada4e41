package inventory

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Well-known node labels an instantiated node carries (k8s.io/api/core/v1
// names them; the kubelet sets them on every node).
const (
	// LabelGPUProduct and the other nvidia.com/ labels are those NVIDIA's GPU
	// feature discovery sets, with its spelling: the product name with
	// spaces as dashes, the memory of one GPU in MiB.
	LabelGPUProduct       = "nvidia.com/gpu.product"
	LabelGPUCount         = "nvidia.com/gpu.count"
	LabelGPUMemory        = "nvidia.com/gpu.memory"
	LabelGPUFamily        = "nvidia.com/gpu.family"
	LabelGPUComputeMajor  = "nvidia.com/gpu.compute.major"
	LabelGPUComputeMinor  = "nvidia.com/gpu.compute.minor"
	LabelCUDADriverMajor  = "nvidia.com/cuda.driver-version.major"
	LabelCUDADriverMinor  = "nvidia.com/cuda.driver-version.minor"
	LabelCUDADriverRev    = "nvidia.com/cuda.driver-version.revision"
	LabelCUDARuntimeMajor = "nvidia.com/cuda.runtime-version.major"
	LabelCUDARuntimeMinor = "nvidia.com/cuda.runtime-version.minor"
	LabelMIGCapable       = "nvidia.com/mig.capable"
)

// Instance is one node of a template as it would appear in the cluster.
type Instance struct {
	// Node is the Node object, with the template's labels and allocatable.
	Node *v1.Node
	// Slices are the ResourceSlices the node's drivers would publish.
	Slices []*resourceapi.ResourceSlice
}

// Instantiate returns the Node and the ResourceSlices a node of this type
// named nodeName would have, so that an autoscaler can place pods on it
// before it exists.
//
// The slices have the schema of the real node's: every device carries the
// identities a real one does, generated deterministically from the template
// name, the node name and the order in which each identity first appears in
// the slices. A GPU's UUID is "GPU-" and a MIG device's "MIG-" followed by a
// version-5-style UUID; values that are equal on the recorded node (a MIG
// device's parentUUID and its GPU's uuid) are equal on every instance, values
// that differ differ, and no two nodes share one. PCI bus IDs, PCIe roots and
// NUMA nodes are hardware positions, the same on every node of a type: a
// model template without a PCI bus ID gets 0000:<minor>:00.0, one without a
// PCIe root the root of its bus (pci<domain>:<bus>).
//
// The Node has the labels kubernetes.io/hostname (the node name),
// node.kubernetes.io/instance-type (InstanceType, or the template name),
// kubernetes.io/os and kubernetes.io/arch (linux and amd64 unless Labels say
// otherwise), the template's Labels and, with GPUFeatureDiscovery, the
// nvidia.com/ labels NVIDIA's GPU feature discovery sets. Its capacity and
// allocatable are Allocatable.
func (t Template) Instantiate(nodeName string) (Instance, error) {
	var out []*resourceapi.ResourceSlice
	var err error
	if len(t.Recorded) > 0 {
		if out, err = t.recordedSlices(nodeName); err != nil {
			return Instance{}, err
		}
	} else {
		n := t.Node
		n.GPUs = slices.Clone(n.GPUs)
		for i := range n.GPUs {
			g := &n.GPUs[i]
			// Placeholders, unique per device; the identity pass below
			// replaces them by instance UUIDs.
			g.UUID = fmt.Sprintf("GPU-%d", g.Minor)
			g.MIGDevices = slices.Clone(g.MIGDevices)
			for j := range g.MIGDevices {
				g.MIGDevices[j].UUID = fmt.Sprintf("MIG-%d-%d", g.Minor, j)
			}
			if g.PCIBusID == "" {
				g.PCIBusID = fmt.Sprintf("0000:%02x:00.0", g.Minor)
			}
			if g.PCIeRoot == "" {
				g.PCIeRoot = pcieRootOf(g.PCIBusID)
			}
		}
		if out, err = Slices(n, Options{NodeName: nodeName, Driver: t.Driver, Mode: t.Mode,
			ConsumableShares: t.ConsumableShares, ListAttributes: t.ListAttributes, FabricManagerPartitioning: t.FabricManagerPartitioning}); err != nil {
			return Instance{}, err
		}
	}
	newIdentities(out, t.Name, nodeName)
	return Instance{Node: t.node(nodeName), Slices: out}, nil
}

// pcieRootOf is the PCIe root of a bus in Linux's naming: "0000:07:00.0" →
// "pci0000:07"; "" when the bus ID has no domain and bus.
func pcieRootOf(busID string) string {
	parts := strings.Split(busID, ":")
	if len(parts) < 3 {
		return ""
	}
	return "pci" + parts[0] + ":" + parts[1]
}

// identityAttr reports whether an attribute names a device identity: uuid or
// parentUUID, in any domain.
func identityAttr(name resourceapi.QualifiedName) bool {
	s := string(name)
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return s == AttrUUID || s == AttrParentUUID
}

// newIdentities replaces every identity attribute value by the instance's
// own, in place: the k-th distinct value, in the canonical order of devices
// (sortedDevices) and of attribute names, becomes instanceUUID(template,
// node, k). The order does not depend on how devices are spread over slices.
func newIdentities(sl []*resourceapi.ResourceSlice, template, node string) {
	seen := map[string]string{}
	for _, d := range sortedDevices(sl) {
		{
			names := slices.Sorted(maps.Keys(d.Attributes))
			for _, name := range names {
				a := d.Attributes[name]
				if !identityAttr(name) || a.StringValue == nil {
					continue
				}
				v, ok := seen[*a.StringValue]
				if !ok {
					v = instanceUUID(*a.StringValue, template, node, len(seen))
					seen[*a.StringValue] = v
				}
				d.Attributes[name] = resourceapi.DeviceAttribute{StringValue: ptr.To(v)}
			}
		}
	}
}

// instanceUUID is a version-5-style UUID (SHA-1 of the template name, node
// name and ordinal, with RFC 9562's version and variant bits) with the old
// value's "GPU-" or "MIG-" prefix.
func instanceUUID(old, template, node string, k int) string {
	prefix := ""
	if i := strings.IndexByte(old, '-'); i > 0 && (old[:i] == "GPU" || old[:i] == "MIG") {
		prefix = old[:i+1]
	}
	h := sha1.Sum([]byte("dralloc.dev/instance\x00" + template + "\x00" + node + "\x00" + strconv.Itoa(k)))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	x := hex.EncodeToString(h[:16])
	return prefix + x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// node is the Node object of an instance.
func (t Template) node(name string) *v1.Node {
	labels := map[string]string{
		v1.LabelOSStable:   "linux",
		v1.LabelArchStable: "amd64",
	}
	if t.GPUFeatureDiscovery {
		maps.Copy(labels, gfdLabels(t.Node))
	}
	maps.Copy(labels, t.Labels)
	labels[v1.LabelHostname] = name
	labels[v1.LabelInstanceTypeStable] = t.Name
	if t.InstanceType != "" {
		labels[v1.LabelInstanceTypeStable] = t.InstanceType
	}
	n := &v1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}
	if len(t.Allocatable) > 0 {
		n.Status.Capacity = t.Allocatable.DeepCopy()
		n.Status.Allocatable = t.Allocatable.DeepCopy()
	}
	return n
}

// gfdLabels are the labels NVIDIA's GPU feature discovery sets for the
// node's GPUs, from its first GPU by minor (GFD labels a node by its first
// GPU too); none for a node without GPUs.
func gfdLabels(n Node) map[string]string {
	if len(n.GPUs) == 0 {
		return nil
	}
	g := slices.MinFunc(n.GPUs, func(x, y GPU) int { return x.Minor - y.Minor })
	l := map[string]string{
		LabelGPUProduct: strings.ReplaceAll(g.ProductName, " ", "-"),
		LabelGPUCount:   strconv.Itoa(len(n.GPUs)),
		LabelGPUMemory:  strconv.FormatInt(g.MemoryBytes>>20, 10),
		LabelMIGCapable: strconv.FormatBool(g.MIGCapable),
	}
	if g.Architecture != "" {
		l[LabelGPUFamily] = strings.ToLower(g.Architecture)
	}
	if major, minor, ok := strings.Cut(g.CUDAComputeCapability, "."); ok {
		l[LabelGPUComputeMajor], l[LabelGPUComputeMinor] = major, minor
	}
	// The kernel driver's version (550.54.15) and the CUDA version it
	// supports (12.4), as GFD splits them.
	if v := strings.Split(n.DriverVersion, "."); len(v) == 3 {
		l[LabelCUDADriverMajor], l[LabelCUDADriverMinor], l[LabelCUDADriverRev] = v[0], v[1], v[2]
	}
	if major, minor, ok := strings.Cut(n.CUDADriverVersion, "."); ok {
		l[LabelCUDARuntimeMajor], l[LabelCUDARuntimeMinor] = major, minor
	}
	return l
}
