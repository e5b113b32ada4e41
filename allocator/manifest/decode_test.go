package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

func decodeString(t *testing.T, input string, opts Options) *Objects {
	t.Helper()
	objs, err := Decode(strings.NewReader(input), "input.yaml", opts)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return objs
}

func one[T any](t *testing.T, list []T) {
	t.Helper()
	if len(list) != 1 {
		t.Fatalf("got %d objects, want 1", len(list))
	}
}

func equal[T any](t *testing.T, got, want T) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

// names lists the objects as "Kind namespace/name" with their sources, in the order of each kind.
func names(o *Objects) []string {
	var out []string
	add := func(obj runtime.Object) {
		src, _ := o.Source(obj)
		out = append(out, objectName(obj, nil)+" @ "+src.String())
	}
	for _, p := range o.Pods {
		add(p)
	}
	for _, c := range o.Claims {
		add(c)
	}
	for _, c := range o.Classes {
		add(c)
	}
	return out
}

// TestDecodeForms reads the same objects as kubectl writes them in every form: a YAML stream, a
// List in YAML and in JSON, a JSON stream, a typed list; the order is the input's and each object
// knows its document and item.
func TestDecodeForms(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []string
	}{
		{"YAML stream with comments and empty documents", `# leading comment
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: ns}
---
# only a comment
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec: {devices: {requests: []}}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: ns}
`, []string{
			"Pod ns/a @ input.yaml: document 1",
			"Pod ns/b @ input.yaml: document 3",
			"ResourceClaim ns/c @ input.yaml: document 2",
		}},
		{"YAML List as kubectl get -o yaml writes it", `
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a, namespace: ns}
- apiVersion: resource.k8s.io/v1beta1
  kind: ResourceClaim
  metadata: {name: c, namespace: ns}
  spec: {devices: {requests: [{name: r, deviceClassName: x}]}}
- apiVersion: v1
  kind: Pod
  metadata: {name: b, namespace: ns}
`, []string{
			"Pod ns/a @ input.yaml: document 1, item 1",
			"Pod ns/b @ input.yaml: document 1, item 3",
			"ResourceClaim ns/c @ input.yaml: document 1, item 2",
		}},
		{"JSON List as kubectl get -o json writes it", `{
    "apiVersion": "v1",
    "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}}
    ],
    "kind": "List",
    "metadata": {"resourceVersion": ""}
}`, []string{
			"Pod ns/a @ input.yaml: document 1, item 1",
			"DeviceClass gpu @ input.yaml: document 1, item 2",
		}},
		{"JSON stream of objects", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}}
{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}}
  {"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "ns"}}]}`, []string{
			"Pod ns/a @ input.yaml: document 1",
			"Pod ns/b @ input.yaml: document 3, item 1",
			"DeviceClass gpu @ input.yaml: document 2",
		}},
		{"typed list as the API returns it", `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimList
items:
- metadata: {name: c1, namespace: ns}
  spec: {devices: {requests: []}}
- metadata: {name: c2, namespace: ns}
  spec: {devices: {requests: []}}
`, []string{
			"ResourceClaim ns/c1 @ input.yaml: document 1, item 1",
			"ResourceClaim ns/c2 @ input.yaml: document 1, item 2",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := decodeString(t, tc.input, Options{})
			if got := names(objs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestDecodeErrors checks that every error names the file, the document, the object and the field.
func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name  string
		input string
		opts  Options
		want  []string // the lines of the error message
		is    error
	}{
		{"unknown field deep in a request", `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: train, namespace: ns}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu, cont: 1}
`, Options{}, []string{
			"input.yaml: document 2: ResourceClaim ns/train: spec.devices.requests[0].exactly.cont: unknown field",
		}, ErrUnknownField},
		{"unknown field of a v1beta1 object names the path in v1beta1", `
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices: [{name: g, basic: {atributes: {}}}]
`, Options{}, []string{
			"input.yaml: document 1: ResourceSlice s: spec.devices[0].basic.atributes: unknown field",
		}, ErrUnknownField},
		{"two unknown fields are two errors", `
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu, nmae: x}
spec: {selector: []}
`, Options{}, []string{
			"input.yaml: document 1: DeviceClass gpu: metadata.nmae: unknown field",
			"input.yaml: document 1: DeviceClass gpu: spec.selector: unknown field",
		}, ErrUnknownField},
		{"duplicate field in YAML", `
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: a
      name: b
      exactly: {deviceClassName: gpu}
`, Options{}, []string{
			"input.yaml: document 1: ResourceClaim ns/c: spec.devices.requests[0].name: duplicate field",
		}, ErrDuplicateField},
		{"duplicate field in JSON", `{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"a": "1"}, "labels": {"b": "2"}}}`,
			Options{}, []string{
				"input.yaml: document 1: Node n: metadata.labels: duplicate field",
			}, ErrDuplicateField},
		{"unknown field in an item of a List", `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: a}
- apiVersion: v1
  kind: Node
  metadata: {name: b}
  spec: {unschedulable: true, taint: []}
`, Options{}, []string{
			"input.yaml: document 1, item 2: Node b: spec.taint: unknown field",
		}, ErrUnknownField},
		{"duplicate field in an item of a List", `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: a}
- apiVersion: v1
  kind: Node
  metadata: {name: b, labels: {x: "1", x: "2"}}
`, Options{}, []string{
			"input.yaml: document 1, item 2: Node b: metadata.labels.x: duplicate field",
		}, ErrDuplicateField},
		{"unknown field in an item of a typed list", `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimList
items:
- metadata: {name: c1, namespace: ns}
  spec: {devices: {requests: []}}
- metadata: {name: c2, namespace: ns}
  spec: {devices: {request: []}}
`, Options{}, []string{
			"input.yaml: document 1, item 2: ResourceClaim ns/c2: spec.devices.request: unknown field",
		}, ErrUnknownField},
		{"unknown kind", `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: ns}
`, Options{}, []string{
			"input.yaml: document 2: ConfigMap ns/cm: unknown kind v1 ConfigMap",
		}, ErrUnknownKind},
		{"custom resource", `
apiVersion: resource.nvidia.com/v1beta1
kind: ComputeDomain
metadata: {name: cd}
`, Options{}, []string{
			"input.yaml: document 1: unknown kind resource.nvidia.com/v1beta1 ComputeDomain",
		}, ErrUnknownKind},
		{"a kind of the scheme the loader does not read", `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: ns}
`, Options{}, []string{
			"input.yaml: document 1: ConfigMap ns/cm: unknown kind v1 ConfigMap",
		}, ErrUnknownKind},
		{"value of the wrong type", `
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec: {devices: {requests: [{name: a, exactly: {deviceClassName: gpu, count: many}}]}}
`, Options{}, nil, ErrDecode},
		{"missing kind", `
apiVersion: v1
metadata: {name: p}
`, Options{}, []string{
			"input.yaml: document 1: kind: cannot decode: required field is missing",
		}, ErrDecode},
		{"YAML syntax error", "apiVersion: v1\nkind: Pod\n  metadata: [\n", Options{}, nil, ErrDecode},
		{"a workload of more pods than MaxPods", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  replicas: 2000000000
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i}]}
`, Options{}, []string{
			"input.yaml: document 1: Deployment ns/web: spec.replicas: too many pods: 2000000000 pods, more than Options.MaxPods (100000)",
		}, ErrTooManyPods},
		{"Validate refuses an object", `
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
`, Options{Validate: func(obj runtime.Object) error {
			return errors.New("spec.selectors: required value")
		}}, []string{
			"input.yaml: document 1: DeviceClass gpu: invalid object: spec.selectors: required value",
		}, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.input), "input.yaml", tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %q", err, tc.is)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %q is not an *Error", err)
			}
			if tc.want != nil {
				if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got\n%s\nwant\n%s", err, strings.Join(tc.want, "\n"))
				}
			} else if !strings.HasPrefix(err.Error(), "input.yaml: document 1: ") {
				t.Errorf("error %q does not name the file and document", err)
			}
		})
	}
}

func TestDecodeSkipUnknown(t *testing.T) {
	objs := decodeString(t, `
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
`, Options{SkipUnknown: true})
	one(t, objs.Pods)
	one(t, objs.Namespaces) // read, for the admin-access label
	want := []Skipped{
		{Source: Source{File: "input.yaml", Document: 2}, Kind: "example.com/v1 Widget"},
	}
	equal(t, objs.Skipped, want)
}

func TestDecodeNamespace(t *testing.T) {
	input := `
apiVersion: v1
kind: Pod
metadata: {name: p}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
---
apiVersion: v1
kind: Pod
metadata: {name: q, namespace: other}
`
	for _, tc := range []struct {
		namespace, want string
	}{{"", "default"}, {"team-a", "team-a"}} {
		objs := decodeString(t, input, Options{Namespace: tc.namespace})
		equal(t, objs.Pods[0].Namespace, tc.want)
		equal(t, objs.Pods[1].Namespace, "other")
		equal(t, objs.Classes[0].Namespace, "") // cluster-scoped
	}
}

func TestDecodeDefaultsAreOnByDefault(t *testing.T) {
	input := `
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec: {devices: {requests: [{name: gpu, deviceClassName: gpu}]}}
`
	got := decodeString(t, input, Options{}).Claims[0].Spec.Devices.Requests[0].Exactly
	equal(t, got.AllocationMode, resourceapi.DeviceAllocationModeExactCount)
	equal(t, got.Count, int64(1))
	raw := decodeString(t, input, Options{NoDefaults: true, NoValidate: true}).Claims[0].Spec.Devices.Requests[0].Exactly
	equal(t, raw.AllocationMode, resourceapi.DeviceAllocationMode(""))
	equal(t, raw.Count, int64(0))
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: ns}\n"
	}
	write("b.yaml", pod("b"))
	write("a/z.yml", pod("z"))
	write("a/y.json", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "y", "namespace": "ns"}}`)
	write("a/notes.txt", "not a manifest")
	write("c.YAML", pod("c"))
	file := filepath.Join(dir, "b.yaml")

	objs, err := Load([]string{dir, "-", file}, Options{Stdin: strings.NewReader(pod("stdin"))})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range objs.Pods {
		src, _ := objs.Source(p)
		got = append(got, p.Name+" @ "+strings.TrimPrefix(src.File, dir+"/"))
	}
	want := []string{"y @ a/y.json", "z @ a/z.yml", "b @ b.yaml", "c @ c.YAML", "stdin @ -", "b @ b.yaml"}
	equal(t, got, want)

	if _, err := Load([]string{filepath.Join(dir, "missing.yaml")}, Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want an error wrapping os.ErrNotExist", err)
	}
}

