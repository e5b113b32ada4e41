package explainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// kustomize builds the kustomization in dir as kubectl apply -k does, with the given ordering, and
// decodes every object strictly (an unknown or misspelt field is an error).
func kustomize(t *testing.T, dir string, reorder krusty.ReorderOption) []runtime.Object {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = reorder
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []runtime.Object
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatalf("%s: %v", r.CurId(), err)
		}
		obj, _, err := dec.Decode(y, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", r.CurId(), err)
		}
		out = append(out, obj)
	}
	return out
}

const deployDir = "../../deploy"

func kindName(o runtime.Object) string {
	m, err := metaAccessor(o)
	if err != nil {
		return fmt.Sprintf("%T", o)
	}
	return o.GetObjectKind().GroupVersionKind().Kind + " " + m.GetName()
}

func metaAccessor(o runtime.Object) (metav1.Object, error) {
	m, ok := o.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", o)
	}
	return m, nil
}

// kubectl apply -k applies in the order the build emits: the namespace must come before every object
// in it, and the ServiceAccount before the Deployment whose pods run as it. Both orders a kustomize
// build may use (the kustomization's own, and kustomize's legacy sort) are checked.
func TestKustomizationOrder(t *testing.T) {
	for _, reorder := range []krusty.ReorderOption{krusty.ReorderOptionNone, krusty.ReorderOptionLegacy} {
		objs := kustomize(t, deployDir, reorder)
		var order []string
		for _, o := range objs {
			order = append(order, kindName(o))
		}
		pos := func(kn string) int {
			i := slices.Index(order, kn)
			if i < 0 {
				t.Fatalf("%s: build lacks %s: %v", reorder, kn, order)
			}
			return i
		}
		ns := pos("Namespace dralloc-system")
		if ns != 0 {
			t.Errorf("%s: the namespace is object %d of %v; want it first", reorder, ns, order)
		}
		if pos("ServiceAccount dralloc-explainer") > pos("Deployment dralloc-explainer") {
			t.Errorf("%s: the Deployment comes before its ServiceAccount: %v", reorder, order)
		}
		for _, o := range objs {
			m, _ := metaAccessor(o)
			if _, isNS := o.(*v1.Namespace); !isNS && m.GetNamespace() != "" && m.GetNamespace() != "dralloc-system" {
				t.Errorf("%s: %s is in namespace %q", reorder, kindName(o), m.GetNamespace())
			}
		}
	}
}

// pinnedTag is a release's version, the tag the image is published under.
var pinnedTag = regexp.MustCompile(`:v[0-9]+\.[0-9]+\.[0-9]+$`)

