package apiserver_test

import (
	"context"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// defaulted returns obj with the defaults Kubernetes v1.37 gives resource.k8s.io/v1 objects on create
// (k8s.io/kubernetes pkg/apis/resource/v1 defaults.go and the +default markers of k8s.io/api resource/v1):
//
//   - an exact request or subrequest without allocationMode gets ExactCount, and with ExactCount a count of 0
//     becomes 1 (allocationMode All keeps count 0);
//   - a toleration without operator gets Equal;
//   - a device taint without timeAdded (in a slice or a DeviceTaintRule) gets the time of the create, which
//     defaulted marks as addedMarker;
//   - DeviceClasses have no defaults.
func defaulted(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	request := func(mode *resourceapi.DeviceAllocationMode, count *int64, tolerations []resourceapi.DeviceToleration) {
		if *mode == "" {
			*mode = resourceapi.DeviceAllocationModeExactCount
		}
		if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
		for i := range tolerations {
			if tolerations[i].Operator == "" {
				tolerations[i].Operator = resourceapi.DeviceTolerationOpEqual
			}
		}
	}
	claimSpec := func(spec *resourceapi.ResourceClaimSpec) {
		for i := range spec.Devices.Requests {
			r := &spec.Devices.Requests[i]
			if e := r.Exactly; e != nil {
				request(&e.AllocationMode, &e.Count, e.Tolerations)
			}
			for j := range r.FirstAvailable {
				s := &r.FirstAvailable[j]
				request(&s.AllocationMode, &s.Count, s.Tolerations)
			}
		}
	}
	taint := func(t *resourceapi.DeviceTaint) {
		if t.TimeAdded == nil {
			t.TimeAdded = addedMarker.DeepCopy()
		}
	}
	switch o := obj.(type) {
	case *resourceapi.ResourceClaim:
		claimSpec(&o.Spec)
	case *resourceapi.ResourceClaimTemplate:
		claimSpec(&o.Spec.Spec)
	case *resourceapi.ResourceSlice:
		for i := range o.Spec.Devices {
			for j := range o.Spec.Devices[i].Taints {
				taint(&o.Spec.Devices[i].Taints[j])
			}
		}
	case *resourceapi.DeviceTaintRule:
		taint(&o.Spec.Taint)
	case *resourceapi.DeviceClass:
	}
	return obj
}

// addedMarker stands for "the time of the create" in defaulted's answers.
var addedMarker = &metav1.Time{Time: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}

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

// TestDefaults creates undefaulted objects, reads them back and compares them with defaulted: the API
// server's answer is the oracle for the defaults Kubernetes applies.
func TestDefaults(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
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
	cases := []struct {
		name string
		obj  runtime.Object
	}{
		{"claim", claim},
		{"claim template", template},
		{"class", class},
		{"slice with taints", slice},
		{"taint rule", validRule()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := named(tc.obj, ns)
			before := time.Now().Truncate(time.Second)
			got, err := create(context.Background(), c, obj)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			after := time.Now()
			want := specOf(t, defaulted(obj))
			gotSpec := specOf(t, got)
			t.Logf("read back:\n%s", toYAML(gotSpec))
			markTimeAdded(t, gotSpec, want, before, after)
			if !equality.Semantic.DeepEqual(gotSpec, want) {
				t.Errorf("read back:\n%s\nwant (defaulted):\n%s", toYAML(gotSpec), toYAML(want))
			}
		})
	}
}

// specOf returns a pointer to the spec of obj, the part defaulting touches.
func specOf(t *testing.T, obj runtime.Object) any {
	switch o := obj.(type) {
	case *resourceapi.ResourceClaim:
		return &o.Spec
	case *resourceapi.ResourceClaimTemplate:
		return &o.Spec
	case *resourceapi.ResourceSlice:
		return &o.Spec
	case *resourceapi.DeviceClass:
		return &o.Spec
	case *resourceapi.DeviceTaintRule:
		return &o.Spec
	}
	t.Fatalf("no spec for %T", obj)
	return nil
}

// markTimeAdded replaces, in got, every timeAdded that want expects to be the time of the create by the marker,
// after checking that the API server set it to a time within the create (truncated to seconds).
func markTimeAdded(t *testing.T, got, want any, before, after time.Time) {
	var gotTaints, wantTaints []*resourceapi.DeviceTaint
	switch w := want.(type) {
	case *resourceapi.ResourceSliceSpec:
		g := got.(*resourceapi.ResourceSliceSpec)
		for i := range w.Devices {
			for j := range w.Devices[i].Taints {
				wantTaints = append(wantTaints, &w.Devices[i].Taints[j])
				if i < len(g.Devices) && j < len(g.Devices[i].Taints) {
					gotTaints = append(gotTaints, &g.Devices[i].Taints[j])
				}
			}
		}
	case *resourceapi.DeviceTaintRuleSpec:
		wantTaints = append(wantTaints, &w.Taint)
		gotTaints = append(gotTaints, &got.(*resourceapi.DeviceTaintRuleSpec).Taint)
	}
	for i := range min(len(gotTaints), len(wantTaints)) {
		g, w := gotTaints[i], wantTaints[i]
		if w.TimeAdded == nil || !w.TimeAdded.Equal(addedMarker) {
			continue
		}
		if g.TimeAdded == nil {
			t.Errorf("taint %s: no timeAdded, want the time of the create", g.Key)
			continue
		}
		if ta := g.TimeAdded.Time; ta.Before(before) || ta.After(after) {
			t.Errorf("taint %s: timeAdded %v, want between %v and %v", g.Key, ta, before, after)
		}
		g.TimeAdded = addedMarker.DeepCopy()
	}
}

func toYAML(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(out)
}
