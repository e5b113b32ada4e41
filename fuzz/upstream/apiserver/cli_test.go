package apiserver_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/allocator/pods"
)

// runLabel marks the objects of one round trip, so that listing finds them among those of other tests.
const runLabel = "dralloc.example.com/run"

// TestKubectlRoundTrip: the objects of a cluster (nodes, slices, classes, a template, a taint rule, pods, a
// shared claim and the claims of a pod already placed, allocated with their status) written as manifest
// files and created in the API server, then fetched with client-go as Lists and serialised as `kubectl get
// -o yaml` and `-o json` write them, read back with manifest.Decode as the same objects as the files read with
// manifest.Decode directly (modulo what the API server sets: metadata, a taint's timeAdded, the pod fields it
// defaults that manifest.Default leaves out), and give the same pods.Cluster placement for a pending pod.
func TestKubectlRoundTrip(t *testing.T) {
	c := client(t)
	run := uniqueName("run")
	files := roundTripObjects(t, c, run)
	file := manifestFile(t, files)
	want, err := manifest.Decode(bytes.NewReader(file), "cluster.yaml", manifest.Options{})
	if err != nil {
		t.Fatalf("manifest.Decode of the files: %v", err)
	}
	for _, obj := range files {
		createFromFile(t, c, obj)
	}

	list := fetchList(t, c, run)
	yamlOut, err := yaml.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var jsonOut bytes.Buffer
	for _, item := range list.Items {
		// `kubectl get -o json` of one kind at a time, the outputs concatenated.
		one, err := json.MarshalIndent(&corev1.List{TypeMeta: list.TypeMeta, Items: []runtime.RawExtension{item}}, "", "    ")
		if err != nil {
			t.Fatal(err)
		}
		jsonOut.Write(one)
		jsonOut.WriteString("\n")
	}
	for _, out := range []struct {
		name string
		data []byte
	}{{"kubectl get -o yaml", yamlOut}, {"kubectl get -o json", jsonOut.Bytes()}} {
		t.Run(out.name, func(t *testing.T) {
			got, err := manifest.Decode(bytes.NewReader(out.data), out.name, manifest.Options{})
			if err != nil {
				t.Fatalf("manifest.Decode of %s: %v\n%s", out.name, err, head(out.data, 60))
			}
			compareObjects(t, got, want)
			gotPlace, wantPlace := placePending(t, got), placePending(t, want)
			if gotPlace != wantPlace {
				t.Errorf("pending pod placed from %s:\n%s\nfrom the files:\n%s", out.name, gotPlace, wantPlace)
			}
			t.Logf("%d objects read back alike; pending pod: %s", got.Len(), gotPlace)
		})
	}
}

// roundTripObjects is a small cluster as manifest files hold it: two DGX H100 nodes with their slices, the
// classes, a template, a device taint and a taint rule (both without timeAdded), a pod already bound by
// allocator/pods with its claims allocated (their status.devices reported), and a pending pod. Every object
// has the run's label.
func roundTripObjects(t *testing.T, c kubernetes.Interface, run string) []runtime.Object {
	t.Helper()
	f := buildFleet(t, podNamespace(t, c), 2)
	f.load(t)
	running := f.newPod("running")
	running.UID = "uid-running"
	placed, err := f.cluster.Place(context.Background(), running)
	if err != nil {
		t.Fatalf("place: %v", err)
	}
	running.Spec.NodeName = placed.Node
	var objs []runtime.Object
	for _, x := range f.nodes {
		objs = append(objs, x)
	}
	taintedSlice := -1
	for i, x := range f.slices {
		if len(x.Spec.Devices) > 0 {
			taintedSlice = i
		}
	}
	for i, x := range f.slices {
		if i == taintedSlice {
			// A device taint without timeAdded, which the API server sets.
			x = x.DeepCopy()
			x.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "48", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		}
		objs = append(objs, x)
	}
	for _, x := range f.classes {
		objs = append(objs, x)
	}
	rule := validRule()
	rule.Name = run + "-rule"
	// The last device of the first node: the running pod, placed first by name, took the first GPUs.
	tainted := f.slices[slices.IndexFunc(f.slices, func(s *resourceapi.ResourceSlice) bool { return len(s.Spec.Devices) > 0 })]
	rule.Spec.DeviceSelector = &resourceapi.DeviceTaintSelector{Driver: ptr.To(tainted.Spec.Driver), Pool: ptr.To(tainted.Spec.Pool.Name),
		Device: ptr.To(tainted.Spec.Devices[len(tainted.Spec.Devices)-1].Name)}
	objs = append(objs, f.template, rule)
	for _, pc := range placed.Claims {
		objs = append(objs, withDeviceStatuses(t, pc.Claim))
	}
	pending := f.newPod("pending")
	pending.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
	pending.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("2Gi")
	objs = append(objs, running, pending)
	for i, obj := range objs {
		obj = obj.DeepCopyObject()
		m := metaOf(obj)
		m.SetUID("")
		m.SetLabels(mergeLabels(m.GetLabels(), runLabel, run))
		objs[i] = obj
	}
	return objs
}

