package validation

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Object validates obj with the function for its kind: [ResourceSlice], [DeviceClass],
// [ResourceClaim], [ResourceClaimTemplate] or [DeviceTaintRule]. Objects of other kinds (Pods, Nodes,
// PodGroups) are outside this package and give an empty list. It is the one entry point for code that
// handles objects of mixed kinds, like a loader of kubectl output.
func Object(obj runtime.Object, opts Options) field.ErrorList {
	switch o := obj.(type) {
	case *resourceapi.ResourceSlice:
		return ResourceSlice(o, opts)
	case *resourceapi.DeviceClass:
		return DeviceClass(o, opts)
	case *resourceapi.ResourceClaim:
		return ResourceClaim(o, opts)
	case *resourceapi.ResourceClaimTemplate:
		return ResourceClaimTemplate(o, opts)
	case *resourceapi.DeviceTaintRule:
		return DeviceTaintRule(o, opts)
	}
	return nil
}
