package manifest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"
)

// yamlScalars are plain values that YAML 1.1 (go.yaml.in/yaml/v2) and YAML 1.2 read differently, or
// that look like numbers, timestamps or words of booleans and null, with strings that need escaping.
var yamlScalars = []string{
	"", "~", "null", "Null", "NULL", "nULL", "y", "Y", "yes", "YES", "yEs", "on", "On", "oN", "off", "OFF", "n", "no",
	"true", "True", "tRUE", "false", "0", "-0", "+0", "00", "007", "12", "-12", "+12", "1_000", "0x1F", "0o17", "0b101",
	"-0b1", "1e3", "1.5", "1.", ".5", ".inf", "-.inf", ".nan", "123456789012345678", "-123456789012345678",
	"1234567890123456789", "12345678901234567890", "99999999999999999999", "80Gi", "1Ti", "500m", "1e", "0xZ",
	"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2002-12-14 21:59:43", "1:20", "abc", "a<b", "x&y", "é", "a\u2028b",
	"a b", "-a", "-", "+", "=", "<<", "/x", "$x", "a'b", "Hopper", "gpu.example.com", "model", "+.inf", "-.Inf", "+1",
	"a\tb", "\x01", "\u00ff", "\\", "\"",
}

// yamlValue renders s as a scalar of the style drawn, in flow context.
func yamlValue(t *rapid.T, s, label string) string {
	switch rapid.IntRange(0, 2).Draw(t, label) {
	case 1:
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	case 2:
		return fmt.Sprintf("%q", s)
	}
	return s
}

// yamlFlowNode draws a flow node: a scalar, a sequence or a mapping.
func yamlFlowNode(t *rapid.T, depth int) string {
	kind := rapid.IntRange(0, 2).Draw(t, "kind")
	if depth > 2 {
		kind = 0
	}
	switch kind {
	case 1:
		var items []string
		for range rapid.IntRange(0, 3).Draw(t, "items") {
			items = append(items, yamlFlowNode(t, depth+1))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case 2:
		var pairs []string
		for range rapid.IntRange(0, 4).Draw(t, "pairs") {
			key := yamlValue(t, rapid.SampledFrom(yamlScalars).Draw(t, "key"), "keyStyle")
			pairs = append(pairs, key+": "+yamlFlowNode(t, depth+1))
		}
		return "{" + strings.Join(pairs, ", ") + "}"
	}
	return yamlValue(t, rapid.SampledFrom(yamlScalars).Draw(t, "scalar"), "style")
}

// TestPropEntryJSONAsSigsYAML: whenever entryJSON writes the JSON of a List's entry from the tree
// parsed, it is byte for byte what sigs.k8s.io/yaml.YAMLToJSON makes of the entry (plain scalars
// resolved as YAML 1.1, keys sorted, strings escaped as encoding/json escapes them).
func TestPropEntryJSONAsSigsYAML(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var entry string
		if rapid.Bool().Draw(t, "block") {
			entry = "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: " + yamlValue(t, rapid.SampledFrom(yamlScalars).Draw(t, "name"), "nameStyle") +
				"\n    labels: " + yamlFlowNode(t, 1) + "\n  spec:\n    " + yamlValue(t, rapid.SampledFrom(yamlScalars).Draw(t, "key"), "keyStyle") + ": " + yamlFlowNode(t, 1) + "\n"
		} else {
			entry = "- " + yamlFlowNode(t, 0) + "\n"
		}
		root, _, _, empty, err := parseYAMLTree([]byte(entry), DefaultMaxBytes)
		if err != nil || empty {
			t.Skip("not YAML")
		}
		var b bytes.Buffer
		item, ok := entryJSON(&b, root, []byte(entry))
		if !ok {
			return
		}
		want, err := yaml.YAMLToJSON([]byte(entry))
		if err != nil {
			t.Fatalf("%q: entryJSON wrote %s, sigs.k8s.io/yaml fails: %v", entry, item, err)
		}
		if got := "[" + string(item) + "]"; got != string(want) {
			t.Fatalf("%q:\nentryJSON %s\nsigs.k8s.io/yaml %s", entry, got, want)
		}
	})
}