func mergeLabels(labels map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range labels {
		out[k] = v
	}
	return out
}

// manifestFile writes the objects as a YAML stream, each with apiVersion and kind, as users keep them.
func manifestFile(t *testing.T, objs []runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, obj := range objs {
		out, err := yaml.Marshal(withTypeMeta(obj))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(out)
	}
	return b.Bytes()
}

// withTypeMeta sets apiVersion and kind, as kubectl does before it prints an object (client-go's typed
// clients return objects without them).
func withTypeMeta(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	gv := resourceapi.SchemeGroupVersion.String()
	if _, ok := obj.(*corev1.Pod); ok {
		gv = "v1"
	} else if _, ok := obj.(*corev1.Node); ok {
		gv = "v1"
	}
	obj.GetObjectKind().SetGroupVersionKind(schemaGVK(gv, kindOf(obj)))
	return obj
}

// createFromFile creates one object of the files in the API server as `kubectl apply` would, and writes the
// status a claim or node has; a new node's admission taint is replaced by the file's taints.
func createFromFile(t *testing.T, c kubernetes.Interface, obj runtime.Object) {
	t.Helper()
	ctx := context.Background()
	sent := obj.DeepCopyObject()
	var claimStatus *resourceapi.ResourceClaimStatus
	if claim, ok := sent.(*resourceapi.ResourceClaim); ok && claim.Status.Allocation != nil {
		claimStatus = claim.Status.DeepCopy()
		claim.Status = resourceapi.ResourceClaimStatus{}
	}
	got, err := createAny(ctx, c, sent)
	if err != nil {
		t.Fatalf("create %s %s: %v", kindOf(obj), metaOf(obj).GetName(), err)
	}
	switch o := got.(type) {
	case *resourceapi.ResourceClaim:
		if claimStatus != nil {
			o.Status = *claimStatus
			if _, err := c.ResourceV1().ResourceClaims(o.Namespace).UpdateStatus(ctx, o, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("write status of ResourceClaim %s: %v", o.Name, err)
			}
		}
	case *corev1.Node:
		o.Spec.Taints = obj.(*corev1.Node).Spec.Taints
		if _, err := c.CoreV1().Nodes().Update(ctx, o, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("untaint Node %s: %v", o.Name, err)
		}
	}
}

