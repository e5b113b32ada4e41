package apiserver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/allocator/validation"
	"github.com/dralloc/dralloc/fuzz"
	"github.com/dralloc/dralloc/inventory"
)

// localValidators are dralloc's own validators, one per kind, compared with the API server's verdicts; a kind
// without one only has its API server verdicts checked. Another validator plugs in with one line here. The
// API server defaults an object before it validates it, and so do these (manifest.Default, as the loader).
var localValidators = map[string]func(runtime.Object) field.ErrorList{
	"ResourceSlice": func(o runtime.Object) field.ErrorList {
		return inventory.ValidateSlice(manifest.Default(o, time.Now()).(*resourceapi.ResourceSlice))
	},
	"ResourceClaim":   defaultedValidation,
	"DeviceClass":     defaultedValidation,
	"DeviceTaintRule": defaultedValidation,
}

func defaultedValidation(o runtime.Object) field.ErrorList {
	return validation.Object(manifest.Default(o, time.Now()), validation.Options{})
}

// deliberatelyStricter are the broken cases the API server stores and dralloc's validation refuses on
// purpose, as allocator/validation's package documentation says: quantities on which arithmetic is unbounded,
// negative capacities and counters, and an attribute name with two slashes (upstream accepts it, with a TODO
// to refuse it; no CEL expression can name such an attribute as a domain and a name).
var deliberatelyStricter = map[string]bool{
	"ResourceSlice/attribute name with two slashes": true,
	"ResourceSlice/capacity 1E100000000":            true,
	"ResourceSlice/negative capacity":               true,
	"ResourceSlice/negative counter":                true,
	"ResourceSlice/counter 1E100000000":             true,
	"ResourceSlice/counter 0E100000000":             true,
	"ResourceSlice/consumed counter 1E100000000":    true,
	"ResourceClaim/capacity request 1E100000000":    true,
	"ResourceClaim/capacity request 0E100000000":    true,
}

func localVerdict(obj runtime.Object) (verdict, bool) {
	validate, ok := localValidators[kindOf(obj)]
	if !ok {
		return verdict{}, false
	}
	return verdictOf(validate(obj)), true
}

// verdictOf is the verdict of a local validator's errors.
func verdictOf(errs field.ErrorList) verdict {
	v := verdict{rejected: len(errs) > 0}
	for _, e := range errs {
		if !slices.Contains(v.fields, e.Field) {
			v.fields = append(v.fields, e.Field)
		}
	}
	slices.Sort(v.fields)
	if v.rejected {
		v.reason = errs.ToAggregate().Error()
	}
	return v
}

// named gives obj a fresh name when it has none and puts it in namespace ns when its kind is namespaced.
func named(obj runtime.Object, ns string) runtime.Object {
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	if m.GetName() == "" {
		m.SetName(uniqueName(strings.ToLower(kindOf(obj))))
	}
	switch obj.(type) {
	case *resourceapi.ResourceClaim, *resourceapi.ResourceClaimTemplate, *corev1.Pod:
		m.SetNamespace(ns)
	}
	return obj
}