// TestDecodeDeterministic reads the same input twice and expects the same objects, names of
// expanded pods included.
func TestDecodeDeterministic(t *testing.T) {
	input := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i}]}
`
	a := decodeString(t, input, Options{})
	b := decodeString(t, input, Options{})
	equal(t, a.Pods, b.Pods)
}

// TestDemoManifests loads the demo manifests of the DRA drivers. Every document is read or,
// for the kinds Kubernetes 1.37 does not serve, skipped; the claims, templates
// and taint rules are as many as the files declare.
func TestDemoManifests(t *testing.T) {
	objs, err := Load([]string{"testdata/demo"}, Options{SkipUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range objs.Skipped {
		switch s.Kind {
		case "scheduling.k8s.io/v1alpha2 PodGroup", "resource.k8s.io/v1alpha3 ResourceClaimTemplate":
		default:
			t.Errorf("%s: skipped %s", s.Source, s.Kind)
		}
	}
	count := func(kind string) int {
		n := 0
		re := regexp.MustCompile(`(?m)^kind: ` + kind + `\s*$`)
		w := walker{seen: make(map[string]bool)}
		files, err := w.files("testdata/demo")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			n += len(re.FindAll(data, -1))
		}
		return n
	}
	equal(t, len(objs.Claims), count("ResourceClaim"))
	// One ResourceClaimTemplate is of resource.k8s.io/v1alpha3, which 1.37 does not serve.
	equal(t, len(objs.Templates), count("ResourceClaimTemplate")-1)
	equal(t, len(objs.TaintRules), count("DeviceTaintRule"))
	if pods := count("Pod"); len(objs.Pods) <= pods {
		t.Errorf("got %d pods, want more than the %d Pod documents: the Deployments have pods too", len(objs.Pods), pods)
	}
	for _, c := range objs.Claims {
		for _, r := range c.Spec.Devices.Requests {
			if r.Exactly == nil && r.FirstAvailable == nil {
				t.Errorf("ResourceClaim %s/%s: request %s has neither exactly nor firstAvailable", c.Namespace, c.Name, r.Name)
			}
		}
	}
}

func TestDemoManifestWithoutAPIVersion(t *testing.T) {
	_, err := Load([]string{"testdata/bad/4-pod-not-scheduled.yaml"}, Options{})
	want := "testdata/bad/4-pod-not-scheduled.yaml: document 1: Pod: apiVersion: cannot decode: required field is missing"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// What kube-apiserver would refuse on create is refused by the loader too, with the file, document,
// object and field; NoValidate passes it through as written.
func TestDecodeValidates(t *testing.T) {
	input := `
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu, count: -1}}]}}
`
	_, err := Decode(strings.NewReader(input), "claims.yaml", Options{})
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want an *Error wrapping ErrInvalid", err)
	}
	equal(t, e.Object, "ResourceClaim ns/c")
	equal(t, e.Field, "spec.devices.requests[0].exactly.count")
	for _, want := range []string{"claims.yaml", "document 2", "must be greater than zero"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	objs, err := Decode(strings.NewReader(input), "claims.yaml", Options{NoValidate: true})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, objs.Claims[0].Spec.Devices.Requests[0].Exactly.Count, int64(-1))
}

// A number with an exponent of five or more digits is refused before it is parsed: apimachinery's
// ParseQuantity would spend minutes on 1e-100000000. Other strings that merely contain such a run (a
// CEL expression, a name) are read as usual.
func TestDecodeRefusesLongExponents(t *testing.T) {
	for _, q := range []string{`"1e-100000000"`, `"0E100000000"`, `1e-100000000`} {
		input := `{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
"spec": {"driver": "gpu.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n",
"devices": [{"name": "gpu-0", "capacity": {"memory": {"value": ` + q + `}}}]}}`
		_, err := Decode(strings.NewReader(input), "slice.json", Options{NoValidate: true})
		if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "exponent out of range") {
			t.Errorf("%s: got %v, want an exponent error", q, err)
		}
	}
	input := `{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"},
"spec": {"selectors": [{"cel": {"expression": "device.capacity['gpu.example.com'].memory.compareTo(quantity('1e12345')) < 0"}}]}}`
	if _, err := Decode(strings.NewReader(input), "class.json", Options{}); err != nil {
		t.Errorf("a selector mentioning 1e12345: %v", err)
	}
}
