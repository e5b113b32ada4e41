package manifest

import (
	"encoding/json"
	"strconv"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"
)

// filler fills every field of the v1 types with random values that survive a trip through
// kube-apiserver: quantities and times as JSON keeps them, opaque parameters as JSON, and one of a
// request's exactly or firstAvailable (an older version has room for the other only in invalid
// objects).
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.1).NumElements(1, 2).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1<<40), resource.DecimalSI)
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.Unix(c.Int63n(1<<32), 0).Rfc3339Copy()
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			// Bytes that encoding leaves as they are: a JSON encoder escapes some characters of
			// strings, which changes the bytes but not the value.
			r.Raw = []byte(`{"key":` + strconv.FormatInt(c.Int63(), 10) + `}`)
		},
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			c.FillNoCustom(m)
			m.ManagedFields = nil // raw JSON of their own
			m.CreationTimestamp = metav1.Unix(c.Int63n(1<<32), 0).Rfc3339Copy()
			m.DeletionTimestamp = nil
		},
		func(tm *metav1.TypeMeta, c randfill.Continue) {},
		func(r *resourceapi.DeviceRequest, c randfill.Continue) {
			c.FillNoCustom(r)
			if c.Bool() {
				r.FirstAvailable = nil
				if r.Exactly == nil {
					r.Exactly = &resourceapi.ExactDeviceRequest{}
				}
				if r.Exactly.DeviceClassName == "" {
					r.Exactly.DeviceClassName = "class"
				}
			} else {
				r.Exactly = nil
			}
		},
		func(tmpl *schedulingapi.CompositePodGroupTemplate, c randfill.Continue) {
			// Every field but the subtree filled, and a subtree of one leaf: the tree of
			// composite templates would otherwise grow without bound.
			c.Fill(&tmpl.Name)
			c.Fill(&tmpl.SchedulingPolicy)
			c.Fill(&tmpl.SchedulingConstraints)
			c.Fill(&tmpl.DisruptionMode)
			c.Fill(&tmpl.PriorityClassName)
			c.Fill(&tmpl.Priority)
			c.Fill(&tmpl.PreemptionPolicy)
			c.Fill(&tmpl.PodGroupTemplates)
			tmpl.CompositePodGroupTemplates = []schedulingapi.CompositePodGroupTemplate{{Name: c.String(8)}}
		},
		func(s *resourceapi.ResourceSliceSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.NodeName != nil && *s.NodeName == "" {
				s.NodeName = nil
			}
			if s.AllNodes != nil && !*s.AllNodes {
				s.AllNodes = nil
			}
		},
	)
}

// The reverse conversions, v1 to the older versions, exist only to test that every field of v1
// survives the way there and back; they follow kube-apiserver's as the forward ones do.

func claimToV1beta1(t *testing.T, in *resourceapi.ResourceClaim) *resourcev1beta1.ResourceClaim {
	c := &converter{}
	out := &resourcev1beta1.ResourceClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1beta1", Kind: "ResourceClaim"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec:       claimSpecToV1beta1(c, &in.Spec),
		Status:     same[resourcev1beta1.ResourceClaimStatus](c, &in.Status),
	}
	check(t, c)
	return out
}

func templateToV1beta1(t *testing.T, in *resourceapi.ResourceClaimTemplate) *resourcev1beta1.ResourceClaimTemplate {
	c := &converter{}
	out := &resourcev1beta1.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1beta1", Kind: "ResourceClaimTemplate"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: resourcev1beta1.ResourceClaimTemplateSpec{
			ObjectMeta: *in.Spec.ObjectMeta.DeepCopy(),
			Spec:       claimSpecToV1beta1(c, &in.Spec.Spec),
		},
	}
	check(t, c)
	return out
}

