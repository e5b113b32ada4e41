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
