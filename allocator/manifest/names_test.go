package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func replicaSetYAML(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: %s, namespace: ns}
spec:
  replicas: %d
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec: {containers: [{name: c, image: i}]}
`, name, replicas)
}

// duplicates lists the namespace/name of every pod that has the name of a pod before it.
func duplicates(o *Objects) []string {
	seen := make(map[string]bool)
	var dups []string
	for _, p := range o.Pods {
		k := p.Namespace + "/" + p.Name
		if seen[k] {
			dups = append(dups, k)
		}
		seen[k] = true
	}
	return dups
}

// TestExpandedNamesAreUniqueAcrossTheInput: two ReplicaSets whose names agree in their first 58
// characters, the part of generateName kube-apiserver keeps, drew overlapping suffixes: 34 of
// their 200 pods had the name of another.
func TestExpandedNamesAreUniqueAcrossTheInput(t *testing.T) {
	const prefix = "training-job-with-a-rather-long-descriptive-name-for-teama"
	input := stream(replicaSetYAML(prefix+"216748", 100), replicaSetYAML(prefix+"163500", 100))
	objs := decodeString(t, input, Options{})
	equal(t, len(objs.Pods), 200)
	equal(t, duplicates(objs), []string(nil))
}

func TestNameConflicts(t *testing.T) {
	constant := func(string, int) string { return "bcdfg" }
	halves := func(_ string, i int) string { return fmt.Sprintf("x%04d", i/2) } // every name drawn twice
	statefulSet := "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x, namespace: ns}\nspec:\n  replicas: 1\n  ordinals: {start: 22222}\n" +
		"  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec: {containers: [{name: c, image: i}]}\n"
	for _, tc := range []struct {
		name, input string
		opts        Options
		want        []string // the pods' names, or
		err         string   // the error
	}{
		{"a name drawn twice is drawn again", replicaSetYAML("web", 3), Options{Suffix: halves},
			[]string{"web-x0000", "web-x0001", "web-x0002"}, ""},
		{"a suffix that never changes gives an error, not a silent replacement", replicaSetYAML("web", 2), Options{Suffix: constant}, nil,
			`input.yaml: document 1 (ReplicaSet ns/web): Pod ns/web-bcdfg: metadata.generateName: name already taken: every one of 8 names drawn from generateName "web-" is taken`},
		{"a pod read later keeps its name; the expanded one is named again",
			stream(replicaSetYAML("web", 1), "apiVersion: v1\nkind: Pod\nmetadata: {name: web-x0000, namespace: ns}\n"), Options{Suffix: halves},
			[]string{"web-x0001", "web-x0000"}, ""},
		{"a pod read with only generateName is named",
			stream("apiVersion: v1\nkind: Pod\nmetadata: {generateName: web-, namespace: ns}\n", "apiVersion: v1\nkind: Pod\nmetadata: {generateName: web-, namespace: ns}\n"),
			Options{Suffix: halves}, []string{"web-x0000", "web-x0001"}, ""},
		{"a StatefulSet's pod cannot be named again",
			stream(replicaSetYAML("x", 1), statefulSet), Options{Suffix: func(string, int) string { return "22222" }}, nil,
			"input.yaml: document 2 (StatefulSet ns/x): Pod ns/x-22222: metadata.name: name already taken by the pod read at input.yaml: document 1 (ReplicaSet ns/x)"},
		{"pods read with their names may repeat them, as kubectl apply replaces",
			stream(podYAML("p"), podYAML("p")), Options{}, []string{"p", "p"}, ""},
		{"names need only be unique in their namespace",
			stream(replicaSetYAML("web", 1), strings.Replace(replicaSetYAML("web", 1), "namespace: ns", "namespace: other", 1)), Options{Suffix: constant},
			[]string{"web-bcdfg", "web-bcdfg"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode(strings.NewReader(tc.input), "input.yaml", tc.opts)
			if tc.err != "" {
				if !errors.Is(err, ErrNameConflict) || err.Error() != tc.err {
					t.Fatalf("got %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range objs.Pods {
				got = append(got, p.Name)
			}
			equal(t, got, tc.want)
		})
	}
}
