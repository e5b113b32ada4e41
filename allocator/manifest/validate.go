package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// decisive validates the fields of Pods, Nodes and workloads that decide which pods are read and
// how they are named, as kube-apiserver validates them on create (k8s.io/kubernetes
// pkg/apis/apps/validation, pkg/apis/batch/validation, pkg/apis/core/validation): names and
// namespaces, a workload's replica, parallelism and completion counts and a StatefulSet's first
// ordinal. Without it a negative count would silently be no pods, a negative ordinal would give
// names like "s--5" and a pod without a name would be "default/". The rest of these objects is the
// API server's business, not the allocator's, and is left alone.
func decisive(obj runtime.Object) field.ErrorList {
	spec := field.NewPath("spec")
	switch o := obj.(type) {
	case *corev1.Pod:
		// ValidatePodName: a DNS subdomain; a pod with only generateName is named by the loader,
		// as kube-apiserver names it.
		return objectMeta(&o.ObjectMeta, true, true)
	case *corev1.Node:
		return objectMeta(&o.ObjectMeta, false, false)
	case *appsv1.Deployment:
		// ValidateDeploymentSpec: replicas non-negative.
		return append(objectMeta(&o.ObjectMeta, true, false), nonNegative(o.Spec.Replicas, spec.Child("replicas"))...)
	case *appsv1.ReplicaSet:
		return append(objectMeta(&o.ObjectMeta, true, false), nonNegative(o.Spec.Replicas, spec.Child("replicas"))...)
	case *appsv1.StatefulSet:
		// ValidateStatefulSetSpec: replicas and ordinals.start non-negative.
		errs := append(objectMeta(&o.ObjectMeta, true, false), nonNegative(o.Spec.Replicas, spec.Child("replicas"))...)
		if o.Spec.Ordinals != nil {
			errs = append(errs, nonNegative(&o.Spec.Ordinals.Start, spec.Child("ordinals", "start"))...)
		}
		return errs
	case *appsv1.DaemonSet:
		return objectMeta(&o.ObjectMeta, true, false)
	case *batchv1.Job:
		// ValidateJobSpec: parallelism and completions non-negative.
		errs := append(objectMeta(&o.ObjectMeta, true, false), nonNegative(o.Spec.Parallelism, spec.Child("parallelism"))...)
		return append(errs, nonNegative(o.Spec.Completions, spec.Child("completions"))...)
	}
	return nil
}

func nonNegative(v *int32, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return apivalidation.ValidateNonnegativeField(int64(*v), p)
}

// objectMeta is the part of ValidateObjectMeta that decides what is read: the name (or, where
// generate is set, the generateName) a DNS subdomain, the namespace of a namespaced object a DNS
// label. A workload needs its name: its pods are named after it.
func objectMeta(m *metav1.ObjectMeta, namespaced, generate bool) field.ErrorList {
	p := field.NewPath("metadata")
	var errs field.ErrorList
	switch {
	case m.Name != "":
		for _, msg := range apivalidation.NameIsDNSSubdomain(m.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), m.Name, msg))
		}
	case generate && m.GenerateName != "":
		for _, msg := range apivalidation.NameIsDNSSubdomain(m.GenerateName, true) {
			errs = append(errs, field.Invalid(p.Child("generateName"), m.GenerateName, msg))
		}
	case generate:
		errs = append(errs, field.Required(p.Child("name"), "name or generateName is required"))
	default:
		errs = append(errs, field.Required(p.Child("name"), "name is required"))
	}
	if namespaced {
		for _, msg := range apivalidation.NameIsDNSLabel(m.Namespace, false) {
			errs = append(errs, field.Invalid(p.Child("namespace"), m.Namespace, msg))
		}
	}
	return errs
}