// fetchList lists every kind of the round trip's objects with client-go and puts them in one v1 List, as
// `kubectl get nodes,resourceslices,... -o yaml` prints it: every item with apiVersion and kind set.
func fetchList(t *testing.T, c kubernetes.Interface, run string) *corev1.List {
	t.Helper()
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: runLabel + "=" + run}
	list := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	add := func(obj runtime.Object) {
		raw, err := json.Marshal(withTypeMeta(obj))
		if err != nil {
			t.Fatal(err)
		}
		list.Items = append(list.Items, runtime.RawExtension{Raw: raw})
	}
	r := c.ResourceV1()
	nodes, err := c.CoreV1().Nodes().List(ctx, opts)
	must(t, err)
	for i := range nodes.Items {
		add(&nodes.Items[i])
	}
	sl, err := r.ResourceSlices().List(ctx, opts)
	must(t, err)
	for i := range sl.Items {
		add(&sl.Items[i])
	}
	cls, err := r.DeviceClasses().List(ctx, opts)
	must(t, err)
	for i := range cls.Items {
		add(&cls.Items[i])
	}
	rules, err := r.DeviceTaintRules().List(ctx, opts)
	must(t, err)
	for i := range rules.Items {
		add(&rules.Items[i])
	}
	ns := ""
	tpls, err := r.ResourceClaimTemplates(ns).List(ctx, opts)
	must(t, err)
	for i := range tpls.Items {
		add(&tpls.Items[i])
	}
	claims, err := r.ResourceClaims(ns).List(ctx, opts)
	must(t, err)
	for i := range claims.Items {
		add(&claims.Items[i])
	}
	ps, err := c.CoreV1().Pods(ns).List(ctx, opts)
	must(t, err)
	for i := range ps.Items {
		add(&ps.Items[i])
	}
	if len(nodes.Items) == 0 || len(sl.Items) == 0 || len(claims.Items) == 0 || len(ps.Items) == 0 {
		t.Fatalf("listed %d nodes, %d slices, %d claims, %d pods of run %s", len(nodes.Items), len(sl.Items), len(claims.Items), len(ps.Items), run)
	}
	return list
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// compareObjects compares what was read back from the API server with what the files give, kind by kind in
// order of namespace and name, after serverSet.
func compareObjects(t *testing.T, got, want *manifest.Objects) {
	t.Helper()
	check := func(kind string, g, w []runtime.Object) {
		if len(g) != len(w) {
			t.Errorf("%s: %d read back, %d in the files", kind, len(g), len(w))
			return
		}
		sortObjects(g)
		sortObjects(w)
		for i := range g {
			gi, wi := g[i].DeepCopyObject(), w[i].DeepCopyObject()
			serverSet(t, gi, wi)
			canonicalRaw(gi)
			canonicalRaw(wi)
			if !equality.Semantic.DeepEqual(gi, wi) {
				t.Errorf("%s %s: read back:\n%s\nfrom the files:\n%s", kind, metaOf(gi).GetName(), toYAML(gi), toYAML(wi))
			}
		}
	}
	check("Node", asObjects(got.Nodes), asObjects(want.Nodes))
	check("ResourceSlice", asObjects(got.Slices), asObjects(want.Slices))
	check("DeviceClass", asObjects(got.Classes), asObjects(want.Classes))
	check("DeviceTaintRule", asObjects(got.TaintRules), asObjects(want.TaintRules))
	check("ResourceClaimTemplate", asObjects(got.Templates), asObjects(want.Templates))
	check("ResourceClaim", asObjects(got.Claims), asObjects(want.Claims))
	check("Pod", asObjects(got.Pods), asObjects(want.Pods))
}

func asObjects[T runtime.Object](in []T) []runtime.Object {
	out := make([]runtime.Object, len(in))
	for i, x := range in {
		out[i] = x
	}
	return out
}

func sortObjects(objs []runtime.Object) {
	slices.SortFunc(objs, func(a, b runtime.Object) int {
		ma, mb := metaOf(a), metaOf(b)
		return cmp.Or(cmp.Compare(ma.GetNamespace(), mb.GetNamespace()), cmp.Compare(ma.GetName(), mb.GetName()))
	})
}

