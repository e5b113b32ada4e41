package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func deploymentYAML(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: ns}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i}]}
`, name, replicas)
}

func daemonSetYAML(name string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: %s, namespace: ns}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: i}]}
`, name)
}

func nodeYAML(name string) string {
	return "apiVersion: v1\nkind: Node\nmetadata: {name: " + name + "}\n"
}

func stream(docs ...string) string { return strings.Join(docs, "---\n") }

// TestDecodeBoundsThePodsOfTheWholeInput: Options.MaxPods bounds the pods of all workloads
// together, DaemonSets included, not one workload at a time.
func TestDecodeBoundsThePodsOfTheWholeInput(t *testing.T) {
	var forty []string
	for i := range 40 {
		forty = append(forty, deploymentYAML(fmt.Sprintf("web%d", i), 100000))
	}
	var pairs []string
	for i := range 11 {
		pairs = append(pairs, strings.Replace(daemonSetYAML(fmt.Sprintf("d%d", i)), "spec: {containers", "spec: {nodeSelector: {pool: none}, containers", 1))
	}
	for i := range 10 {
		pairs = append(pairs, nodeYAML(fmt.Sprintf("n%d", i)))
	}
	selective := stream(pairs...)
	for _, tc := range []struct {
		name, input string
		opts        Options
		want        string
	}{
		{"40 Deployments of 100,000 replicas, 4 million pods from 9 KB", stream(forty...), Options{MaxPods: 10},
			"input.yaml: document 1: Deployment ns/web0: spec.replicas: too many pods: 100000 pods, more than Options.MaxPods (10)"},
		{"Deployments each within the bound, not together", stream(deploymentYAML("a", 6), deploymentYAML("b", 5)), Options{MaxPods: 10},
			"input.yaml: document 2: Deployment ns/b: spec.replicas: too many pods: 5 pods, and 6 expanded before, more than Options.MaxPods (10) for the whole input"},
		{"DaemonSets on every Node", stream(daemonSetYAML("a"), daemonSetYAML("b"), daemonSetYAML("c"),
			nodeYAML("n1"), nodeYAML("n2"), nodeYAML("n3"), nodeYAML("n4")), Options{MaxPods: 10},
			"input.yaml: document 3: DaemonSet ns/c: too many pods: it runs on more than 2 of the 4 nodes, which with the 8 pods expanded before is more than Options.MaxPods (10) for the whole input"},
		{"DaemonSets and Nodes to check in pairs, though no DaemonSet runs anywhere", selective, Options{MaxPods: 1},
			"input.yaml: document 1: DaemonSet ns/d0: too many pods: 11 DaemonSets on 10 nodes are 110 to check, more than 100 times Options.MaxPods (1)"},
		{"a DaemonSet after Deployments", stream(deploymentYAML("a", 9), daemonSetYAML("b"), nodeYAML("n1"), nodeYAML("n2")), Options{MaxPods: 10},
			"input.yaml: document 2: DaemonSet ns/b: too many pods: it runs on more than 1 of the 2 nodes, which with the 9 pods expanded before is more than Options.MaxPods (10) for the whole input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.input), "input.yaml", tc.opts)
			if !errors.Is(err, ErrTooManyPods) || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
	// Exactly MaxPods is fine.
	objs, err := Decode(strings.NewReader(stream(deploymentYAML("a", 6), daemonSetYAML("b"), nodeYAML("n1"), nodeYAML("n2"), deploymentYAML("c", 2))), "input.yaml", Options{MaxPods: 10})
	if err != nil || len(objs.Pods) != 10 {
		t.Fatalf("got %v, %v; want 10 pods", objs, err)
	}
}

// envDeployment is a Deployment whose template has vars environment variables: small as a file,
// large once copied into every pod.
func envDeployment(name string, replicas, vars int) string {
	var env strings.Builder
	for i := range vars {
		fmt.Fprintf(&env, "{name: V%d},", i)
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: ns}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i, env: [%s]}]}
`, name, replicas, strings.TrimSuffix(env.String(), ","))
}

// TestDecodeBoundsTheSizeOfExpandedPods: every pod copies its workload's template, so the pods'
// size is bounded by Options.MaxExpandedBytes, counted before any pod is made.
func TestDecodeBoundsTheSizeOfExpandedPods(t *testing.T) {
	ds := strings.Replace(daemonSetYAML("agent"), "{name: c, image: i}", "{name: c, image: i, env: [{name: A}, {name: B}]}", 1)
	for _, tc := range []struct {
		name, input string
		opts        Options
		want        string
	}{
		{"100,000 pods of 10,000 variables, 17 GB from 140 KB", envDeployment("web", 100000, 10000), Options{},
			"input.yaml: document 1: Deployment ns/web: spec.template: too large: 100000 pods of a 168999-byte template, with the 0 bytes of the pods expanded before more than Options.MaxExpandedBytes (1073741824)"},
		{"the pods of two workloads together", stream(envDeployment("a", 10, 10), envDeployment("b", 10, 10)), Options{MaxExpandedBytes: 4000},
			"input.yaml: document 2: Deployment ns/b: spec.template: too large: 10 pods of a 249-byte template, with the 2490 bytes of the pods expanded before more than Options.MaxExpandedBytes (4000)"},
		{"a DaemonSet", stream(ds, nodeYAML("n1"), nodeYAML("n2"), nodeYAML("n3")), Options{MaxExpandedBytes: 300},
			"input.yaml: document 1: DaemonSet ns/agent: spec.template: too large: 3 pods of a 137-byte template, with the 0 bytes of the pods expanded before more than Options.MaxExpandedBytes (300)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.input), "input.yaml", tc.opts)
			if !errors.Is(err, ErrTooLarge) || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestDecodeBoundsObjects: one object is at most Options.MaxObjectBytes of JSON, as kube-apiserver
// takes at most 3 MiB in one request; a List of many objects may be larger.
func TestDecodeBoundsObjects(t *testing.T) {
	big := "apiVersion: v1\nkind: Node\nmetadata: {name: big, annotations: {a: " + strings.Repeat("x", 3<<20) + "}}\n"
	_, err := Decode(strings.NewReader(stream(nodeYAML("small"), big)), "input.yaml", Options{})
	want := "input.yaml: document 2: Node big: too large: 3145810 bytes of JSON, more than Options.MaxObjectBytes (3145728)"
	if !errors.Is(err, ErrTooLarge) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	var items []string
	for i := range 4 {
		items = append(items, fmt.Sprintf(`{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n%d"}}`, i))
	}
	list := `{"apiVersion": "v1", "kind": "List", "items": [` + strings.Join(items, ", ") + `]}`
	objs, err := Decode(strings.NewReader(list), "input.json", Options{MaxObjectBytes: 100})
	if err != nil || len(objs.Nodes) != 4 {
		t.Fatalf("a List larger than MaxObjectBytes: got %v, %v; want its 4 Nodes", objs, err)
	}
	items[2] = `{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2", "labels": {"a": "` + strings.Repeat("x", 100) + `"}}}`
	list = `{"apiVersion": "v1", "kind": "List", "items": [` + strings.Join(items, ", ") + `]}`
	_, err = Decode(strings.NewReader(list), "input.json", Options{MaxObjectBytes: 100})
	if !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "input.json: document 1, item 3: Node n2: too large: ") {
		t.Errorf("an item over MaxObjectBytes: got %v", err)
	}
}