// The Deployment runs two replicas under leader election with the lease timings as flags that
// client-go's leader election accepts, a pinned image pulled only when absent, probes on what the
// program serves, and a PodDisruptionBudget that lets one replica go at a time.
func TestDeployment(t *testing.T) {
	var dep *appsv1.Deployment
	var pdb *policyv1.PodDisruptionBudget
	for _, o := range kustomize(t, deployDir, krusty.ReorderOptionNone) {
		switch o := o.(type) {
		case *appsv1.Deployment:
			dep = o
		case *policyv1.PodDisruptionBudget:
			pdb = o
		}
	}
	if dep == nil || pdb == nil {
		t.Fatalf("the build lacks a Deployment (%v) or a PodDisruptionBudget (%v)", dep != nil, pdb != nil)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if *dep.Spec.Replicas < 2 || !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("Deployment: %d replicas, args %v; want two replicas under leader election", *dep.Spec.Replicas, c.Args)
	}
	if !pinnedTag.MatchString(c.Image) || c.ImagePullPolicy != v1.PullIfNotPresent {
		t.Errorf("image %q pulled %q; want a version tag (vX.Y.Z) pulled IfNotPresent", c.Image, c.ImagePullPolicy)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("Deployment: probes %+v, %+v; want /healthz and /readyz", c.LivenessProbe, c.ReadinessProbe)
	}
	lease := map[string]time.Duration{}
	for _, a := range c.Args {
		for _, f := range []string{"--leader-elect-lease-duration=", "--leader-elect-renew-deadline=", "--leader-elect-retry-period="} {
			if v, ok := strings.CutPrefix(a, f); ok {
				d, err := time.ParseDuration(v)
				if err != nil {
					t.Errorf("%s: %v", a, err)
				}
				lease[f] = d
			}
		}
	}
	dur, renew, retry := lease["--leader-elect-lease-duration="], lease["--leader-elect-renew-deadline="], lease["--leader-elect-retry-period="]
	if len(lease) != 3 {
		t.Errorf("Deployment sets lease timings %v; want all three flags", lease)
	}
	// What leaderelection.NewLeaderElector requires: duration > renew deadline > 1.2 × retry period.
	if dur <= renew || float64(renew) <= 1.2*float64(retry) || retry <= 0 {
		t.Errorf("lease duration %v, renew deadline %v, retry period %v: client-go refuses them", dur, renew, retry)
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if pdb.Namespace != dep.Namespace || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("PodDisruptionBudget %s/%s selects %v; want the Deployment's pods %v", pdb.Namespace, pdb.Name, sel, dep.Spec.Template.Labels)
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || pdb.Spec.MinAvailable.IntValue() >= int(*dep.Spec.Replicas) {
		t.Errorf("PodDisruptionBudget minAvailable %v with %d replicas; want at least one kept and one evictable", pdb.Spec.MinAvailable, *dep.Spec.Replicas)
	}
}

type grant struct{ group, resource, verb string }

func (g grant) String() string { return g.verb + " " + g.resource + "." + g.group }

// grants expands rules into one grant per group, resource and verb; a wildcard is an error.
func grants(t *testing.T, name string, rules []rbacv1.PolicyRule, into map[grant]bool) {
	t.Helper()
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			t.Errorf("%s grants non-resource URLs %v", name, r.NonResourceURLs)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" {
						t.Errorf("%s grants a wildcard: %v %v %v", name, r.APIGroups, r.Resources, r.Verbs)
					}
					into[grant{g, res, v}] = true
				}
			}
		}
	}
}

func callsIn(scopes ...callScope) map[grant]bool {
	out := map[grant]bool{}
	for _, c := range apiCalls {
		if slices.Contains(scopes, c.scope) {
			out[grant{c.group, c.resource, c.verb}] = true
		}
	}
	return out
}

// compareGrants fails for a grant no code path uses and for a call no rule grants.
func compareGrants(t *testing.T, what string, granted, used map[grant]bool) {
	t.Helper()
	for g := range granted {
		if !used[g] {
			t.Errorf("%s grants %s, which no code path uses (apicalls.go)", what, g)
		}
	}
	for g := range used {
		if !granted[g] {
			t.Errorf("%s does not grant %s, which the code calls (apicalls.go)", what, g)
		}
	}
}

