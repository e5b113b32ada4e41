package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"
)

// decodeWhole is Decode with every List decoded whole, as one corev1.List: the reference the
// streamed decode of Lists (streamList) must agree with.
func decodeWhole(input []byte, name string, opts Options) (*Objects, error) {
	d := newDecoder(opts)
	d.wholeLists = true
	if err := d.stream(bytes.NewReader(input), name); err != nil {
		return nil, err
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return d.objs, nil
}

// dumpObjects writes every object of o, kind by kind in order, as JSON with its source, and the
// documents skipped.
func dumpObjects(o *Objects) string {
	var b strings.Builder
	add := func(obj runtime.Object) {
		data, err := json.Marshal(obj)
		if err != nil {
			data = []byte(err.Error())
		}
		src, ok := o.Source(obj)
		fmt.Fprintf(&b, "%s @ %s %v\n", data, src, ok)
	}
	for _, x := range o.Pods {
		add(x)
	}
	for _, x := range o.Nodes {
		add(x)
	}
	for _, x := range o.Slices {
		add(x)
	}
	for _, x := range o.Classes {
		add(x)
	}
	for _, x := range o.Claims {
		add(x)
	}
	for _, x := range o.Templates {
		add(x)
	}
	for _, x := range o.TaintRules {
		add(x)
	}
	for _, x := range o.PodGroups {
		add(x)
	}
	for _, x := range o.Workloads {
		add(x)
	}
	for _, x := range o.Namespaces {
		add(x)
	}
	for _, s := range o.Skipped {
		fmt.Fprintf(&b, "skipped %s @ %s\n", s.Kind, s.Source)
	}
	return b.String()
}

// sameAsWhole decodes input as Decode does and as decodeWhole does, and reports how they differ:
// in the error, or in the objects and their sources.
func sameAsWhole(input []byte, opts Options) error {
	streamed, serr := Decode(bytes.NewReader(input), "input", opts)
	whole, werr := decodeWhole(input, "input", opts)
	switch {
	case (serr == nil) != (werr == nil):
		return fmt.Errorf("streamed: %v; whole: %v", serr, werr)
	case serr != nil:
		if serr.Error() != werr.Error() {
			return fmt.Errorf("streamed: %v; whole: %v", serr, werr)
		}
		return nil
	}
	if s, w := dumpObjects(streamed), dumpObjects(whole); s != w {
		return fmt.Errorf("streamed:\n%s\nwhole:\n%s", s, w)
	}
	return nil
}

// fuzzCorpusInputs reads the inputs of a Go fuzz corpus directory (files of one []byte("...")).
func fuzzCorpusInputs(t *testing.T, dir string) [][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var inputs [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if quoted, ok := strings.CutPrefix(line, "[]byte("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(quoted, ")"))
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				inputs = append(inputs, []byte(s))
			}
		}
	}
	return inputs
}

// TestStreamedListsDecodeAsWholeOnTestdata: every manifest of testdata, and every input of the
// fuzz corpus, decodes to the same objects, or the same error, with Lists streamed item by item as
// with Lists decoded whole; each also as one List in JSON and in YAML.
func TestStreamedListsDecodeAsWholeOnTestdata(t *testing.T) {
	var inputs [][]byte
	err := filepath.Walk("testdata", func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".json":
			data, err := os.ReadFile(path)
			inputs = append(inputs, data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, fuzzCorpusInputs(t, "testdata/fuzz/FuzzDecode")...)
	files := len(inputs)
	for _, in := range inputs[:files] {
		// The file's documents as the items of one List, as kubectl get -o json and -o yaml write it.
		if objs, err := Decode(bytes.NewReader(in), "input", Options{NoDefaults: true, NoValidate: true, SkipUnknown: true}); err == nil && objs.Len() > 0 {
			var items []json.RawMessage
			for _, part := range strings.Split(string(in), "\n---") {
				if j, err := yaml.YAMLToJSON([]byte(part)); err == nil && !bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
					items = append(items, j)
				}
			}
			list, _ := json.Marshal(map[string]any{"apiVersion": "v1", "items": items, "kind": "List", "metadata": map[string]any{"resourceVersion": ""}})
			asYAML, _ := yaml.JSONToYAML(list)
			inputs = append(inputs, list, asYAML)
		}
	}
	for i, in := range inputs {
		for _, opts := range []Options{{}, {SkipUnknown: true}, fuzzOptions} {
			if err := sameAsWhole(in, opts); err != nil {
				t.Errorf("input %d (%.60q): %v", i, in, err)
			}
		}
	}
}