// TestBrokenObjects sends deliberately broken objects to the API server: each must get the verdict Kubernetes'
// validation gives it (rejected naming the field, or accepted). Where dralloc has a validator for the kind, its
// verdict is compared: the agreement per kind and every disagreement are logged.
func TestBrokenObjects(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	ns := namespace(t, c)
	tables := []struct {
		kind  string
		cases []brokenCase
	}{
		{"ResourceSlice", brokenSlices},
		{"ResourceClaim", brokenClaims},
		{"DeviceClass", brokenClasses},
		{"DeviceTaintRule", brokenRules},
	}
	var summary []string
	for _, table := range tables {
		agree, sameField := 0, 0
		var differ []string
		_, compared := localValidators[table.kind]
		for _, tc := range table.cases {
			t.Run(table.kind+"/"+tc.name, func(t *testing.T) {
				obj := named(tc.obj, ns)
				_, err := create(ctx, c, obj)
				api, err := apiVerdict(err)
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				t.Logf("kube-apiserver: %v", api)
				switch {
				case tc.field == "" && api.rejected:
					t.Errorf("kube-apiserver rejected what Kubernetes accepts: %s", api.reason)
				case tc.field != "" && !api.names(tc.field):
					t.Errorf("kube-apiserver: %v, want rejected at %s (%s)", api, tc.field, api.reason)
				}
				local, ok := localVerdict(obj)
				if !ok {
					return
				}
				t.Logf("local: %v", local)
				switch {
				case local.rejected != api.rejected && local.rejected && deliberatelyStricter[table.kind+"/"+tc.name]:
					differ = append(differ, fmt.Sprintf("%s %q: kube-apiserver %v, local %v (deliberately stricter)", table.kind, tc.name, api, local))
				case local.rejected != api.rejected:
					// What the API server refuses and dralloc accepts would be allocated from although no
					// cluster can hold it; what it stores and dralloc refuses could not be scheduled.
					t.Errorf("kube-apiserver %v, local %v", api, local)
					differ = append(differ, fmt.Sprintf("%s %q: kube-apiserver %v, local %v", table.kind, tc.name, api, local))
				case !api.rejected || slices.ContainsFunc(local.fields, api.names):
					agree++
					sameField++
				default:
					agree++
					t.Errorf("both reject, kube-apiserver at %s, local at %s", strings.Join(api.fields, ", "), strings.Join(local.fields, ", "))
					differ = append(differ, fmt.Sprintf("%s %q: both reject, kube-apiserver at %s, local at %s", table.kind, tc.name,
						strings.Join(api.fields, ", "), strings.Join(local.fields, ", ")))
				}
			})
		}
		if compared {
			summary = append(summary, fmt.Sprintf("%s: local validation agrees on %d of %d verdicts (%d naming the same field)",
				table.kind, agree, len(table.cases), sameField))
			summary = append(summary, differ...)
		} else {
			summary = append(summary, fmt.Sprintf("%s: %d verdicts checked, no local validator", table.kind, len(table.cases)))
		}
	}
	t.Logf("differential validation:\n%s", strings.Join(summary, "\n"))
}

// TestGeneratedObjectsAreAccepted: every object the fuzz generators draw is valid as the API server sees it —
// slices, classes, taint rules, pending claims (and templates with their specs), and allocated claims with
// their status.
func TestGeneratedObjectsAreAccepted(t *testing.T) {
	c := client(t)
	rapid.Check(t, func(rt *rapid.T) {
		cl := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		createCluster(rt, c, cl)
	})
}

// createCluster creates every object of a generated cluster under fresh names (the cluster-scoped ones) and in
// a fresh namespace (the claims), and writes the allocated claims' status.
func createCluster(t fataler, c kubernetes.Interface, cl *fuzz.Cluster) string {
	t.Helper()
	ctx := context.Background()
	ns := namespace(t, c)
	prefix := uniqueName("g")
	var objs []runtime.Object
	for _, s := range cl.Slices {
		objs = append(objs, s)
	}
	for _, x := range cl.Classes {
		objs = append(objs, x)
	}
	for _, x := range cl.TaintRules {
		objs = append(objs, x)
	}
	for _, x := range cl.Claims {
		tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: x.Name}}
		tmpl.Spec.Spec = *x.Spec.DeepCopy()
		objs = append(objs, x, tmpl)
	}
	for _, x := range cl.Allocated {
		objs = append(objs, x)
	}
	for _, obj := range objs {
		obj = obj.DeepCopyObject()
		m, _ := meta.Accessor(obj)
		m.SetName(prefix + "-" + m.GetName())
		var status *resourceapi.ResourceClaimStatus
		if claim, ok := obj.(*resourceapi.ResourceClaim); ok {
			status = claim.Status.DeepCopy()
			claim.Status = resourceapi.ResourceClaimStatus{}
		}
		obj = named(obj, ns)
		got, err := create(ctx, c, obj)
		if err != nil {
			t.Fatalf("create generated %s %s: %v", kindOf(obj), m.GetName(), err)
		}
		if status != nil && status.Allocation != nil {
			claim := got.(*resourceapi.ResourceClaim)
			claim.Status = *status
			if _, err := c.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("update status of generated ResourceClaim %s: %v", claim.Name, err)
			}
		}
	}
	return ns
}