func claimSpecToV1beta1(c *converter, in *resourceapi.ResourceClaimSpec) resourcev1beta1.ResourceClaimSpec {
	var out resourcev1beta1.ResourceClaimSpec
	for _, r := range in.Devices.Requests {
		req := resourcev1beta1.DeviceRequest{
			Name:           r.Name,
			FirstAvailable: same[[]resourcev1beta1.DeviceSubRequest](c, r.FirstAvailable),
		}
		if e := r.Exactly; e != nil {
			req.DeviceClassName = e.DeviceClassName
			req.Selectors = same[[]resourcev1beta1.DeviceSelector](c, e.Selectors)
			req.AllocationMode = resourcev1beta1.DeviceAllocationMode(e.AllocationMode)
			req.Count = e.Count
			req.AdminAccess = copyPtr(e.AdminAccess)
			req.Tolerations = same[[]resourcev1beta1.DeviceToleration](c, e.Tolerations)
			req.Capacity = same[*resourcev1beta1.CapacityRequirements](c, e.Capacity)
			req.DerivedAttributes = same[[]resourcev1beta1.DeviceDerivedAttribute](c, e.DerivedAttributes)
		}
		out.Devices.Requests = append(out.Devices.Requests, req)
	}
	out.Devices.Constraints = same[[]resourcev1beta1.DeviceConstraint](c, in.Devices.Constraints)
	out.Devices.Config = same[[]resourcev1beta1.DeviceClaimConfiguration](c, in.Devices.Config)
	return out
}

func sliceToV1beta1(t *testing.T, in *resourceapi.ResourceSlice) *resourcev1beta1.ResourceSlice {
	c := &converter{}
	out := &resourcev1beta1.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1beta1", Kind: "ResourceSlice"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: resourcev1beta1.ResourceSliceSpec{
			Driver:                 in.Spec.Driver,
			Pool:                   same[resourcev1beta1.ResourcePool](c, &in.Spec.Pool),
			NodeName:               ptr.Deref(in.Spec.NodeName, ""),
			NodeSelector:           in.Spec.NodeSelector.DeepCopy(),
			AllNodes:               ptr.Deref(in.Spec.AllNodes, false),
			PerDeviceNodeSelection: copyPtr(in.Spec.PerDeviceNodeSelection),
			SharedCounters:         same[[]resourcev1beta1.CounterSet](c, in.Spec.SharedCounters),
			PartitionTypeAttribute: (*resourcev1beta1.FullyQualifiedName)(copyPtr(in.Spec.PartitionTypeAttribute)),
			SkipNodeOperations:     same[[]resourcev1beta1.SkipNodeOperation](c, in.Spec.SkipNodeOperations),
		},
	}
	for _, d := range in.Spec.Devices {
		// The basic device is the v1 device without its name.
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(data, &fields); err != nil {
			t.Fatal(err)
		}
		delete(fields, "name")
		out.Spec.Devices = append(out.Spec.Devices, resourcev1beta1.Device{
			Name:  d.Name,
			Basic: same[*resourcev1beta1.BasicDevice](c, fields),
		})
	}
	check(t, c)
	return out
}

func check(t *testing.T, c *converter) {
	t.Helper()
	if c.err != nil {
		t.Fatal(c.err)
	}
}

// sameBack converts a v1 object to an older version of the same fields.
func sameBack[Out any, POut interface {
	*Out
	runtime.Object
}](t *testing.T, in runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	c := &converter{}
	out := sameObject[Out, POut](c, in, gvk)
	check(t, c)
	return out
}