// TestEntryJSONDeclines: what entryJSON does not resolve exactly as go.yaml.in/yaml/v2 is left to
// sigs.k8s.io/yaml: tags, merge keys, anchors, floats and other numbers, keys that are no strings,
// keys given twice.
func TestEntryJSONDeclines(t *testing.T) {
	for _, entry := range []string{
		"- {a: !!str 1}", "- {a: ! 1}", "- {<<: {a: 1}}", "- {a: &x 1}", "- {a: 1.5}", "- {a: 0x10}", "- {a: 1_0}",
		"- {a: .inf}", "- {a: 007}", "- {a: 12345678901234567890}", "- {1: a}", "- {yes: a}", "- {null: a}", "- {a: 1, a: 2}",
		"- {a: 1e3}", "- {a: 2001-12-14}", "- {a: -.inf}", "- {a: +1}",
	} {
		root, _, _, _, err := parseYAMLTree([]byte(entry), DefaultMaxBytes)
		if err != nil {
			t.Fatalf("%s: %v", entry, err)
		}
		var b bytes.Buffer
		if item, ok := entryJSON(&b, root, []byte(entry)); ok {
			t.Errorf("%s: written as %s, want declined", entry, item)
		}
	}
	for entry, want := range map[string]string{
		"- {b: yes, a: 'yes', c: on, d: ~, e: -12, f: 80Gi, g: \"a<b\", h: [1, n], i: 2001-12-14t21:59:43Z}": `{"a":"yes","b":true,"c":true,"d":null,"e":-12,"f":"80Gi","g":"a\u003cb","h":[1,false],"i":"2001-12-14t21:59:43Z"}`,
		"- kind: Pod\n  metadata:\n    name: p\n    labels: {}\n  spec:\n    x: |\n      two\n      lines\n": `{"kind":"Pod","metadata":{"labels":{},"name":"p"},"spec":{"x":"two\nlines\n"}}`,
	} {
		root, _, _, _, err := parseYAMLTree([]byte(entry), DefaultMaxBytes)
		if err != nil {
			t.Fatalf("%s: %v", entry, err)
		}
		var b bytes.Buffer
		if item, ok := entryJSON(&b, root, []byte(entry)); !ok || string(item) != want {
			t.Errorf("%q: got %s (%v), want %s", entry, item, ok, want)
		}
	}
}

// FuzzEntryJSON: for any entry of a YAML List that entryJSON writes from the tree, sigs.k8s.io/yaml
// converts the entry too (yaml/v2 parses it) and to the same bytes.
func FuzzEntryJSON(f *testing.F) {
	f.Add([]byte("- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p\n    labels: {a: 'yes', b: on, c: 80Gi}\n  spec:\n    containers: [{name: c, image: i}]\n"))
	f.Add([]byte("- {b: yes, a: 'yes', c: on, d: ~, e: -12, f: 80Gi, g: \"a<b\", h: [1, n], i: 2001-12-14t21:59:43Z}\n"))
	f.Add([]byte("- kind: Pod\n  metadata:\n    name: p\n  spec:\n    x: |\n      two\n      lines\n    y: >-\n      folded\n      text\n"))
	f.Fuzz(func(t *testing.T, entry []byte) {
		root, _, _, empty, err := parseYAMLTree(entry, 1<<20)
		if err != nil || empty {
			return
		}
		var b bytes.Buffer
		item, ok := entryJSON(&b, root, entry)
		if !ok {
			return
		}
		want, err := yaml.YAMLToJSON(entry)
		if err != nil {
			t.Fatalf("%q: entryJSON wrote %s, sigs.k8s.io/yaml fails: %v", entry, item, err)
		}
		if got := "[" + string(item) + "]"; got != string(want) {
			t.Fatalf("%q:\nentryJSON %s\nsigs.k8s.io/yaml %s", entry, got, want)
		}
	})
}
