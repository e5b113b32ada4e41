package apiserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/fuzz"
)

// defaultsNow is the time manifest.Default is given for the timeAdded of taints that have none; the API
// server takes the time of the create instead, so that both are compared for being set, not for the value.
var defaultsNow = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func undefaultedClaim() *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{
			{Name: "one", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}},
			{Name: "explicit-zero", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com",
				AllocationMode: resourceapi.DeviceAllocationModeExactCount}},
			{Name: "all", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com",
				AllocationMode: resourceapi.DeviceAllocationModeAll}},
			{Name: "tolerant", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com", Count: 2,
				Tolerations: []resourceapi.DeviceToleration{
					{Key: "example.com/broken", Value: "yes"},
					{Key: "example.com/hot", Effect: resourceapi.DeviceTaintEffectNoSchedule},
					{Operator: resourceapi.DeviceTolerationOpExists},
				}}},
			{Name: "alternatives", FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "big", DeviceClassName: "gpu.example.com"},
				{Name: "small", DeviceClassName: "gpu.example.com", Count: 2,
					Tolerations: []resourceapi.DeviceToleration{{Key: "example.com/broken"}}},
				{Name: "every", DeviceClassName: "gpu.example.com", AllocationMode: resourceapi.DeviceAllocationModeAll},
			}},
		},
	}}}
}

// TestDefaults creates undefaulted objects, reads them back and compares them with manifest.Default of the
// same input: the API server's answer is the oracle for the defaults Kubernetes applies, and dralloc's
// defaulting must give the same spec (and claim status).
func TestDefaults(t *testing.T) {
	c := client(t)
	ns := podNamespace(t, c)
	claim := undefaultedClaim()
	template := &resourceapi.ResourceClaimTemplate{Spec: resourceapi.ResourceClaimTemplateSpec{Spec: claim.Spec}}
	slice := validSlice()
	slice.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{
		{Key: "example.com/broken", Effect: resourceapi.DeviceTaintEffectNoSchedule},
		{Key: "example.com/hot", Value: "85C", Effect: resourceapi.DeviceTaintEffectNone,
			TimeAdded: &metav1.Time{Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}},
	}
	class := validClass()
	class.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: opaque(driver, `{"sharing":"timeSlicing"}`)}}
	class.Spec.ExtendedResourceName = ptr.To("example.com/gpu")
	ruleAdded := validRule()
	ruleAdded.Spec.Taint.TimeAdded = &metav1.Time{Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	cases := []struct {
		name string
		obj  runtime.Object
	}{
		{"claim", claim},
		{"claim template", template},
		{"class", class},
		{"slice with taints", slice},
		{"taint rule without timeAdded", validRule()},
		{"taint rule with timeAdded", ruleAdded},
		{"allocated claim with tolerations without operator", undefaultedAllocatedClaim()},
		{"pod with limits and no requests", undefaultedPod()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkDefaults(t, c, named(tc.obj, ns))
		})
	}
}