// serverSet removes from got (read back) and want (the files) what the API server sets and the files cannot
// know: the system metadata; the timeAdded of a slice's taints and a DeviceTaintRule's, which got must have
// where want has none, and a DeviceTaintRule's status; and the pod fields kube-apiserver defaults or its admission plugins set that manifest.Default does
// not apply (restartPolicy, dnsPolicy, service account, default tolerations, ...), copied from got to want
// where want leaves them empty, and the status of a pod not started.
func serverSet(t *testing.T, got, want runtime.Object) {
	t.Helper()
	for _, obj := range []runtime.Object{got, want} {
		m := metaOf(obj)
		m.SetUID("")
		m.SetResourceVersion("")
		m.SetCreationTimestamp(metav1.Time{})
		m.SetGeneration(0)
		m.SetManagedFields(nil)
		obj.GetObjectKind().SetGroupVersionKind(schemaGVK("", ""))
	}
	switch g := got.(type) {
	case *resourceapi.ResourceSlice:
		w := want.(*resourceapi.ResourceSlice)
		for i := range min(len(g.Spec.Devices), len(w.Spec.Devices)) {
			for j := range min(len(g.Spec.Devices[i].Taints), len(w.Spec.Devices[i].Taints)) {
				gt := &g.Spec.Devices[i].Taints[j]
				if w.Spec.Devices[i].Taints[j].TimeAdded == nil {
					if gt.TimeAdded == nil {
						t.Errorf("ResourceSlice %s: taint %s: no timeAdded read back", g.Name, gt.Key)
					}
					gt.TimeAdded = nil
				}
			}
		}
	case *resourceapi.DeviceTaintRule:
		w := want.(*resourceapi.DeviceTaintRule)
		if w.Spec.Taint.TimeAdded == nil {
			if g.Spec.Taint.TimeAdded == nil {
				t.Errorf("DeviceTaintRule %s: no timeAdded read back", g.Name)
			}
			g.Spec.Taint.TimeAdded = nil
		}
		g.Status = resourceapi.DeviceTaintRuleStatus{}
	case *corev1.Node:
		w := want.(*corev1.Node)
		if w.Status.Allocatable == nil {
			w.Status.Allocatable = g.Status.Allocatable // defaulted from capacity
		}
	case *corev1.Pod:
		podDefaults(g, want.(*corev1.Pod))
	}
}

// podDefaults copies into want the pod fields the API server sets (pkg/apis/core/v1 defaults.go, the
// ServiceAccount and DefaultTolerationSeconds admission plugins, the pod strategy's status on create) where
// want does not set them.
func podDefaults(got, want *corev1.Pod) {
	g, w := &got.Spec, &want.Spec
	fill(&w.RestartPolicy, g.RestartPolicy)
	fill(&w.DNSPolicy, g.DNSPolicy)
	fill(&w.ServiceAccountName, g.ServiceAccountName)
	fill(&w.DeprecatedServiceAccount, g.DeprecatedServiceAccount)
	fillPtr(&w.TerminationGracePeriodSeconds, g.TerminationGracePeriodSeconds)
	fillPtr(&w.SecurityContext, g.SecurityContext)
	fillPtr(&w.EnableServiceLinks, g.EnableServiceLinks)
	fillPtr(&w.PreemptionPolicy, g.PreemptionPolicy)
	fillPtr(&w.Priority, g.Priority)
	if len(w.Tolerations) == 0 {
		w.Tolerations = g.Tolerations
	}
	if len(w.Volumes) == 0 {
		w.Volumes = g.Volumes
	}
	for i := range min(len(w.Containers), len(g.Containers)) {
		wc, gc := &w.Containers[i], &g.Containers[i]
		fill(&wc.TerminationMessagePath, gc.TerminationMessagePath)
		fill(&wc.TerminationMessagePolicy, gc.TerminationMessagePolicy)
		fill(&wc.ImagePullPolicy, gc.ImagePullPolicy)
		if len(wc.VolumeMounts) == 0 {
			wc.VolumeMounts = gc.VolumeMounts
		}
	}
	if equality.Semantic.DeepEqual(want.Status, corev1.PodStatus{}) {
		want.Status = got.Status
	}
}

