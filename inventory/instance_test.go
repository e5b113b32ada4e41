package inventory_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/inventory"
)

func mustInstance(t interface {
	Helper()
	Fatal(...any)
}, tmpl inventory.Template, node string) inventory.Instance {
	t.Helper()
	in, err := tmpl.Instantiate(node)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func mustProfile(t testing.TB, name string) inventory.Template {
	t.Helper()
	p, err := inventory.Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// NVIDIA's driver gives every GPU its UUID and every MIG device its
// parent's as parentUUID, with the parent's PCI bus ID and PCIe root: the
// instance must too, or matchAttribute constraints on them never hold.
func TestInstanceIdentitiesBehaveAsOnARealNode(t *testing.T) {
	for _, name := range inventory.ProfileNames() {
		t.Run(name, func(t *testing.T) {
			p := mustProfile(t, name)
			a := mustInstance(t, p, "node-a")
			b := mustInstance(t, p, "node-b")
			gpuOf := func(dev string) string { return strings.SplitN(dev, "-mig-", 2)[0] } // gpu-<minor>
			parent := map[string]string{}                                                  // gpu-<minor> → parentUUID
			bus := map[string]string{}
			seenA := map[string]bool{}
			for _, d := range devices(a.Slices) {
				for _, attr := range []string{"resource.kubernetes.io/pciBusID", "resource.kubernetes.io/pcieRoot"} {
					if str(d, attr) == "<absent>" {
						t.Errorf("%s has no %s", d.Name, attr)
					}
				}
				g := gpuOf(d.Name)
				if b, ok := bus[g]; ok && b != str(d, "resource.kubernetes.io/pciBusID") {
					t.Errorf("%s: pciBusID %s, its GPU's is %s", d.Name, str(d, "resource.kubernetes.io/pciBusID"), b)
				}
				bus[g] = str(d, "resource.kubernetes.io/pciBusID")
				switch str(d, "type") {
				case "gpu":
					u := str(d, "uuid")
					if !strings.HasPrefix(u, "GPU-") || seenA[u] {
						t.Errorf("%s: uuid %q, want a GPU- UUID of its own", d.Name, u)
					}
					seenA[u] = true
					if pu, ok := parent[g]; ok && pu != u {
						t.Errorf("%s: uuid %s, its MIG devices say %s", d.Name, u, pu)
					}
					parent[g] = u
				case "mig":
					pu := str(d, "parentUUID")
					if !strings.HasPrefix(pu, "GPU-") {
						t.Errorf("%s: parentUUID %q", d.Name, pu)
					}
					if prev, ok := parent[g]; ok && prev != pu {
						t.Errorf("%s: parentUUID %s, another device of its GPU has %s", d.Name, pu, prev)
					}
					parent[g] = pu
				}
			}
			if len(parent) != 8 {
				t.Errorf("%d GPU identities, want 8", len(parent))
			}
			distinct := map[string]bool{}
			for _, u := range parent {
				distinct[u] = true
			}
			if len(distinct) != 8 {
				t.Errorf("%d distinct GPU UUIDs, want 8", len(distinct))
			}
			for _, d := range devices(b.Slices) {
				for _, attr := range []string{"uuid", "parentUUID"} {
					if u := str(d, attr); u != "<absent>" && distinct[u] {
						t.Errorf("node-b %s shares %s %s with node-a", d.Name, attr, u)
					}
				}
			}
			if again := mustInstance(t, p, "node-a"); !reflect.DeepEqual(again, a) {
				t.Error("two instantiations of one node differ")
			}
		})
	}
}

func TestInstanceNode(t *testing.T) {
	p := mustProfile(t, "dgxh100")
	p.Labels = map[string]string{"topology.kubernetes.io/zone": "z1", v1.LabelArchStable: "arm64"}
	p.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("224"), v1.ResourcePods: resource.MustParse("110")}
	n := mustInstance(t, p, "h100-7").Node
	want := map[string]string{
		"kubernetes.io/hostname":                  "h100-7",
		"node.kubernetes.io/instance-type":        "dgxh100",
		"kubernetes.io/os":                        "linux",
		"kubernetes.io/arch":                      "arm64", // the template's label wins over the default
		"topology.kubernetes.io/zone":             "z1",
		"nvidia.com/gpu.product":                  "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.count":                    "8",
		"nvidia.com/gpu.memory":                   "81920", // the mock's 80 GiB in MiB
		"nvidia.com/gpu.family":                   "hopper",
		"nvidia.com/gpu.compute.major":            "9",
		"nvidia.com/gpu.compute.minor":            "0",
		"nvidia.com/cuda.driver-version.major":    "550",
		"nvidia.com/cuda.driver-version.minor":    "54",
		"nvidia.com/cuda.driver-version.revision": "15",
		"nvidia.com/cuda.runtime-version.major":   "12",
		"nvidia.com/cuda.runtime-version.minor":   "4",
		"nvidia.com/mig.capable":                  "true",
	}
	if n.Name != "h100-7" || !reflect.DeepEqual(n.Labels, want) {
		t.Errorf("node %s labels\n%v\nwant\n%v", n.Name, n.Labels, want)
	}
	if q := n.Status.Allocatable[v1.ResourceCPU]; q.String() != "224" {
		t.Errorf("allocatable cpu %s, want 224", q.String())
	}
	p.GPUFeatureDiscovery = false
	p.InstanceType = "p5.48xlarge"
	n = mustInstance(t, p, "h100-7").Node
	if _, ok := n.Labels["nvidia.com/gpu.product"]; ok || n.Labels["node.kubernetes.io/instance-type"] != "p5.48xlarge" {
		t.Errorf("labels %v: want no GFD labels and instance type p5.48xlarge", n.Labels)
	}
}

// TestPropRecordedTemplateInstantiatesTheSame: a template instantiated, its
// node recorded and the recording instantiated again gives the same Node and
// slices, for any node name.
func TestPropRecordedTemplateInstantiatesTheSame(t *testing.T) {
	var tmpls []inventory.Template
	for _, name := range inventory.ProfileNames() {
		tmpls = append(tmpls, mustProfile(t, name))
	}
	for _, m := range []inventory.Mode{inventory.ModeGPU, inventory.ModeStaticMIG, inventory.ModeDynamicMIG} {
		n := toyNode(3)
		n.GPUs[1].MIGEnabled = true
		n.GPUs[1].MIGDevices = []inventory.MIGDevice{{GIProfileID: 1, Placement: inventory.Placement{Start: 0, Size: 2}}, {GIProfileID: 0, Placement: inventory.Placement{Start: 2, Size: 1}}}
		tmpls = append(tmpls, inventory.NewTemplate("toy-"+strings.ToLower(string(m)), "", m, n))
	}
	// Node names of one letter, with dashes and digits, and one that is a
	// prefix of the other (the node name is replaced in pool names).
	names := [][2]string{{"a", "b"}, {"gpu-node-17", "gpu-node-1"}, {"n", "nn"}}
	for _, tmpl := range tmpls {
		for _, pair := range names {
			t.Run(tmpl.Name+"/"+pair[0], func(t *testing.T) {
				first := mustInstance(t, tmpl, pair[0])
				// kubectl lists slices by name; give them in reverse to show order does not matter.
				given := slices.Clone(first.Slices)
				slices.Reverse(given)
				rec, err := inventory.RecordTemplate(tmpl.Name, first.Node, given)
				if err != nil {
					t.Fatal(err)
				}
				// The recording survives YAML, as a user keeps it.
				data, err := rec.MarshalYAML()
				if err != nil {
					t.Fatal(err)
				}
				if rec, err = inventory.ParseTemplate(data); err != nil {
					t.Fatal(err)
				}
				for _, name := range pair {
					want := mustInstance(t, tmpl, name)
					got := mustInstance(t, rec, name)
					// Semantic equality: quantities by value, nil and empty lists alike, as
					// the slices are equal objects to the API server.
					if !equality.Semantic.DeepEqual(got.Slices, want.Slices) {
						t.Fatalf("node %s: the recording instantiates other slices: %s", name, firstDiff(yamlOf(t, got.Slices), yamlOf(t, want.Slices)))
					}
					if !reflect.DeepEqual(got.Node.Labels, want.Node.Labels) {
						t.Fatalf("node %s: labels %v, want %v", name, got.Node.Labels, want.Node.Labels)
					}
				}
			})
		}
	}
}

func TestRecordTemplateRejectsWhatIsNotOneNode(t *testing.T) {
	p := mustProfile(t, "dgxh100")
	a := mustInstance(t, p, "node-a").Slices
	b := mustInstance(t, p, "node-b").Slices
	network := a[1].DeepCopy()
	network.Spec.NodeName = nil
	network.Spec.AllNodes = ptrTo(true)
	for _, tc := range []struct {
		name   string
		node   *v1.Node
		slices []*resourceapi.ResourceSlice
		want   string
	}{
		{"no slices", nil, nil, "no ResourceSlices"},
		{"slices of two nodes", nil, []*resourceapi.ResourceSlice{a[0], b[1]}, `spec.nodeName: "node-b", but other slices are of node "node-a"`},
		{"a slice for all nodes", nil, []*resourceapi.ResourceSlice{a[0], network}, "spec.nodeName: a template records node-local slices"},
		{"a node that is not the slices'", mustInstance(t, p, "node-b").Node, a, `Node node-b: metadata.name: the slices are of node "node-a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inventory.RecordTemplate("mine", tc.node, tc.slices)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	if !reflect.DeepEqual(a, mustInstance(t, p, "node-a").Slices) {
		t.Error("RecordTemplate modified its input")
	}
}

func TestParseResourceSlicesReadsKubectlOutput(t *testing.T) {
	sl := mustInstance(t, mustProfile(t, "dgxa100"), "node-a").Slices
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": sl}
	data, err := yaml.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, s := range sl {
		y, _ := yaml.Marshal(s)
		docs = append(docs, string(y))
	}
	for _, tc := range []struct{ name, data string }{
		{"a List", string(data)},
		{"documents", "---\n" + strings.Join(docs, "---\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := inventory.ParseResourceSlices([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if yamlOf(t, got) != yamlOf(t, sl) {
				t.Errorf("parsed %d slices, not the %d printed", len(got), len(sl))
			}
		})
	}
	if _, err := inventory.ParseResourceSlices([]byte("kind: Pod\n")); err == nil || !strings.Contains(err.Error(), `document 0: kind: "Pod"`) {
		t.Errorf("a Pod: err = %v", err)
	}
}

func ptrTo[T any](v T) *T { return &v }

func yamlOf(t interface{ Fatal(...any) }, v any) string {
	y, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(y)
}

// firstDiff is the first line where two texts differ, with its number.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d: %q, want %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}