// rolesOf collects what the build grants the explainer's ServiceAccount: cluster-wide through
// ClusterRoleBindings, and in the namespace through RoleBindings.
func rolesOf(t *testing.T, objs []runtime.Object) (cluster, namespaced map[grant]bool, args []string) {
	t.Helper()
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: "dralloc-explainer", Namespace: "dralloc-system"}
	clusterRoles, roles := map[string]*rbacv1.ClusterRole{}, map[string]*rbacv1.Role{}
	var cbs []*rbacv1.ClusterRoleBinding
	var rbs []*rbacv1.RoleBinding
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			clusterRoles[o.Name] = o
		case *rbacv1.Role:
			roles[o.Name] = o
		case *rbacv1.ClusterRoleBinding:
			cbs = append(cbs, o)
		case *rbacv1.RoleBinding:
			rbs = append(rbs, o)
		case *appsv1.Deployment:
			args = o.Spec.Template.Spec.Containers[0].Args
		}
	}
	cluster, namespaced = map[grant]bool{}, map[grant]bool{}
	for _, b := range cbs {
		if !slices.Contains(b.Subjects, sa) {
			continue
		}
		r := clusterRoles[b.RoleRef.Name]
		if b.RoleRef.Kind != "ClusterRole" || r == nil {
			t.Errorf("ClusterRoleBinding %s: role %s %s is not in the build", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
			continue
		}
		grants(t, "ClusterRole "+r.Name, r.Rules, cluster)
	}
	for _, b := range rbs {
		if !slices.Contains(b.Subjects, sa) {
			continue
		}
		r := roles[b.RoleRef.Name]
		if b.RoleRef.Kind != "Role" || r == nil || r.Namespace != "dralloc-system" {
			t.Errorf("RoleBinding %s: role %s %s is not in the build's namespace", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
			continue
		}
		grants(t, "Role "+r.Name, r.Rules, namespaced)
	}
	return cluster, namespaced, args
}

// Least privilege: the base grants exactly the calls every replica makes, the Lease's Role exactly
// leader election's, and only the overlay that enables --pod-condition grants what the condition needs,
// only the one that enables --enforce-quota what the quota needs.
func TestRolesGrantWhatTheCodeCalls(t *testing.T) {
	for _, tc := range []struct {
		dir              string
		condition, quota bool
	}{
		{deployDir, false, false},
		{deployDir + "/overlays/pod-condition", true, false},
		{deployDir + "/overlays/enforce-quota", false, true},
	} {
		cluster, namespaced, args := rolesOf(t, kustomize(t, tc.dir, krusty.ReorderOptionNone))
		scopes := []callScope{always}
		if tc.condition {
			scopes = append(scopes, withCondition)
		}
		if tc.quota {
			scopes = append(scopes, withQuota)
		}
		compareGrants(t, tc.dir+": the ClusterRoles", cluster, callsIn(scopes...))
		compareGrants(t, tc.dir+": the Roles", namespaced, callsIn(inLeaseNamespace))
		if got := slices.Contains(args, "--pod-condition=true"); got != tc.condition {
			t.Errorf("%s: the Deployment's args %v enable the pod condition: %v, want %v", tc.dir, args, got, tc.condition)
		}
		if got := slices.Contains(args, "--enforce-quota=true"); got != tc.quota {
			t.Errorf("%s: the Deployment's args %v enforce quota: %v, want %v", tc.dir, args, got, tc.quota)
		}
	}
}

// The list of calls is the code's: a whole controller run on the fake clientset (informers, Events,
// the condition, leader election) makes no request apicalls.go does not list.
func TestAPICallsListed(t *testing.T) {
	c := fake.NewClientset()
	// The test writes through setup, a clientset on the same objects, so that c records the
	// controller's requests only.
	setup := &fake.Clientset{}
	setup.AddReactor("*", "*", clienttesting.ObjectReaction(c.Tracker()))
	setup.AddWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace())
		return err == nil, w, err
	})
	testControllerRecordsEventsWith(t, setup, c, markUnschedulable)
	listed := callsIn(always, withCondition, inLeaseNamespace, withQuota)
	seen := map[grant]bool{}
	for _, a := range c.Actions() {
		res := a.GetResource()
		if res.Resource == "resource" && res.Group == "" && a.GetVerb() == "get" {
			continue // discovery (ServerResourcesForGroupVersion): a non-resource URL every user may read
		}
		g := grant{res.Group, res.Resource, a.GetVerb()}
		if s := a.GetSubresource(); s != "" {
			g.resource += "/" + s
		}
		seen[g] = true
	}
	for g := range seen {
		if !listed[g] {
			t.Errorf("the controller made %s, which apicalls.go does not list", g)
		}
	}
	if len(seen) == 0 {
		t.Fatal("the fake clientset recorded no request")
	}
}