func fill[T comparable](dst *T, v T) {
	var zero T
	if *dst == zero {
		*dst = v
	}
}

func fillPtr[T any](dst **T, v *T) {
	if *dst == nil {
		*dst = v
	}
}

// placePending places the pending pod of the objects with a pods.Cluster built from them and describes the
// answer: the node and, per claim, its name and allocated devices.
func placePending(t *testing.T, objs *manifest.Objects) string {
	t.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, x := range objs.Nodes {
		must(t, snap.AddOrUpdateNode(x))
	}
	for _, x := range objs.Slices {
		must(t, snap.AddOrUpdateSlice(x))
	}
	for _, x := range objs.Classes {
		must(t, snap.AddOrUpdateClass(x))
	}
	for _, x := range objs.TaintRules {
		must(t, snap.AddOrUpdateTaintRule(x))
	}
	for _, x := range objs.Claims {
		must(t, snap.AddOrUpdateClaim(x))
	}
	cl := pods.New(snap, pods.Options{NameSuffix: func() string { return "x0000" }})
	for _, x := range objs.Templates {
		must(t, cl.AddOrUpdateTemplate(x))
	}
	i := slices.IndexFunc(objs.Pods, func(p *corev1.Pod) bool { return p.Name == "pending" })
	if i < 0 {
		t.Fatalf("no pending pod among %d pods", len(objs.Pods))
	}
	p, err := cl.Place(context.Background(), objs.Pods[i])
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "node %s", p.Node)
	for _, pc := range p.Claims {
		fmt.Fprintf(&b, "; claim %q %s:", pc.Name, pc.Claim.Name)
		for _, r := range pc.Claim.Status.Allocation.Devices.Results {
			fmt.Fprintf(&b, " %s=%s/%s", r.Request, r.Pool, r.Device)
		}
		for _, r := range pc.Claim.Status.ReservedFor {
			fmt.Fprintf(&b, " reservedFor %s/%s", r.Resource, r.Name)
		}
	}
	return b.String()
}

func head(data []byte, lines int) string {
	l := strings.Split(string(data), "\n")
	return strings.Join(l[:min(lines, len(l))], "\n")
}

func schemaGVK(apiVersion, kind string) schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(apiVersion, kind)
}

// canonicalRaw writes the JSON of the opaque fields of obj (configuration parameters, device status data)
// in one form, compact with sorted keys: they are kept as written, and the files (YAML, whose keys
// sigs.k8s.io/yaml sorts) and `kubectl get -o json` (indented, in the order stored) write the same value
// differently.
func canonicalRaw(obj runtime.Object) {
	compact := func(raw *runtime.RawExtension) {
		var v any
		if raw == nil || json.Unmarshal(raw.Raw, &v) != nil {
			return
		}
		if out, err := json.Marshal(v); err == nil {
			raw.Raw = out
		}
	}
	opaque := func(o *resourceapi.OpaqueDeviceConfiguration) {
		if o != nil {
			compact(&o.Parameters)
		}
	}
	claimSpec := func(spec *resourceapi.ResourceClaimSpec) {
		for i := range spec.Devices.Config {
			opaque(spec.Devices.Config[i].Opaque)
		}
	}
	switch o := obj.(type) {
	case *resourceapi.ResourceClaim:
		claimSpec(&o.Spec)
		if a := o.Status.Allocation; a != nil {
			for i := range a.Devices.Config {
				opaque(a.Devices.Config[i].Opaque)
			}
		}
		for i := range o.Status.Devices {
			compact(o.Status.Devices[i].Data)
		}
	case *resourceapi.ResourceClaimTemplate:
		claimSpec(&o.Spec.Spec)
	case *resourceapi.DeviceClass:
		for i := range o.Spec.Config {
			opaque(o.Spec.Config[i].Opaque)
		}
	}
}