// listItems are items of a List, valid and not: the kinds read, a workload, a kind not read, an
// item with an unknown or duplicate field, a quantity with a long exponent, a List and a typed list
// in the List, values that are no object.
var listItems = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","namespace":"ns"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
	`{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}}`,
	`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"s"},"spec":{"driver":"d.example.com","nodeName":"n1","pool":{"name":"p","resourceSliceCount":1},"devices":[{"name":"d0","capacity":{"memory":{"value":"80Gi"}}}]}}`,
	`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"8"}}}`,
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":3,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
	`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"items":"x"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2"},"spec":{"bogus":1,"containers":[{"name":"c","image":"i"}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p3","name":"p4"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
	`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"},"status":{"capacity":{"cpu":"1e-100000"}}}`,
	`{"apiVersion":"v1","metadata":{"name":"nokind"}}`,
	`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"inner"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}`,
	`{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"typed"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}`,
	`null`, `5`, `"x"`, `[]`, `{}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p5","annotations":{"a":"` + strings.Repeat("x", 300) + `"}},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
}

// TestPropStreamedListsDecodeAsWhole: a stream of generated Lists (members in any order, List
// metadata valid or not, items valid or not, another kind than List, items that are no array, a
// key given twice), in JSON and in YAML, decodes to the same objects, or the same error, with the
// Lists streamed item by item as decoded whole.
func TestPropStreamedListsDecodeAsWhole(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var docs []string
		for d := range rapid.IntRange(1, 3).Draw(t, "documents") {
			items := rapid.SliceOfN(rapid.SampledFrom(listItems), 0, 8).Draw(t, fmt.Sprintf("items%d", d))
			members := []string{
				`"apiVersion":` + rapid.SampledFrom([]string{`"v1"`, `"v2"`, `5`}).Draw(t, "apiVersion"),
				`"kind":` + rapid.SampledFrom([]string{`"List"`, `"List"`, `"PodList"`, `"Lis"`, `null`}).Draw(t, "kind"),
				`"items":` + rapid.SampledFrom([]string{"[" + strings.Join(items, ",\n  ") + "]", "null", "{}", `"x"`}).Draw(t, "itemsValue"),
			}
			members = append(members, rapid.SliceOfN(rapid.SampledFrom([]string{
				`"metadata":{"resourceVersion":""}`, `"metadata":{"bogus":1}`, `"bogus":true`, `"items":[]`, `"kind":"List"`,
				`"metadata":{"continue":"1e-100000"}`,
			}), 0, 2).Draw(t, "extra")...)
			if rapid.Bool().Draw(t, "blockYAML") {
				// As kubectl get -o yaml writes a List, its items in flow style.
				doc := "# YAML\napiVersion: v1\nitems:\n"
				for _, item := range items {
					doc += "- " + item + "\n"
				}
				docs = append(docs, doc+"kind: List\n")
				continue
			}
			order := rapid.Permutation(members).Draw(t, "order")
			docs = append(docs, "{"+strings.Join(order, ",\n ")+"}")
		}
		input := strings.Join(docs, "\n")
		if rapid.Bool().Draw(t, "yaml") || strings.Contains(input, "# YAML") {
			// The same documents as a YAML stream (JSON is YAML), as Decode reads YAML.
			input = "# YAML\n" + strings.Join(docs, "\n---\n")
		}
		opts := Options{SkipUnknown: rapid.Bool().Draw(t, "skipUnknown"), MaxPods: rapid.SampledFrom([]int{0, 4}).Draw(t, "maxPods"),
			MaxObjectBytes: rapid.SampledFrom([]int64{0, 200}).Draw(t, "maxObjectBytes")}
		if err := sameAsWhole([]byte(input), opts); err != nil {
			t.Fatalf("%s\n%v", input, err)
		}
	})
}

// FuzzStreamedLists: any input decodes the same with Lists streamed as with Lists decoded whole.
func FuzzStreamedLists(f *testing.F) {
	f.Add([]byte(`{"apiVersion": "v1", "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, null], "kind": "List"}`))
	f.Add([]byte("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {containers: [{name: c, image: i}]}\nkind: List\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := sameAsWhole(data, fuzzOptions); err != nil {
			t.Fatal(err)
		}
	})
}

