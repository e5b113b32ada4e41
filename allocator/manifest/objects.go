package manifest

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Objects are the objects read from manifests, each kind in the order of the input.
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

	// Skipped are the documents of kinds this package does not read, when Options.SkipUnknown is set.
	Skipped []Skipped

	sources map[runtime.Object]Source
	// expanded are the pods expanded from workloads, and replicaSetsOf the Deployments whose
	// ReplicaSets were read; finish uses them to drop expansions the input already holds.
	expanded      map[*corev1.Pod]expansion
	replicaSetsOf map[ownerKey]bool
}

// ownerKey identifies a controller in a namespace.
type ownerKey struct {
	kind, namespace, name string
}

// expansion says which workload a pod was expanded from.
type expansion struct {
	// controller is the pod's controller: a ReplicaSet, StatefulSet or Job.
	controller ownerKey
	// deployment is the Deployment whose ReplicaSet controller is, for pods expanded from it.
	deployment ownerKey
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
	s, ok := o.sources[obj]
	return s, ok
}

// Len returns the number of objects in o, not counting skipped documents.
func (o *Objects) Len() int {
	return len(o.Pods) + len(o.Nodes) + len(o.Slices) + len(o.Classes) + len(o.Claims) +
		len(o.Templates) + len(o.TaintRules) + len(o.PodGroups) + len(o.Workloads)
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
	o.Skipped = append(o.Skipped, other.Skipped...)
	for obj, s := range other.sources {
		o.setSource(obj, s)
	}
	for pod, e := range other.expanded {
		o.markExpanded(pod, e)
	}
	for d := range other.replicaSetsOf {
		o.markReplicaSetOf(d)
	}
}

func (o *Objects) markExpanded(pod *corev1.Pod, e expansion) {
	if o.expanded == nil {
		o.expanded = make(map[*corev1.Pod]expansion)
	}
	o.expanded[pod] = e
}

func (o *Objects) markReplicaSetOf(deployment ownerKey) {
	if o.replicaSetsOf == nil {
		o.replicaSetsOf = make(map[ownerKey]bool)
	}
	o.replicaSetsOf[deployment] = true
}

// finish drops the pods expanded from a workload when the input already has that workload's
// pods (or, for a Deployment, one of its ReplicaSets), as `kubectl get all -o yaml` writes a
// Deployment, its ReplicaSets and their pods together: the pods that exist stand for the ones the
// controller would create.
func (o *Objects) finish() {
	if len(o.expanded) == 0 {
		return
	}
	live := make(map[ownerKey]bool)
	for _, pod := range o.Pods {
		if _, ok := o.expanded[pod]; ok {
			continue
		}
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			continue
		}
		live[ownerKey{ref.Kind, pod.Namespace, ref.Name}] = true
		// A ReplicaSet "<deployment>-<pod-template-hash>" is the deployment controller's.
		if hash := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ref.Kind == "ReplicaSet" && hash != "" {
			if d, ok := strings.CutSuffix(ref.Name, "-"+hash); ok {
				live[ownerKey{"Deployment", pod.Namespace, d}] = true
			}
		}
	}
	kept := o.Pods[:0]
	for _, pod := range o.Pods {
		e, ok := o.expanded[pod]
		if ok && (live[e.controller] || e.deployment != (ownerKey{}) && (live[e.deployment] || o.replicaSetsOf[e.deployment])) {
			delete(o.sources, pod)
			delete(o.expanded, pod)
			continue
		}
		kept = append(kept, pod)
	}
	clear(o.Pods[len(kept):])
	o.Pods = kept
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
	default:
		return false
	}
	o.setSource(obj, src)
	return true
}

func (o *Objects) setSource(obj runtime.Object, src Source) {
	if o.sources == nil {
		o.sources = make(map[runtime.Object]Source)
	}
	o.sources[obj] = src
}