// TestGeneratedDefaults: the objects the fuzz generators draw, with the defaulted fields cleared at random
// (allocationMode ExactCount, count 1, toleration operator Equal, taint timeAdded), are defaulted by the API
// server as manifest.Default defaults them.
func TestGeneratedDefaults(t *testing.T) {
	c := client(t)
	checked := 0
	rapid.Check(t, func(rt *rapid.T) {
		cl := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		ns := namespace(rt, c)
		prefix := uniqueName("d")
		var objs []runtime.Object
		for _, x := range cl.Slices {
			objs = append(objs, x)
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
		for i, obj := range objs {
			obj = undefault(rt, obj, fmt.Sprintf("object %d", i))
			m := metaOf(obj)
			m.SetName(prefix + "-" + m.GetName())
			checkDefaults(rt, c, named(obj, ns))
			checked++
		}
	})
	t.Logf("%d generated objects defaulted alike", checked)
}

// undefault returns a copy of obj with defaulted fields cleared, each chosen by a draw: an ExactCount
// request's allocationMode, the count 1 of a request whose mode is (or becomes) empty, a toleration's
// operator Equal, and a taint's timeAdded.
func undefault(t *rapid.T, obj runtime.Object, label string) runtime.Object {
	obj = obj.DeepCopyObject()
	clear := func(what string) bool { return rapid.Bool().Draw(t, label+" "+what) }
	mode := func(m *resourceapi.DeviceAllocationMode, count *int64, tolerations []resourceapi.DeviceToleration) {
		if *m == resourceapi.DeviceAllocationModeExactCount && clear("allocationMode") {
			*m = ""
		}
		if *m != resourceapi.DeviceAllocationModeAll && *count == 1 && clear("count") {
			*count = 0
		}
		for i := range tolerations {
			if tolerations[i].Operator == resourceapi.DeviceTolerationOpEqual && clear("operator") {
				tolerations[i].Operator = ""
			}
		}
	}
	spec := func(s *resourceapi.ResourceClaimSpec) {
		for i := range s.Devices.Requests {
			r := &s.Devices.Requests[i]
			if e := r.Exactly; e != nil {
				mode(&e.AllocationMode, &e.Count, e.Tolerations)
			}
			for j := range r.FirstAvailable {
				sub := &r.FirstAvailable[j]
				mode(&sub.AllocationMode, &sub.Count, sub.Tolerations)
			}
		}
	}
	switch o := obj.(type) {
	case *resourceapi.ResourceClaim:
		spec(&o.Spec)
	case *resourceapi.ResourceClaimTemplate:
		spec(&o.Spec.Spec)
	case *resourceapi.ResourceSlice:
		for i := range o.Spec.Devices {
			for j := range o.Spec.Devices[i].Taints {
				if clear("timeAdded") {
					o.Spec.Devices[i].Taints[j].TimeAdded = nil
				}
			}
		}
	case *resourceapi.DeviceTaintRule:
		if clear("timeAdded") {
			o.Spec.Taint.TimeAdded = nil
		}
	}
	return obj
}

// checkDefaults creates obj (a claim with a status gets it written with UpdateStatus), reads it back and
// compares what defaulting touches with manifest.Default(obj): the spec (a claim's status too; a pod's
// schedulerName and container requests, the pod fields manifest.Default sets). A taint that had no timeAdded
// must have one on both sides, the API server's within the create; the values are not compared.
func checkDefaults(t fataler, c kubernetes.Interface, obj runtime.Object) {
	t.Helper()
	ctx := context.Background()
	var status *resourceapi.ResourceClaimStatus
	sent := obj
	if claim, ok := obj.(*resourceapi.ResourceClaim); ok && claim.Status.Allocation != nil {
		status = claim.Status.DeepCopy()
		claim = claim.DeepCopy()
		claim.Status = resourceapi.ResourceClaimStatus{}
		sent = claim
	}
	before := time.Now().Truncate(time.Second)
	got, err := createAny(ctx, c, sent)
	if err != nil {
		t.Fatalf("create %s %s: %v", kindOf(obj), metaOf(obj).GetName(), err)
	}
	if status != nil {
		claim := got.(*resourceapi.ResourceClaim)
		claim.Status = *status
		if got, err = c.ResourceV1().ResourceClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update status of ResourceClaim %s: %v", claim.Name, err)
		}
	}
	after := time.Now()
	want := manifest.Default(obj, defaultsNow)
	gotPart, wantPart := defaultedPart(got), defaultedPart(want)
	timeAddedSet(t, obj, gotPart, wantPart, before, after)
	if !equality.Semantic.DeepEqual(gotPart, wantPart) {
		t.Fatalf("%s %s: read back:\n%s\nmanifest.Default:\n%s", kindOf(obj), metaOf(obj).GetName(), toYAML(gotPart), toYAML(wantPart))
	}
}

