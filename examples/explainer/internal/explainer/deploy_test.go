package explainer

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// deployObjects decodes deploy/*.yaml strictly (an unknown or misspelt field is an error).
func deployObjects(t *testing.T) []runtime.Object {
	t.Helper()
	files, err := filepath.Glob("../../deploy/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("deploy manifests: %v (found %d)", err, len(files))
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []runtime.Object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := yaml.NewYAMLReader(bufioReader(data))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			obj, _, err := dec.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			out = append(out, obj)
		}
	}
	return out
}

// The ClusterRole grants what the controller does (list and watch every kind it informs, write
// events and pod status), the Deployment's probes and flags name what the program serves and reads.
func TestDeployManifests(t *testing.T) {
	var role *rbacv1.ClusterRole
	var dep *appsv1.Deployment
	for _, o := range deployObjects(t) {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			role = o
		case *appsv1.Deployment:
			dep = o
		}
	}
	if role == nil || dep == nil {
		t.Fatalf("deploy/ lacks a ClusterRole or a Deployment")
	}
	allows := func(group, resource, verb string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, need := range []struct{ group, resource, verb string }{
		{"resource.k8s.io", "resourceslices", "watch"}, {"resource.k8s.io", "deviceclasses", "watch"},
		{"resource.k8s.io", "resourceclaims", "watch"}, {"resource.k8s.io", "resourceclaimtemplates", "watch"},
		{"resource.k8s.io", "devicetaintrules", "watch"}, {"scheduling.k8s.io", "podgroups", "watch"},
		{"", "pods", "list"}, {"", "pods", "watch"}, {"", "nodes", "list"}, {"", "nodes", "watch"},
		{"", "events", "create"}, {"", "events", "list"}, {"", "pods/status", "patch"},
	} {
		if !allows(need.group, need.resource, need.verb) {
			t.Errorf("ClusterRole does not allow %s on %s.%s", need.verb, need.resource, need.group)
		}
	}
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if v == "*" || v == "delete" || v == "update" {
				t.Errorf("ClusterRole grants %s on %v: more than the controller needs", v, r.Resources)
			}
		}
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if *dep.Spec.Replicas < 2 || !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("Deployment: %d replicas, args %v; want two replicas under leader election", *dep.Spec.Replicas, c.Args)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("Deployment: probes %+v, %+v; want /healthz and /readyz", c.LivenessProbe, c.ReadinessProbe)
	}
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }
