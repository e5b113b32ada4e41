package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Convert returns obj in the version the loader hands out: resource.k8s.io/v1 for ResourceSlices,
// DeviceClasses, ResourceClaims, ResourceClaimTemplates and DeviceTaintRules of v1beta1, v1beta2 and
// v1alpha3, scheduling.k8s.io/v1beta1 for PodGroups and Workloads of v1alpha3. Objects already in
// those versions, and objects of other kinds, are returned as they are. The result shares no memory
// with obj, except when obj is returned.
func Convert(obj runtime.Object) (runtime.Object, error) {
	c := &converter{}
	var out runtime.Object
	switch in := obj.(type) {
	case *resourcev1beta1.ResourceClaim:
		out = c.claimV1beta1(in)
	case *resourcev1beta1.ResourceClaimTemplate:
		out = c.templateV1beta1(in)
	case *resourcev1beta1.ResourceSlice:
		out = c.sliceV1beta1(in)
	case *resourcev1beta1.DeviceClass:
		out = sameObject[resourceapi.DeviceClass](c, in, resourceapi.SchemeGroupVersion.WithKind("DeviceClass"))
	case *resourcev1beta2.ResourceClaim:
		out = sameObject[resourceapi.ResourceClaim](c, in, resourceapi.SchemeGroupVersion.WithKind("ResourceClaim"))
	case *resourcev1beta2.ResourceClaimTemplate:
		out = sameObject[resourceapi.ResourceClaimTemplate](c, in, resourceapi.SchemeGroupVersion.WithKind("ResourceClaimTemplate"))
	case *resourcev1beta2.ResourceSlice:
		out = sameObject[resourceapi.ResourceSlice](c, in, resourceapi.SchemeGroupVersion.WithKind("ResourceSlice"))
	case *resourcev1beta2.DeviceClass:
		out = sameObject[resourceapi.DeviceClass](c, in, resourceapi.SchemeGroupVersion.WithKind("DeviceClass"))
	case *resourcev1beta2.DeviceTaintRule:
		out = sameObject[resourceapi.DeviceTaintRule](c, in, resourceapi.SchemeGroupVersion.WithKind("DeviceTaintRule"))
	case *resourcev1alpha3.DeviceTaintRule:
		out = sameObject[resourceapi.DeviceTaintRule](c, in, resourceapi.SchemeGroupVersion.WithKind("DeviceTaintRule"))
	case *schedulingv1alpha3.PodGroup:
		out = sameObject[schedulingapi.PodGroup](c, in, schedulingapi.SchemeGroupVersion.WithKind("PodGroup"))
	case *schedulingv1alpha3.Workload:
		out = sameObject[schedulingapi.Workload](c, in, schedulingapi.SchemeGroupVersion.WithKind("Workload"))
	default:
		return obj, nil
	}
	if c.err != nil {
		return nil, c.err
	}
	return out, nil
}

// converter keeps the first error of a conversion, so that the field-by-field code reads straight.
type converter struct {
	err error
}

// same converts in to Out, a type with the same fields under the same JSON names, by encoding in as
// JSON and decoding it strictly: a field Out does not have is an error, never a silent loss. This is
// the path every object takes through kube-apiserver as well (JSON on the wire), so nil and empty
// lists and maps, quantities and times come out as the API server would store them.
func same[Out any](c *converter, in any) Out {
	var out Out
	if c.err != nil {
		return out
	}
	data, err := json.Marshal(in)
	if err != nil {
		c.err = fmt.Errorf("%w: converting %T: %v", ErrDecode, in, err)
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		c.err = fmt.Errorf("%w: converting %T to %T: %v", ErrDecode, in, out, err)
	}
	return out
}

// sameObject converts a whole object of the same fields and sets its apiVersion and kind.
func sameObject[Out any, POut interface {
	*Out
	runtime.Object
}](c *converter, in runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	out := POut(same[*Out](c, in))
	if c.err != nil || out == nil {
		return nil
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: kind}
}

// The conversions of resource.k8s.io/v1beta1 follow kube-apiserver's (k8s.io/kubernetes
// pkg/apis/resource/v1beta1/conversion.go and the generated conversions): the types differ only in
// DeviceRequest, Device and ResourceSliceSpec; everything below them is the same and is converted with
// same.

func (c *converter) claimV1beta1(in *resourcev1beta1.ResourceClaim) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		TypeMeta:   typeMeta("ResourceClaim"),
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec:       c.claimSpecV1beta1(&in.Spec),
		Status:     same[resourceapi.ResourceClaimStatus](c, &in.Status),
	}
}