// TestConvertRoundTrip fills every field of each v1 type, converts it to each older version
// kube-apiserver 1.37 serves and back with Convert, and expects the object it started with: a
// field that a conversion drops or moves wrongly makes the objects differ.
func TestConvertRoundTrip(t *testing.T) {
	v1beta2 := resourcev1beta2.SchemeGroupVersion
	v1alpha3 := resourcev1alpha3.SchemeGroupVersion
	cases := []struct {
		name string
		// fresh is a new, empty v1 object of the kind.
		fresh func() runtime.Object
		// back converts the filled v1 object to the older version.
		back func(t *testing.T, obj runtime.Object) runtime.Object
	}{
		{"ResourceClaim v1beta1", func() runtime.Object { return &resourceapi.ResourceClaim{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return claimToV1beta1(t, o.(*resourceapi.ResourceClaim))
			}},
		{"ResourceClaimTemplate v1beta1", func() runtime.Object { return &resourceapi.ResourceClaimTemplate{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return templateToV1beta1(t, o.(*resourceapi.ResourceClaimTemplate))
			}},
		{"ResourceSlice v1beta1", func() runtime.Object { return &resourceapi.ResourceSlice{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return sliceToV1beta1(t, o.(*resourceapi.ResourceSlice))
			}},
		{"DeviceClass v1beta1", func() runtime.Object { return &resourceapi.DeviceClass{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return sameBack[resourcev1beta1.DeviceClass](t, o, resourcev1beta1.SchemeGroupVersion.WithKind("DeviceClass"))
			}},
		{"ResourceClaim v1beta2", func() runtime.Object { return &resourceapi.ResourceClaim{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return sameBack[resourcev1beta2.ResourceClaim](t, o, v1beta2.WithKind("ResourceClaim"))
			}},
		{"ResourceClaimTemplate v1beta2", func() runtime.Object { return &resourceapi.ResourceClaimTemplate{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return sameBack[resourcev1beta2.ResourceClaimTemplate](t, o, v1beta2.WithKind("ResourceClaimTemplate"))
			}},
		{"ResourceSlice v1beta2", func() runtime.Object { return &resourceapi.ResourceSlice{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return sameBack[resourcev1beta2.ResourceSlice](t, o, v1beta2.WithKind("ResourceSlice"))
			}},
		{"DeviceClass v1beta2", func() runtime.Object { return &resourceapi.DeviceClass{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return sameBack[resourcev1beta2.DeviceClass](t, o, v1beta2.WithKind("DeviceClass"))
			}},
		{"DeviceTaintRule v1beta2", func() runtime.Object { return &resourceapi.DeviceTaintRule{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return sameBack[resourcev1beta2.DeviceTaintRule](t, o, v1beta2.WithKind("DeviceTaintRule"))
			}},
		{"DeviceTaintRule v1alpha3", func() runtime.Object { return &resourceapi.DeviceTaintRule{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return sameBack[resourcev1alpha3.DeviceTaintRule](t, o, v1alpha3.WithKind("DeviceTaintRule"))
			}},
		{"PodGroup scheduling v1alpha3", func() runtime.Object { return &schedulingapi.PodGroup{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return sameBack[schedulingv1alpha3.PodGroup](t, o, schedulingv1alpha3.SchemeGroupVersion.WithKind("PodGroup"))
			}},
		{"Workload scheduling v1alpha3", func() runtime.Object { return &schedulingapi.Workload{} },
			func(t *testing.T, o runtime.Object) runtime.Object {
				return sameBack[schedulingv1alpha3.Workload](t, o, schedulingv1alpha3.SchemeGroupVersion.WithKind("Workload"))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range int64(50) {
				want := tc.fresh()
				filler(seed).Fill(want)
				kinds, _, err := scheme().ObjectKinds(want)
				if err != nil {
					t.Fatal(err)
				}
				want.GetObjectKind().SetGroupVersionKind(kinds[0])
				wantCopy := want.DeepCopyObject()

				old := tc.back(t, want)
				if old.GetObjectKind().GroupVersionKind() == kinds[0] {
					t.Fatalf("reverse conversion stayed in %v", kinds[0])
				}
				got, err := Convert(old)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if !apiequality.Semantic.DeepEqual(want, got) {
					wantJSON, _ := json.Marshal(want)
					gotJSON, _ := json.Marshal(got)
					t.Fatalf("seed %d: round trip changed the object\nwant %s\ngot  %s", seed, wantJSON, gotJSON)
				}
				if !apiequality.Semantic.DeepEqual(want, wantCopy) {
					t.Fatalf("seed %d: conversion changed its input", seed)
				}
			}
		})
	}
}