// defaultedPart returns a copy of the part of obj defaulting touches.
func defaultedPart(obj runtime.Object) any {
	switch o := obj.DeepCopyObject().(type) {
	case *resourceapi.ResourceClaim:
		return &resourceapi.ResourceClaim{Spec: o.Spec, Status: o.Status}
	case *resourceapi.ResourceClaimTemplate:
		return &o.Spec
	case *resourceapi.ResourceSlice:
		return &o.Spec
	case *resourceapi.DeviceClass:
		return &o.Spec
	case *resourceapi.DeviceTaintRule:
		return &o.Spec
	case *corev1.Pod:
		part := &corev1.PodSpec{SchedulerName: o.Spec.SchedulerName}
		for _, ctr := range o.Spec.Containers {
			part.Containers = append(part.Containers, corev1.Container{Name: ctr.Name, Resources: ctr.Resources})
		}
		for _, ctr := range o.Spec.InitContainers {
			part.InitContainers = append(part.InitContainers, corev1.Container{Name: ctr.Name, Resources: ctr.Resources})
		}
		return part
	}
	panic(fmt.Sprintf("no defaulted part for %T", obj))
}

// timeAddedSet checks, for every taint of in without timeAdded, that got (read back) has one within the
// create and want (manifest.Default's) has defaultsNow, and then clears both, so that the comparison that
// follows ignores the values.
func timeAddedSet(t fataler, in runtime.Object, got, want any, before, after time.Time) {
	t.Helper()
	var unset []bool
	var gotTaints, wantTaints []*resourceapi.DeviceTaint
	switch o := in.(type) {
	case *resourceapi.ResourceSlice:
		g, w := got.(*resourceapi.ResourceSliceSpec), want.(*resourceapi.ResourceSliceSpec)
		for i := range o.Spec.Devices {
			for j := range o.Spec.Devices[i].Taints {
				unset = append(unset, o.Spec.Devices[i].Taints[j].TimeAdded == nil)
				if i < len(g.Devices) && j < len(g.Devices[i].Taints) {
					gotTaints = append(gotTaints, &g.Devices[i].Taints[j])
				}
				wantTaints = append(wantTaints, &w.Devices[i].Taints[j])
			}
		}
	case *resourceapi.DeviceTaintRule:
		unset = []bool{o.Spec.Taint.TimeAdded == nil}
		gotTaints = []*resourceapi.DeviceTaint{&got.(*resourceapi.DeviceTaintRuleSpec).Taint}
		wantTaints = []*resourceapi.DeviceTaint{&want.(*resourceapi.DeviceTaintRuleSpec).Taint}
	}
	for i := range min(len(unset), len(gotTaints), len(wantTaints)) {
		if !unset[i] {
			continue
		}
		g, w := gotTaints[i], wantTaints[i]
		switch {
		case g.TimeAdded == nil:
			t.Fatalf("taint %s: the API server set no timeAdded", g.Key)
		case g.TimeAdded.Time.Before(before) || g.TimeAdded.Time.After(after):
			t.Fatalf("taint %s: the API server set timeAdded %v, want between %v and %v", g.Key, g.TimeAdded.Time, before, after)
		case w.TimeAdded == nil || !w.TimeAdded.Time.Equal(defaultsNow):
			t.Fatalf("taint %s: manifest.Default set timeAdded %v, want %v", w.Key, w.TimeAdded, defaultsNow)
		}
		g.TimeAdded, w.TimeAdded = nil, nil
	}
}

// undefaultedAllocatedClaim is an allocated claim whose allocation results carry tolerations without operator.
func undefaultedAllocatedClaim() *resourceapi.ResourceClaim {
	c := validClaim()
	exactly(c).Tolerations = []resourceapi.DeviceToleration{{Key: "example.com/broken", Value: "yes"}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: driver, Pool: pool, Device: "gpu-0",
			Tolerations: []resourceapi.DeviceToleration{{Key: "example.com/broken", Value: "yes"}}}},
	}}
	return c
}

// undefaultedPod is a pod whose containers have limits without requests and that names no scheduler.
func undefaultedPod() *corev1.Pod {
	res := corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
	}
	return &corev1.Pod{Spec: corev1.PodSpec{
		Containers:     []corev1.Container{{Name: "main", Image: "registry.example.com/train:1", Resources: res}},
		InitContainers: []corev1.Container{{Name: "init", Image: "registry.example.com/init:1", Resources: *res.DeepCopy()}},
	}}
}

func toYAML(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(out)
}