func (c *converter) templateV1beta1(in *resourcev1beta1.ResourceClaimTemplate) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		TypeMeta:   typeMeta("ResourceClaimTemplate"),
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: resourceapi.ResourceClaimTemplateSpec{
			ObjectMeta: *in.Spec.ObjectMeta.DeepCopy(),
			Spec:       c.claimSpecV1beta1(&in.Spec.Spec),
		},
	}
}

func (c *converter) claimSpecV1beta1(in *resourcev1beta1.ResourceClaimSpec) resourceapi.ResourceClaimSpec {
	var out resourceapi.ResourceClaimSpec
	if in.Devices.Requests != nil {
		out.Devices.Requests = make([]resourceapi.DeviceRequest, len(in.Devices.Requests))
		for i := range in.Devices.Requests {
			out.Devices.Requests[i] = c.requestV1beta1(&in.Devices.Requests[i])
		}
	}
	out.Devices.Constraints = same[[]resourceapi.DeviceConstraint](c, in.Devices.Constraints)
	out.Devices.Config = same[[]resourceapi.DeviceClaimConfiguration](c, in.Devices.Config)
	return out
}

// requestV1beta1 moves the inline fields of a v1beta1 request into exactly. As kube-apiserver does,
// exactly is set when any of them is set, even next to firstAvailable: such a request is invalid, and
// validation, not conversion, says so.
func (c *converter) requestV1beta1(in *resourcev1beta1.DeviceRequest) resourceapi.DeviceRequest {
	out := resourceapi.DeviceRequest{
		Name:           in.Name,
		FirstAvailable: same[[]resourceapi.DeviceSubRequest](c, in.FirstAvailable),
	}
	if in.DeviceClassName != "" || in.Selectors != nil || in.AllocationMode != "" || in.Count != 0 ||
		in.AdminAccess != nil || in.Tolerations != nil || in.Capacity != nil || in.DerivedAttributes != nil {
		out.Exactly = &resourceapi.ExactDeviceRequest{
			DeviceClassName:   in.DeviceClassName,
			Selectors:         same[[]resourceapi.DeviceSelector](c, in.Selectors),
			AllocationMode:    resourceapi.DeviceAllocationMode(in.AllocationMode),
			Count:             in.Count,
			AdminAccess:       copyPtr(in.AdminAccess),
			Tolerations:       same[[]resourceapi.DeviceToleration](c, in.Tolerations),
			Capacity:          same[*resourceapi.CapacityRequirements](c, in.Capacity),
			DerivedAttributes: same[[]resourceapi.DeviceDerivedAttribute](c, in.DerivedAttributes),
		}
	}
	return out
}

// sliceV1beta1 converts a v1beta1 slice. Its nodeName and allNodes are plain values where v1 has
// pointers: "" and false, which v1beta1 cannot tell from unset, become unset.
func (c *converter) sliceV1beta1(in *resourcev1beta1.ResourceSlice) *resourceapi.ResourceSlice {
	out := &resourceapi.ResourceSlice{
		TypeMeta:   typeMeta("ResourceSlice"),
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: resourceapi.ResourceSliceSpec{
			Driver:                 in.Spec.Driver,
			Pool:                   same[resourceapi.ResourcePool](c, &in.Spec.Pool),
			NodeSelector:           in.Spec.NodeSelector.DeepCopy(),
			PerDeviceNodeSelection: copyPtr(in.Spec.PerDeviceNodeSelection),
			SharedCounters:         same[[]resourceapi.CounterSet](c, in.Spec.SharedCounters),
			PartitionTypeAttribute: (*resourceapi.FullyQualifiedName)(copyPtr(in.Spec.PartitionTypeAttribute)),
			SkipNodeOperations:     same[[]resourceapi.SkipNodeOperation](c, in.Spec.SkipNodeOperations),
		},
	}
	if in.Spec.NodeName != "" {
		out.Spec.NodeName = copyPtr(&in.Spec.NodeName)
	}
	if in.Spec.AllNodes {
		out.Spec.AllNodes = copyPtr(&in.Spec.AllNodes)
	}
	if in.Spec.Devices != nil {
		out.Spec.Devices = make([]resourceapi.Device, len(in.Spec.Devices))
		for i := range in.Spec.Devices {
			out.Spec.Devices[i] = c.deviceV1beta1(&in.Spec.Devices[i])
		}
	}
	return out
}

// deviceV1beta1 moves the fields of basic up into the device: v1's Device has exactly the fields of
// v1beta1's BasicDevice plus the name.
func (c *converter) deviceV1beta1(in *resourcev1beta1.Device) resourceapi.Device {
	var out resourceapi.Device
	if in.Basic != nil {
		out = same[resourceapi.Device](c, in.Basic)
	}
	out.Name = in.Name
	return out
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
