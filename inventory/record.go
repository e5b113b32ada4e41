package inventory

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// NodePlaceholder stands for the node name in the pool names of a recorded
// template. It cannot occur in a real pool name, whose characters are those
// of a DNS subdomain and '/'.
const NodePlaceholder = "{node}"

// RecordTemplate records the ResourceSlices of one live node (all its
// drivers' slices, as `kubectl get resourceslices --field-selector
// spec.nodeName=<node> -o yaml` lists them) as a template named name, so
// that users build their own instance types from a node they have. node may
// be nil; when given, its labels (but kubernetes.io/hostname) become the
// template's Labels, node.kubernetes.io/instance-type its InstanceType and
// status.allocatable its Allocatable.
//
// Every slice must be local to one node, the same for all (spec.nodeName);
// slices for all nodes or a node selector describe no single node and are an
// error naming the slice and field. Object metadata, the node name and pool
// generations are dropped; the node name in pool names becomes
// NodePlaceholder. Slices are kept in the natural order of their names
// (digits compared as numbers), so that slices named <node>-<driver>-<i>, as
// [Slices] names them, keep their order. Inputs are not modified.
func RecordTemplate(name string, node *v1.Node, sl []*resourceapi.ResourceSlice) (Template, error) {
	t := Template{Name: name}
	if name == "" {
		return Template{}, fmt.Errorf("%w: name: required", ErrInvalidTemplate)
	}
	if len(sl) == 0 {
		return Template{}, fmt.Errorf("%w: template %s: no ResourceSlices", ErrInvalidTemplate, name)
	}
	sorted := slices.Clone(sl)
	slices.SortStableFunc(sorted, func(x, y *resourceapi.ResourceSlice) int { return naturalCompare(x.Name, y.Name) })
	var nodeName string
	for i, s := range sorted {
		if s == nil {
			return Template{}, fmt.Errorf("%w: template %s: slices[%d]: nil object", ErrInvalidTemplate, name, i)
		}
		spec := field.NewPath("spec")
		switch {
		case s.Spec.NodeName == nil || *s.Spec.NodeName == "":
			return Template{}, fmt.Errorf("%w: ResourceSlice %s: %s: a template records node-local slices", ErrInvalidTemplate, s.Name, spec.Child("nodeName"))
		case nodeName != "" && *s.Spec.NodeName != nodeName:
			return Template{}, fmt.Errorf("%w: ResourceSlice %s: %s: %q, but other slices are of node %q", ErrInvalidTemplate, s.Name, spec.Child("nodeName"), *s.Spec.NodeName, nodeName)
		case s.Spec.PerDeviceNodeSelection != nil && *s.Spec.PerDeviceNodeSelection:
			return Template{}, fmt.Errorf("%w: ResourceSlice %s: %s: a template records node-local slices", ErrInvalidTemplate, s.Name, spec.Child("perDeviceNodeSelection"))
		}
		nodeName = *s.Spec.NodeName
		c := *s.Spec.DeepCopy()
		c.NodeName = nil
		c.Pool.Generation = 0
		c.Pool.Name = strings.ReplaceAll(c.Pool.Name, nodeName, NodePlaceholder)
		t.Recorded = append(t.Recorded, c)
	}
	if node != nil {
		if node.Name != nodeName {
			return Template{}, fmt.Errorf("%w: Node %s: metadata.name: the slices are of node %q", ErrInvalidTemplate, node.Name, nodeName)
		}
		for k, v := range node.Labels {
			switch k {
			case v1.LabelHostname:
			case v1.LabelInstanceTypeStable:
				t.InstanceType = v
			default:
				if t.Labels == nil {
					t.Labels = map[string]string{}
				}
				t.Labels[k] = v
			}
		}
		if len(node.Status.Allocatable) > 0 {
			t.Allocatable = node.Status.Allocatable.DeepCopy()
		}
	}
	return t, nil
}

