package manifest

import (
	"fmt"
	"strings"
	"weak"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Objects are the objects read from manifests, each kind in the order of the input. Slices is
// empty when Options.TakeSlice took the ResourceSlices as they were read.
type Objects struct {
	Pods       []*corev1.Pod
	Nodes      []*corev1.Node
	Slices     []*resourceapi.ResourceSlice
	Classes    []*resourceapi.DeviceClass
	Claims     []*resourceapi.ResourceClaim
	Templates  []*resourceapi.ResourceClaimTemplate
	TaintRules []*resourceapi.DeviceTaintRule
	PodGroups  []*schedulingapi.PodGroup
	Workloads  []*schedulingapi.Workload
	// Namespaces are read for what decides whether a claim is valid: the label
	// resource.kubernetes.io/admin-access that admin access to devices needs.
	Namespaces []*corev1.Namespace
	// RuntimeClasses (node.k8s.io/v1) are read for what the RuntimeClass admission plugin gives
	// the pods that name one: their overhead, node selector and tolerations.
	RuntimeClasses []*nodev1.RuntimeClass
	// ResourceQuotas are read for the limits on devices they declare (see
	// allocator.QuotaFromResourceQuotas); the loader does not refuse pods over them.
	ResourceQuotas []*corev1.ResourceQuota

	// Skipped are the documents of kinds this package does not read, when Options.SkipUnknown is set.
	Skipped []Skipped

	// sources are keyed by weak pointers (see sourceKey), so that an object the caller lets go of
	// (dractl drops each ResourceSlice once the snapshot has its copy) is not kept alive by its
	// Source: the objects of a large dump are most of the memory of reading it.
	sources map[any]Source
}

// Skipped is a document of a kind the loader does not read.
type Skipped struct {
	Source Source
	// Kind is the apiVersion and kind, like "v1 Namespace".
	Kind string
}

// Source says where an object was read: the file, the document in it and the item of a List.
type Source struct {
	// File is the file name given to Decode or found by Load; "-" is stdin.
	File string
	// Document counts the documents of a YAML stream, or the objects of a JSON stream, from 1.
	// Documents without an object (only comments or whitespace) are not counted.
	Document int
	// Item counts the items of a List from 1; it is 0 for an object that is not in a List.
	Item int
	// Owner is the kind and name of the workload ("Deployment default/web") a pod was expanded
	// from; empty for objects read as they are.
	Owner string
}

// String formats the source as "file: document 2, item 3 (Deployment default/web)".
func (s Source) String() string {
	var b strings.Builder
	b.WriteString(s.File)
	if s.Document > 0 {
		fmt.Fprintf(&b, ": document %d", s.Document)
	}
	if s.Item > 0 {
		fmt.Fprintf(&b, ", item %d", s.Item)
	}
	if s.Owner != "" {
		fmt.Fprintf(&b, " (%s)", s.Owner)
	}
	return b.String()
}

// Source returns where obj, one of the pointers in o, was read.
func (o *Objects) Source(obj runtime.Object) (Source, bool) {
	s, ok := o.sources[sourceKey(obj)]
	return s, ok
}

// Len returns the number of objects in o, not counting skipped documents.
func (o *Objects) Len() int {
	return len(o.Pods) + len(o.Nodes) + len(o.Slices) + len(o.Classes) + len(o.Claims) +
		len(o.Templates) + len(o.TaintRules) + len(o.PodGroups) + len(o.Workloads) + len(o.Namespaces) + len(o.RuntimeClasses) +
		len(o.ResourceQuotas)
}

// Append adds the objects of other to o, after o's, keeping their sources.
func (o *Objects) Append(other *Objects) {
	o.Pods = append(o.Pods, other.Pods...)
	o.Nodes = append(o.Nodes, other.Nodes...)
	o.Slices = append(o.Slices, other.Slices...)
	o.Classes = append(o.Classes, other.Classes...)
	o.Claims = append(o.Claims, other.Claims...)
	o.Templates = append(o.Templates, other.Templates...)
	o.TaintRules = append(o.TaintRules, other.TaintRules...)
	o.PodGroups = append(o.PodGroups, other.PodGroups...)
	o.Workloads = append(o.Workloads, other.Workloads...)
	o.Namespaces = append(o.Namespaces, other.Namespaces...)
	o.RuntimeClasses = append(o.RuntimeClasses, other.RuntimeClasses...)
	o.ResourceQuotas = append(o.ResourceQuotas, other.ResourceQuotas...)
	o.Skipped = append(o.Skipped, other.Skipped...)
	if o.sources == nil && len(other.sources) > 0 {
		o.sources = make(map[any]Source, len(other.sources))
	}
	for key, s := range other.sources {
		o.sources[key] = s
	}
}

// add files obj, a converted and defaulted v1 (v1beta1 for scheduling) object, under its kind; it
// reports false for an object of another kind.
func (o *Objects) add(obj runtime.Object, src Source) bool {
	switch obj := obj.(type) {
	case *corev1.Pod:
		o.Pods = append(o.Pods, obj)
	case *corev1.Node:
		o.Nodes = append(o.Nodes, obj)
	case *resourceapi.ResourceSlice:
		o.Slices = append(o.Slices, obj)
	case *resourceapi.DeviceClass:
		o.Classes = append(o.Classes, obj)
	case *resourceapi.ResourceClaim:
		o.Claims = append(o.Claims, obj)
	case *resourceapi.ResourceClaimTemplate:
		o.Templates = append(o.Templates, obj)
	case *resourceapi.DeviceTaintRule:
		o.TaintRules = append(o.TaintRules, obj)
	case *schedulingapi.PodGroup:
		o.PodGroups = append(o.PodGroups, obj)
	case *schedulingapi.Workload:
		o.Workloads = append(o.Workloads, obj)
	case *corev1.Namespace:
		o.Namespaces = append(o.Namespaces, obj)
	case *nodev1.RuntimeClass:
		o.RuntimeClasses = append(o.RuntimeClasses, obj)
	case *corev1.ResourceQuota:
		o.ResourceQuotas = append(o.ResourceQuotas, obj)
	default:
		return false
	}
	o.setSource(obj, src)
	return true
}

func (o *Objects) setSource(obj runtime.Object, src Source) {
	if o.sources == nil {
		o.sources = make(map[any]Source)
	}
	o.sources[sourceKey(obj)] = src
}

// deleteSource forgets where obj was read.
func (o *Objects) deleteSource(obj runtime.Object) {
	delete(o.sources, sourceKey(obj))
}

// sourceKey is the key of obj in Objects.sources: a weak pointer to it, for the kinds Objects files
// (weak.Make(p) equals weak.Make(q) exactly when p == q, and never equals the weak pointer of an
// object allocated later at the same address), or obj itself for any other kind.
func sourceKey(obj runtime.Object) any {
	switch o := obj.(type) {
	case *corev1.Pod:
		return weak.Make(o)
	case *corev1.Node:
		return weak.Make(o)
	case *resourceapi.ResourceSlice:
		return weak.Make(o)
	case *resourceapi.DeviceClass:
		return weak.Make(o)
	case *resourceapi.ResourceClaim:
		return weak.Make(o)
	case *resourceapi.ResourceClaimTemplate:
		return weak.Make(o)
	case *resourceapi.DeviceTaintRule:
		return weak.Make(o)
	case *schedulingapi.PodGroup:
		return weak.Make(o)
	case *schedulingapi.Workload:
		return weak.Make(o)
	case *corev1.Namespace:
		return weak.Make(o)
	case *nodev1.RuntimeClass:
		return weak.Make(o)
	case *corev1.ResourceQuota:
		return weak.Make(o)
	}
	return obj
}
