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
		{"an extended resource requested without a limit", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, resources: {requests: {example.com/gpu: 1}}}]}\n",
			"Pod default/p: spec.containers[0].resources.limits[example.com/gpu]: invalid object: spec.containers[0].resources.limits[example.com/gpu]: Required value: Limit must be set for non overcommitable resources"},
		{"an extended resource request other than its limit", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, resources: {requests: {example.com/gpu: 1}, limits: {example.com/gpu: 2}}}]}\n",
			"Pod default/p: spec.containers[0].resources.requests[example.com/gpu]: invalid object: spec.containers[0].resources.requests[example.com/gpu]: Invalid value: \"1\": must be equal to example.com/gpu limit"},
		{"a fractional extended resource", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {initContainers: [{name: c, image: i, resources: {limits: {example.com/gpu: 500m}}}], containers: [{name: c, image: i}]}\n",
			"Pod default/p: spec.initContainers[0].resources.limits[example.com/gpu]: invalid object: spec.initContainers[0].resources.limits[example.com/gpu]: Invalid value: \"500m\": must be an integer"},
		{"a workload's fractional extended resource", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: ns}\nspec:\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec: {containers: [{name: c, image: i, resources: {limits: {example.com/gpu: 1.5}}}]}\n",
			"Deployment ns/web: spec.template.spec.containers[0].resources.limits[example.com/gpu]: invalid object"},
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

// TestDecodeRefusesAdminAccessOutsideAdminNamespaces: a claim or template asking for admin access in a
// namespace of the input without the label resource.kubernetes.io/admin-access: "true" is refused, as
// kube-apiserver refuses it; with the label, or with the namespace not in the input, it is read.
func TestDecodeRefusesAdminAccessOutsideAdminNamespaces(t *testing.T) {
	const claim = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: watch, namespace: ops}\nspec: {devices: {requests: [{name: all, exactly: {deviceClassName: gpu, allocationMode: All, adminAccess: true}}]}}\n"
	const template = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: watch, namespace: ops}\nspec: {spec: {devices: {requests: [{name: all, exactly: {deviceClassName: gpu, allocationMode: All, adminAccess: true}}]}}}\n"
	const plain = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ops}\n---\n"
	const admin = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ops, labels: {resource.kubernetes.io/admin-access: \"true\"}}\n---\n"
	for _, tc := range []struct {
		name, input, want string
	}{
		{"claim", plain + claim, "input.yaml: document 2: ResourceClaim ops/watch: spec.devices.requests[0].exactly.adminAccess: invalid object: spec.devices.requests[0].exactly.adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"},
		{"template", plain + template, "input.yaml: document 2: ResourceClaimTemplate ops/watch: spec.spec.devices.requests[0].exactly.adminAccess: invalid object"},
		{"labelled namespace", admin + claim, ""},
		{"namespace not in the input", claim, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.input), "input.yaml", Options{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.want != "" && (!errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("got %v\nwant %s...", err, tc.want)
			}
		})
	}
}
