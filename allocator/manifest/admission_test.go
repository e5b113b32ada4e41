package manifest

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

const kata = `
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead:
  podFixed: {cpu: 250m, memory: 120Mi}
scheduling:
  nodeSelector: {runtime: kata}
  tolerations:
  - {key: runtime, operator: Equal, value: kata, effect: NoSchedule}
---
`

func tolerations(ts ...corev1.Toleration) []corev1.Toleration { return ts }

func TestAdmission(t *testing.T) {
	kataToleration := corev1.Toleration{Key: "runtime", Operator: corev1.TolerationOpEqual, Value: "kata", Effect: corev1.TaintEffectNoSchedule}
	sixty := int64(60)
	cases := []struct {
		name          string
		input         string
		overhead      corev1.ResourceList
		nodeSelector  map[string]string
		tolerations   []corev1.Toleration
		runtimeClasss int
	}{
		{"a pod without a RuntimeClass tolerates not-ready and unreachable for 300s", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: i}]}
`, nil, nil, tolerations(notReadyToleration, unreachableToleration), 0},
		{"a pod's own NoExecute toleration of not-ready is kept, unreachable is added", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i}]
  tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 60}]
`, nil, nil, tolerations(corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &sixty}, unreachableToleration), 0},
		{"a toleration of every taint covers both", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i}]
  tolerations: [{operator: Exists}]
`, nil, nil, tolerations(corev1.Toleration{Operator: corev1.TolerationOpExists}), 0},
		// The RuntimeClass's overhead, node selector joined to the pod's, its toleration after the
		// two DefaultTolerationSeconds added (that plugin runs first).
		{"the RuntimeClass gives its overhead, node selector and tolerations", kata + `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  runtimeClassName: kata
  nodeSelector: {zone: a}
  containers: [{name: c, image: i}]
`, list("cpu", "250m", "memory", "120Mi"), map[string]string{"zone": "a", "runtime": "kata"},
			tolerations(notReadyToleration, unreachableToleration, kataToleration), 1},
		{"a RuntimeClass read after the pod counts, an overhead equal to it is accepted, a selector equal to it too", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  runtimeClassName: kata
  overhead: {cpu: 250m, memory: 120Mi}
  nodeSelector: {runtime: kata}
  containers: [{name: c, image: i}]
---
` + kata, list("cpu", "250m", "memory", "120Mi"), map[string]string{"runtime": "kata"},
			tolerations(notReadyToleration, unreachableToleration, kataToleration), 1},
		// MergeTolerations: the pod's toleration of every runtime taint covers the RuntimeClass's.
		{"a pod's toleration that covers the RuntimeClass's is kept alone", kata + `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  runtimeClassName: kata
  tolerations: [{key: runtime, operator: Exists}]
  containers: [{name: c, image: i}]
`, list("cpu", "250m", "memory", "120Mi"), map[string]string{"runtime": "kata"},
			tolerations(corev1.Toleration{Key: "runtime", Operator: corev1.TolerationOpExists}, notReadyToleration, unreachableToleration), 1},
		{"a RuntimeClass's toleration that covers the pod's replaces it", `
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: wide}
handler: runc
scheduling:
  tolerations: [{key: runtime, operator: Exists}]
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  runtimeClassName: wide
  tolerations: [{key: runtime, operator: Equal, value: kata}]
  containers: [{name: c, image: i}]
`, nil, nil, tolerations(notReadyToleration, unreachableToleration, corev1.Toleration{Key: "runtime", Operator: corev1.TolerationOpExists}), 1},
		// A pod read back from a cluster was admitted when it was created: as stored.
		{"a stored pod is read as it is, its RuntimeClass not needed", `
apiVersion: v1
kind: Pod
metadata: {name: p, resourceVersion: "42"}
spec:
  runtimeClassName: gone
  overhead: {cpu: 100m}
  containers: [{name: c, image: i}]
`, list("cpu", "100m"), nil, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode(strings.NewReader(tc.input), "input.yaml", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(objs.Pods) != 1 || len(objs.RuntimeClasses) != tc.runtimeClasss {
				t.Fatalf("%d pods, %d RuntimeClasses", len(objs.Pods), len(objs.RuntimeClasses))
			}
			spec := objs.Pods[0].Spec
			if !apiequality.Semantic.DeepEqual(spec.Overhead, tc.overhead) {
				t.Errorf("overhead %v, want %v", spec.Overhead, tc.overhead)
			}
			if !apiequality.Semantic.DeepEqual(spec.NodeSelector, tc.nodeSelector) {
				t.Errorf("nodeSelector %v, want %v", spec.NodeSelector, tc.nodeSelector)
			}
			if !apiequality.Semantic.DeepEqual(spec.Tolerations, tc.tolerations) {
				t.Errorf("tolerations %s\nwant        %s", rendered(spec.Tolerations), rendered(tc.tolerations))
			}
		})
	}
}

func TestAdmissionRefuses(t *testing.T) {
	cases := []struct {
		name, input, want string
	}{
		{"a RuntimeClass not in the input", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {runtimeClassName: gvisor, containers: [{name: c, image: i}]}
`, `input.yaml: document 1: Pod default/p: spec.runtimeClassName: invalid object: spec.runtimeClassName: Forbidden: pod rejected: RuntimeClass "gvisor" not found`},
		{"an overhead other than the RuntimeClass's", kata + `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {runtimeClassName: kata, overhead: {cpu: 1}, containers: [{name: c, image: i}]}
`, `input.yaml: document 2: Pod default/p: spec.overhead: invalid object: spec.overhead: Forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
		{"an overhead without a RuntimeClass", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {overhead: {cpu: 1}, containers: [{name: c, image: i}]}
`, `input.yaml: document 1: Pod default/p: spec.overhead: invalid object: spec.overhead: Forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{"a node selector that says otherwise than the RuntimeClass's", kata + `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {runtimeClassName: kata, nodeSelector: {runtime: runc}, containers: [{name: c, image: i}]}
`, `input.yaml: document 2: Pod default/p: spec.nodeSelector[runtime]: invalid object: spec.nodeSelector[runtime]: Forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; pod.spec.nodeSelector[runtime] = runc`},
		{"a Deployment's pods name the Deployment", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {runtimeClassName: gvisor, containers: [{name: c, image: i}]}
`, `input.yaml: document 1 (Deployment default/web): Pod default/web-`},
		{"a RuntimeClass without a handler", `
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: x}
handler: ""
`, `input.yaml: document 1: RuntimeClass x: handler: invalid object: handler: Invalid value: "": `},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.input), "input.yaml", Options{})
			if err == nil {
				t.Fatal("no error")
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
				t.Errorf("error %q is not an *Error wrapping ErrInvalid", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q\nwant      %q", err, tc.want)
			}
		})
	}
}

func TestAdmissionOffWithoutDefaults(t *testing.T) {
	objs, err := Decode(strings.NewReader(`
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {runtimeClassName: gvisor, containers: [{name: c, image: i}]}
`), "input.yaml", Options{NoDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := objs.Pods[0].Spec.Tolerations; got != nil {
		t.Errorf("tolerations %v, want none", got)
	}
}
