package inventory

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Template is a recorded node type — its GPUs and how they are published —
// from which the slices of a node that does not exist yet are generated, for
// any node name. Autoscalers use it to scale node groups up from zero.
// Templates carry no UUIDs: [Template.Instantiate] generates each instance's
// own, so that constraints on them (matchAttribute parentUUID) behave as on
// a real node.
//
// A template is either a model (Node, Mode, Driver: the slices are built as
// [Slices] builds them) or a recording of a live node's slices (Recorded, see
// [RecordTemplate]), which may come from any driver.
type Template struct {
	// Name identifies the template, e.g. "dgxh100".
	Name string `json:"name"`
	// Description says what the node is, e.g. "8x NVIDIA H100 80GB HBM3".
	Description string `json:"description,omitempty"`
	// Mode is how the GPUs are published; empty means ModeGPU.
	Mode Mode `json:"mode,omitempty"`
	// Driver is the driver name; empty means DefaultDriver.
	Driver string `json:"driver,omitempty"`
	// ConsumableShares, ListAttributes and FabricManagerPartitioning are
	// the driver settings of the same names in Options, so that a node
	// type publishes what its nodes' driver is configured to publish.
	ConsumableShares          string `json:"consumableShares,omitempty"`
	ListAttributes            bool   `json:"listAttributes,omitempty"`
	FabricManagerPartitioning bool   `json:"fabricManagerPartitioning,omitempty"`
	// Node is the recorded hardware and driver versions.
	Node Node `json:"node"`
	// InstanceType is the node.kubernetes.io/instance-type label of its
	// nodes; empty means the template name.
	InstanceType string `json:"instanceType,omitempty"`
	// Labels are further labels of its nodes (a node pool's, a zone's).
	Labels map[string]string `json:"labels,omitempty"`
	// GPUFeatureDiscovery says that its nodes run NVIDIA's GPU feature
	// discovery, so they carry its nvidia.com/gpu.* labels.
	GPUFeatureDiscovery bool `json:"gpuFeatureDiscovery,omitempty"`
	// Allocatable is the node's status.allocatable (and capacity): CPU,
	// memory, pods, device plugins' extended resources.
	Allocatable v1.ResourceList `json:"allocatable,omitempty"`
	// Recorded are the specs of the slices of a recorded node, with the
	// node name cleared and every occurrence of it in pool names replaced
	// by NodePlaceholder; when set, Node, Mode and Driver are not used.
	Recorded []resourceapi.ResourceSliceSpec `json:"recorded,omitempty"`
}

// ErrInvalidTemplate is wrapped by errors for templates that cannot be parsed.
var ErrInvalidTemplate = errors.New("invalid node template")

// NewTemplate records node as a template named name. The UUIDs of its GPUs
// and MIG devices are dropped; node is not modified.
func NewTemplate(name, description string, mode Mode, node Node) Template {
	n := Node{DriverVersion: node.DriverVersion, CUDADriverVersion: node.CUDADriverVersion}
	for _, g := range node.GPUs {
		g.UUID = ""
		if g.NUMANode != nil {
			g.NUMANode = ptrTo(*g.NUMANode)
		}
		g.FabricPartitions = maps.Clone(g.FabricPartitions)
		g.MIGProfiles = slices.Clone(g.MIGProfiles)
		for i := range g.MIGProfiles {
			g.MIGProfiles[i].Placements = slices.Clone(g.MIGProfiles[i].Placements)
		}
		g.MIGDevices = slices.Clone(g.MIGDevices)
		for i := range g.MIGDevices {
			g.MIGDevices[i].UUID = ""
		}
		n.GPUs = append(n.GPUs, g)
	}
	return Template{Name: name, Description: description, Mode: mode, Node: n}
}

func ptrTo[T any](v T) *T { return &v }

// Slices generates the slices a node named nodeName of this type would
// publish, with the given pool generation (zero means 1): the slices of
// [Template.Instantiate].
func (t Template) Slices(nodeName string, generation int64) ([]*resourceapi.ResourceSlice, error) {
	in, err := t.Instantiate(nodeName)
	if err != nil {
		return nil, err
	}
	if generation != 0 {
		for _, s := range in.Slices {
			s.Spec.Pool.Generation = generation
		}
	}
	return in.Slices, nil
}

// MarshalYAML serialises the template as YAML (JSON is sigs.k8s.io/yaml's
// subset, so json.Marshal works too).
func (t Template) MarshalYAML() ([]byte, error) {
	return yaml.Marshal(t)
}

// ParseTemplate reads a template from YAML or JSON. Unknown fields are an
// error, so that a misspelt field does not silently publish a different node,
// and so is anything after the template (a second YAML document, more JSON),
// which the YAML parser would otherwise ignore.
func ParseTemplate(data []byte) (Template, error) {
	var t Template
	if err := yaml.UnmarshalStrict(data, &t); err != nil {
		return Template{}, fmt.Errorf("%w: %w", ErrInvalidTemplate, err)
	}
	if err := oneDocument(data); err != nil {
		return Template{}, fmt.Errorf("%w: %w", ErrInvalidTemplate, err)
	}
	if t.Name == "" {
		return Template{}, fmt.Errorf("%w: name: required", ErrInvalidTemplate)
	}
	return t, nil
}

// oneDocument fails unless data holds at most one non-empty YAML document or
// one JSON value. Empty documents (a leading or trailing "---") do not
// count.
func oneDocument(data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	docs := 0
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("after the template: %w", err)
		}
		if doc == nil {
			continue
		}
		if docs++; docs > 1 {
			return errors.New("more than one document: a template is one YAML document or JSON object")
		}
	}
}

//go:embed profiles/*.yaml
var profiles embed.FS

// ProfileNames lists the shipped templates, recorded from go-nvml's mock
// servers, sorted.
func ProfileNames() []string {
	entries, _ := profiles.ReadDir("profiles")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// ErrUnknownProfile is wrapped by Profile for a name that is not shipped.
var ErrUnknownProfile = errors.New("unknown node profile")

// Profile returns a shipped template by name (see ProfileNames).
func Profile(name string) (Template, error) {
	data, err := profiles.ReadFile(path.Join("profiles", name+".yaml"))
	if err != nil || strings.ContainsAny(name, "/\\") {
		return Template{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownProfile, name, strings.Join(ProfileNames(), ", "))
	}
	return ParseTemplate(data)
}