// TestHostileLists: Lists built to exhaust the loader or to confuse the item-by-item decode get
// the error the whole decode gives, an *Error naming the file, the document, the item and the
// object where there is one.
func TestHostileLists(t *testing.T) {
	pod := func(name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","image":"i"}]}}`
	}
	list := func(items ...string) string {
		return `{"apiVersion":"v1","kind":"List","items":[` + strings.Join(items, ",") + `]}`
	}
	nested := pod("deep")
	for range 200 {
		nested = list(nested)
	}
	for _, tc := range []struct {
		name, input string
		opts        Options
		is          error
		want        string // in the error
	}{
		{"a million empty items", list(strings.Repeat("{},", 1<<20) + "{}"), Options{MaxBytes: 1 << 20}, ErrTooLarge, "input: too large: more than 1048576 bytes"},
		{"a million empty items under the limit", list(strings.Repeat("{},", 1<<20) + "{}"), Options{}, ErrDecode, "input: document 1, item 1: "},
		{"Lists nested 200 deep", nested, Options{}, nil, ""},
		{"a List cut in an item", list(pod("a"), pod("b"))[:150], Options{}, ErrDecode, "input: document 1: cannot decode"},
		{"a List in a List with a bad item", list(pod("a"), list(pod("b"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c"},"spec":{"bogus":1}}`)), Options{}, ErrUnknownField, "input: document 1, item 2: Pod c: spec.bogus: unknown field"},
		{"an item over MaxObjectBytes", list(pod("a"), pod(strings.Repeat("b", 300))), Options{MaxObjectBytes: 200}, ErrTooLarge, "input: document 1, item 2: Pod bbb"},
		{"an item with a long exponent", list(pod("a"), `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"status":{"capacity":{"cpu":"1e-100000"}}}`), Options{}, ErrDecode, "input: document 1: cannot decode: \"1e-100000\": exponent out of range"},
		{"YAML items sharing an anchor", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: &m {name: a, labels: {x: z}}, spec: {bogus: 1}}\n- {apiVersion: v1, kind: Pod, metadata: *m}\n", Options{}, ErrUnknownField, "input: document 1, item 1: Pod a: spec.bogus: unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := sameAsWhole([]byte(tc.input), tc.opts); err != nil {
				t.Fatal(err)
			}
			objs, err := Decode(strings.NewReader(tc.input), "input", tc.opts)
			if tc.is == nil {
				if err != nil || len(objs.Pods) != 1 {
					t.Fatalf("got %v, want the one pod", err)
				}
				return
			}
			var e *Error
			if !errors.Is(err, tc.is) || !errors.As(err, &e) || e.Source.File != "input" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an *Error with %q wrapping %v", err, tc.want, tc.is)
			}
		})
	}
}

// TestYAMLListCutsDecodeAsWhole: YAML Lists whose lines would mislead a cut at each "- " decode as
// the whole List does: quoted scalars that span lines, block scalars, comments, items indented,
// CRLF line ends, another sequence after the items, a flow-style entry, an entry cut by the end of
// the document.
func TestYAMLListCutsDecodeAsWhole(t *testing.T) {
	pod := "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: %s\n  spec:\n    containers: [{name: c, image: i}]\n"
	two := fmt.Sprintf(pod, "a") + fmt.Sprintf(pod, "b")
	for _, tc := range []struct{ name, input string }{
		{"kubectl's layout", "apiVersion: v1\nitems:\n" + two + "kind: List\nmetadata:\n  resourceVersion: \"\"\n"},
		{"items indented", "apiVersion: v1\nkind: List\nitems:\n" + strings.ReplaceAll("\n"+two, "\n", "\n  ")[1:] + "\n"},
		{"comments and blank lines", "apiVersion: v1\nkind: List\nitems:\n# first\n\n" + fmt.Sprintf(pod, "a") + "# between\n\n" + fmt.Sprintf(pod, "b") + "# after\n"},
		{"a quoted scalar over lines", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n    annotations: {x: \"one\n- two\"}\n  spec: {containers: [{name: c, image: i}]}\n" + fmt.Sprintf(pod, "b")},
		{"a plain scalar over lines", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n    annotations:\n      x: one\n        - two\n  spec: {containers: [{name: c, image: i}]}\n"},
		{"a block scalar", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n    annotations:\n      x: |\n        - not an item\n        items:\n  spec: {containers: [{name: c, image: i}]}\n" + fmt.Sprintf(pod, "b")},
		{"CRLF", strings.ReplaceAll("apiVersion: v1\nkind: List\nitems:\n"+two, "\n", "\r\n")},
		{"a sequence after the items", "apiVersion: v1\nkind: List\nitems:\n" + two + "bogus:\n- 1\n- 2\n"},
		{"items given twice", "apiVersion: v1\nkind: List\nitems:\n" + two + "items:\n" + fmt.Sprintf(pod, "c")},
		{"a flow entry and an empty one", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: i}]}}\n-\n"},
		{"an entry cut by the end", "apiVersion: v1\nkind: List\nitems:\n" + fmt.Sprintf(pod, "a") + "- apiVersion: v1\n  kind: \"Pod\n"},
		{"an anchor used in another entry", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: &m {name: a}\n  spec: &s {containers: [{name: c, image: i}]}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: b}\n  spec: *s\n"},
		{"a typed list", "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: c, image: i}]}\n"},
		{"a duplicate key in an entry", "apiVersion: v1\nkind: List\nitems:\n" + fmt.Sprintf(pod, "a") + "- apiVersion: v1\n  kind: Pod\n  kind: Pod\n  metadata: {name: b}\n"},
		{"a tab", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n\tkind: Pod\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, opts := range []Options{{}, {MaxBytes: 400}} {
				if err := sameAsWhole([]byte(tc.input), opts); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestLongYAMLListsDecodeAsWhole: a YAML List long enough to be converted on several goroutines
// decodes as the whole List does, with an entry that fails (a bad field, a key given twice, an entry
// cut short, a tag) first, in the middle or last, and under a MaxBytes that the sum of the entries
// passes but not any one of them.
func TestLongYAMLListsDecodeAsWhole(t *testing.T) {
	pod := func(i int) string {
		return fmt.Sprintf("- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p%d\n    labels: {a: 'yes', b: on, c: 80Gi}\n  spec:\n    containers: [{name: c, image: i}]\n", i)
	}
	bad := map[string]string{
		"bogus field": "- apiVersion: v1\n  kind: Pod\n  metadata: {name: bad}\n  spec: {bogus: 1}\n",
		"key twice":   "- apiVersion: v1\n  kind: Pod\n  kind: Pod\n  metadata: {name: bad}\n",
		"cut short":   "- apiVersion: v1\n  kind: \"Pod\n",
		"a tag":       "- apiVersion: v1\n  kind: !!str Pod\n  metadata: {name: bad}\n  spec: {containers: [{name: c, image: i}]}\n",
	}
	const n = 600
	for name, entry := range bad {
		for _, at := range []int{0, n / 2, n - 1} {
			var b strings.Builder
			b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
			for i := range n {
				if i == at {
					b.WriteString(entry)
					continue
				}
				b.WriteString(pod(i))
			}
			for _, opts := range []Options{{}, {MaxBytes: int64(b.Len()) + 1000}, {MaxBytes: int64(b.Len()) / 2}} {
				if err := sameAsWhole([]byte(b.String()), opts); err != nil {
					t.Errorf("%s at %d, MaxBytes %d: %.2000s", name, at, opts.MaxBytes, err)
				}
			}
		}
	}
}

// TestLongJSONListsDecodeAsWhole: a JSON List long enough for its items to be decoded ahead on
// other goroutines (listItems) decodes as the whole List does, with an item that fails (a bad
// field, a key given twice, a long exponent, no kind, a workload over MaxPods) first, at a batch's
// edge, in the middle or last, and with the slices handed to TakeSlice in order.
func TestLongJSONListsDecodeAsWhole(t *testing.T) {
	pod := func(i int) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%d"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, i)
	}
	bad := map[string]string{
		"bogus field":   `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad"},"spec":{"bogus":1}}`,
		"key twice":     `{"apiVersion":"v1","kind":"Pod","kind":"Pod","metadata":{"name":"bad"}}`,
		"long exponent": `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"status":{"capacity":{"cpu":"1e-100000"}}}`,
		"no kind":       `{"apiVersion":"v1","metadata":{"name":"nokind"}}`,
		"null":          `null`,
		"too many pods": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":5,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
	}
	const n = 3*itemBatch + 7
	for name, item := range bad {
		for _, at := range []int{0, itemBatch - 1, itemBatch, n / 2, n - 1} {
			items := make([]string, n)
			for i := range items {
				items[i] = pod(i)
			}
			items[at] = item
			input := `{"apiVersion":"v1","kind":"List","items":[` + strings.Join(items, ",") + "]}"
			for _, opts := range []Options{{}, {SkipUnknown: true, MaxPods: 4}} {
				if err := sameAsWhole([]byte(input), opts); err != nil {
					t.Errorf("%s at %d: %.2000s", name, at, err)
				}
			}
		}
	}
	// Slices among the pods reach TakeSlice in the order of the input.
	items := make([]string, n)
	for i := range items {
		items[i] = pod(i)
		if i%3 == 0 {
			items[i] = fmt.Sprintf(`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"s%d"},"spec":{"driver":"d.example.com","nodeName":"n%d","pool":{"name":"n%d","resourceSliceCount":1},"devices":[{"name":"d0"}]}}`, i, i, i)
		}
	}
	var names []string
	opts := Options{TakeSlice: func(s *resourceapi.ResourceSlice, src Source) error {
		if want := fmt.Sprintf("s%d", src.Item-1); s.Name != want {
			return fmt.Errorf("%s at item %d", s.Name, src.Item)
		}
		names = append(names, s.Name)
		return nil
	}}
	if _, err := Decode(strings.NewReader(`{"apiVersion":"v1","kind":"List","items":[`+strings.Join(items, ",")+"]}"), "input", opts); err != nil || len(names) != (n+2)/3 {
		t.Fatalf("got %v with %d slices, want %d in order", err, len(names), (n+2)/3)
	}
}
