package manifest

import (
	"errors"
	"strings"
	"testing"
)

// TestDecodeRefusesCountsAndNamesTheAPIServerRefuses: values kube-apiserver refuses on create do
// not silently decide how many pods are read or how they are named.
func TestDecodeRefusesCountsAndNamesTheAPIServerRefuses(t *testing.T) {
	const template = "  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec: {containers: [{name: c, image: i}]}\n"
	for _, tc := range []struct {
		name, input, want string
	}{
		{"negative replicas", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: ns}\nspec:\n  replicas: -1\n" + template,
			"Deployment ns/web: spec.replicas: invalid object: spec.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{"negative ReplicaSet replicas", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, namespace: ns}\nspec:\n  replicas: -3\n" + template,
			"ReplicaSet ns/rs: spec.replicas: invalid object: spec.replicas: Invalid value: -3: must be greater than or equal to 0"},
		{"negative StatefulSet replicas", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s, namespace: ns}\nspec:\n  replicas: -2\n" + template,
			"StatefulSet ns/s: spec.replicas: invalid object: spec.replicas: Invalid value: -2: must be greater than or equal to 0"},
		{"negative parallelism", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ns}\nspec:\n  parallelism: -1\n  template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}\n",
			"Job ns/j: spec.parallelism: invalid object: spec.parallelism: Invalid value: -1: must be greater than or equal to 0"},
		{"negative completions", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ns}\nspec:\n  completions: -4\n  template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}\n",
			"Job ns/j: spec.completions: invalid object: spec.completions: Invalid value: -4: must be greater than or equal to 0"},
		{"negative first ordinal", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s, namespace: ns}\nspec:\n  replicas: 2\n  ordinals: {start: -5}\n" + template,
			"StatefulSet ns/s: spec.ordinals.start: invalid object: spec.ordinals.start: Invalid value: -5: must be greater than or equal to 0"},
		{"a workload name that is no DNS subdomain", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: Web, namespace: ns}\nspec:\n" + template,
			"Deployment ns/Web: metadata.name: invalid object: metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain"},
		{"a workload without a name", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {namespace: ns}\nspec:\n" + template,
			"DaemonSet: metadata.name: invalid object: metadata.name: Required value: name is required"},
		{"a namespace that is no DNS label", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: a.b}\nspec:\n" + template,
			"Deployment a.b/web: metadata.namespace: invalid object: metadata.namespace: Invalid value: \"a.b\": must not contain dots"},
		{"a pod without a name", "apiVersion: v1\nkind: Pod\nmetadata: {namespace: ns}\nspec: {containers: [{name: c, image: i}]}\n",
			"Pod: metadata.name: invalid object: metadata.name: Required value: name or generateName is required"},
		{"a pod name that is no DNS subdomain", "apiVersion: v1\nkind: Pod\nmetadata: {name: a_b}\nspec: {containers: [{name: c, image: i}]}\n",
			"Pod default/a_b: metadata.name: invalid object: metadata.name: Invalid value: \"a_b\": a lowercase RFC 1123 subdomain"},
		{"a node without a name", "apiVersion: v1\nkind: Node\nmetadata: {labels: {a: b}}\n",
			"Node: metadata.name: invalid object: metadata.name: Required value: name is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.input), "input.yaml", Options{})
			want := "input.yaml: document 1: " + tc.want
			if !errors.Is(err, ErrInvalid) || err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got %v\nwant %s...", err, want)
			}
			// With NoValidate, as for input from an API server, nothing is checked.
			if _, err := Decode(strings.NewReader(tc.input), "input.yaml", Options{NoValidate: true}); errors.Is(err, ErrInvalid) {
				t.Errorf("NoValidate: %v", err)
			}
		})
	}
}