// ParseResourceSlices reads ResourceSlices as kubectl prints them: a List
// or ResourceSliceList with items, or single ResourceSlice objects, in YAML
// or JSON, several YAML documents separated by "---" lines. Objects of
// another kind are an error naming the document.
func ParseResourceSlices(data []byte) ([]*resourceapi.ResourceSlice, error) {
	var out []*resourceapi.ResourceSlice
	for i, doc := range yamlDocuments(data) {
		var head struct {
			Kind  string `json:"kind"`
			Items []resourceapi.ResourceSlice
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("%w: document %d: %w", ErrInvalidTemplate, i, err)
		}
		switch head.Kind {
		case "List", "ResourceSliceList":
			for j := range head.Items {
				if k := head.Items[j].Kind; k != "" && k != "ResourceSlice" {
					return nil, fmt.Errorf("%w: document %d: items[%d].kind: %q, want ResourceSlice", ErrInvalidTemplate, i, j, k)
				}
				out = append(out, &head.Items[j])
			}
		case "ResourceSlice":
			var s resourceapi.ResourceSlice
			if err := yaml.Unmarshal(doc, &s); err != nil {
				return nil, fmt.Errorf("%w: document %d: %w", ErrInvalidTemplate, i, err)
			}
			out = append(out, &s)
		default:
			return nil, fmt.Errorf("%w: document %d: kind: %q, want ResourceSlice or List", ErrInvalidTemplate, i, head.Kind)
		}
	}
	return out, nil
}

// yamlDocuments splits a YAML stream at "---" lines, dropping empty documents.
func yamlDocuments(data []byte) [][]byte {
	var out [][]byte
	for _, doc := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) > 0 {
			out = append(out, doc)
		}
	}
	return out
}

// recordedSlices instantiates the recorded slices for a node.
func (t Template) recordedSlices(nodeName string) ([]*resourceapi.ResourceSlice, error) {
	if nodeName == "" {
		return nil, fmt.Errorf("%w: nodeName: required", ErrInvalidNode)
	}
	perDriver := map[string]int{}
	out := make([]*resourceapi.ResourceSlice, len(t.Recorded))
	for i := range t.Recorded {
		spec := *t.Recorded[i].DeepCopy()
		spec.NodeName = ptr.To(nodeName)
		spec.Pool.Name = strings.ReplaceAll(spec.Pool.Name, NodePlaceholder, nodeName)
		spec.Pool.Generation = 1
		out[i] = &resourceapi.ResourceSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: sliceName(nodeName, spec.Driver, perDriver[spec.Driver])},
			Spec:       spec,
		}
		perDriver[spec.Driver]++
	}
	for _, s := range out {
		if errs := ValidateSlice(s); len(errs) > 0 {
			return nil, fmt.Errorf("%w: template %s: slice %s would be invalid: %w", ErrInvalidTemplate, t.Name, s.Name, errs.ToAggregate())
		}
	}
	return out, nil
}

// naturalCompare orders strings with runs of digits compared as numbers:
// "gpu-2" before "gpu-10".
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// sortedDevices lists the devices of the slices in a canonical order (driver,
// pool, device name in natural order), whatever the order of the slices.
func sortedDevices(sl []*resourceapi.ResourceSlice) []*resourceapi.Device {
	type entry struct {
		driver, pool string
		d            *resourceapi.Device
	}
	var all []entry
	for _, s := range sl {
		for i := range s.Spec.Devices {
			all = append(all, entry{s.Spec.Driver, s.Spec.Pool.Name, &s.Spec.Devices[i]})
		}
	}
	slices.SortStableFunc(all, func(x, y entry) int {
		return cmp.Or(strings.Compare(x.driver, y.driver), strings.Compare(x.pool, y.pool), naturalCompare(x.d.Name, y.d.Name))
	})
	out := make([]*resourceapi.Device, len(all))
	for i, e := range all {
		out[i] = e.d
	}
	return out
}