// serviceMonitor is what overlays/servicemonitor's ServiceMonitor (monitoring.coreos.com/v1, the
// Prometheus Operator's) sets; decoded strictly, so that a misspelt field is an error.
type serviceMonitor struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any"`
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// overlays/servicemonitor renders base's objects unchanged and one ServiceMonitor that selects base's
// metrics Service, and no other, in its namespace, and scrapes /metrics on the Service's port whose
// target is the container port the explainer listens on (--listen).
func TestServiceMonitorOverlay(t *testing.T) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), deployDir+"/overlays/servicemonitor")
	if err != nil {
		t.Fatalf("kustomize build overlays/servicemonitor: %v", err)
	}
	var monitors []serviceMonitor
	var rest []string
	for _, r := range res.Resources() {
		j, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetKind() != "ServiceMonitor" {
			rest = append(rest, string(j))
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.DisallowUnknownFields()
		var sm serviceMonitor
		if err := dec.Decode(&sm); err != nil {
			t.Fatalf("ServiceMonitor %s: %v", r.GetName(), err)
		}
		monitors = append(monitors, sm)
	}
	base, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), deployDir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range base.Resources() {
		j, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, string(j))
	}
	if !slices.Equal(rest, want) {
		t.Errorf("the overlay changes base's objects:\n%s\nwant\n%s", strings.Join(rest, "\n"), strings.Join(want, "\n"))
	}
	if len(monitors) != 1 {
		t.Fatalf("the overlay renders %d ServiceMonitors, want 1", len(monitors))
	}
	sm := monitors[0]
	if sm.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %q, want monitoring.coreos.com/v1", sm.APIVersion)
	}

	var services []*v1.Service
	var dep *appsv1.Deployment
	for _, o := range kustomize(t, deployDir, krusty.ReorderOptionNone) {
		switch o := o.(type) {
		case *v1.Service:
			services = append(services, o)
		case *appsv1.Deployment:
			dep = o
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil || sel.Empty() {
		t.Fatalf("ServiceMonitor selector %v: %v; want one that names the Service's labels", sm.Spec.Selector, err)
	}
	var svc *v1.Service
	for _, s := range services {
		inNS := sm.Spec.NamespaceSelector.Any || slices.Contains(sm.Spec.NamespaceSelector.MatchNames, s.Namespace) ||
			(len(sm.Spec.NamespaceSelector.MatchNames) == 0 && s.Namespace == sm.Metadata.Namespace)
		if inNS && sel.Matches(labels.Set(s.Labels)) {
			if svc != nil {
				t.Errorf("ServiceMonitor selects Services %s and %s, want one", svc.Name, s.Name)
			}
			svc = s
		}
	}
	if svc == nil {
		t.Fatalf("ServiceMonitor selects no Service of base (selector %v, namespaces %+v)", sel, sm.Spec.NamespaceSelector)
	}
	if sm.Metadata.Namespace != svc.Namespace || sm.Spec.NamespaceSelector.Any {
		t.Errorf("ServiceMonitor in %q looks at namespaces %+v; want the Service's, %s, only", sm.Metadata.Namespace, sm.Spec.NamespaceSelector, svc.Namespace)
	}
	listen := ""
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--listen="); ok {
			listen = v
		}
	}
	_, listenPort, _ := strings.Cut(listen, ":")
	if len(sm.Spec.Endpoints) == 0 {
		t.Fatal("ServiceMonitor has no endpoints")
	}
	for _, e := range sm.Spec.Endpoints {
		i := slices.IndexFunc(svc.Spec.Ports, func(p v1.ServicePort) bool { return p.Name == e.Port })
		if i < 0 {
			t.Errorf("ServiceMonitor endpoint port %q: Service %s has no port of that name", e.Port, svc.Name)
			continue
		}
		target := svc.Spec.Ports[i].TargetPort
		var containerPort int32
		for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
			if p.Name == target.String() || p.ContainerPort == target.IntVal {
				containerPort = p.ContainerPort
			}
		}
		if fmt.Sprint(containerPort) != listenPort {
			t.Errorf("ServiceMonitor port %q → Service target %s → container port %d; the explainer listens on %q", e.Port, target.String(), containerPort, listen)
		}
		if e.Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoint path %q, want /metrics", e.Path)
		}
	}
}
