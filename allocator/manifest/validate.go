package manifest

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourceapi "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
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
		return append(objectMeta(&o.ObjectMeta, true, true), podResources(&o.Spec, spec)...)
	case *corev1.Node:
		return objectMeta(&o.ObjectMeta, false, false)
	case *corev1.Namespace:
		return objectMeta(&o.ObjectMeta, false, false)
	case *corev1.ResourceQuota:
		return objectMeta(&o.ObjectMeta, true, false)
	case *nodev1.RuntimeClass:
		return runtimeClass(o)
	case *appsv1.Deployment:
		// ValidateDeploymentSpec: replicas non-negative.
		errs := append(objectMeta(&o.ObjectMeta, true, false), nonNegative(o.Spec.Replicas, spec.Child("replicas"))...)
		return append(errs, podResources(&o.Spec.Template.Spec, spec.Child("template", "spec"))...)
	case *appsv1.ReplicaSet:
		errs := append(objectMeta(&o.ObjectMeta, true, false), nonNegative(o.Spec.Replicas, spec.Child("replicas"))...)
		return append(errs, podResources(&o.Spec.Template.Spec, spec.Child("template", "spec"))...)
	case *appsv1.StatefulSet:
		// ValidateStatefulSetSpec: replicas and ordinals.start non-negative.
		errs := append(objectMeta(&o.ObjectMeta, true, false), nonNegative(o.Spec.Replicas, spec.Child("replicas"))...)
		if o.Spec.Ordinals != nil {
			errs = append(errs, nonNegative(&o.Spec.Ordinals.Start, spec.Child("ordinals", "start"))...)
		}
		return append(errs, podResources(&o.Spec.Template.Spec, spec.Child("template", "spec"))...)
	case *appsv1.DaemonSet:
		return append(objectMeta(&o.ObjectMeta, true, false), podResources(&o.Spec.Template.Spec, spec.Child("template", "spec"))...)
	case *batchv1.Job:
		// ValidateJobSpec: parallelism and completions non-negative.
		errs := append(objectMeta(&o.ObjectMeta, true, false), nonNegative(o.Spec.Parallelism, spec.Child("parallelism"))...)
		errs = append(errs, nonNegative(o.Spec.Completions, spec.Child("completions"))...)
		return append(errs, podResources(&o.Spec.Template.Spec, spec.Child("template", "spec"))...)
	}
	return nil
}

// runtimeClass validates what admission takes from a RuntimeClass as ValidateRuntimeClass does
// (k8s.io/kubernetes pkg/apis/node/validation): its name, its handler (a DNS label), its overhead (no
// negative amount).
func runtimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	errs := objectMeta(&rc.ObjectMeta, false, false)
	for _, msg := range validation.IsDNS1123Label(rc.Handler) {
		errs = append(errs, field.Invalid(field.NewPath("handler"), rc.Handler, msg))
	}
	if rc.Overhead != nil {
		p := field.NewPath("overhead", "podFixed")
		for _, name := range sortedResourceNames(rc.Overhead.PodFixed) {
			if q := rc.Overhead.PodFixed[name]; q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	return errs
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// podResources validates the containers' extended resources as kube-apiserver's
// ValidateResourceRequirements does (pkg/apis/core/validation): an extended resource (a name with a
// domain outside kubernetes.io, as example.com/gpu) must be a whole number, cannot be overcommitted, so
// a request needs a limit and must equal it. Without it a pod the API server refuses would be placed,
// and a fractional amount would give the extended-resource claim a request for no device.
func podResources(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(c *corev1.Container, p *field.Path) {
		res := p.Child("resources")
		for name, q := range c.Resources.Limits {
			if isExtendedResource(name) && q.MilliValue()%1000 != 0 {
				errs = append(errs, field.Invalid(res.Child("limits").Key(string(name)), q.String(), "must be an integer"))
			}
		}
		for name, q := range c.Resources.Requests {
			if !isExtendedResource(name) {
				continue
			}
			reqPath := res.Child("requests").Key(string(name))
			if q.MilliValue()%1000 != 0 {
				errs = append(errs, field.Invalid(reqPath, q.String(), "must be an integer"))
			}
			limit, ok := c.Resources.Limits[name]
			switch {
			case !ok:
				errs = append(errs, field.Required(res.Child("limits").Key(string(name)), "Limit must be set for non overcommitable resources"))
			case q.Cmp(limit) != 0:
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit", name)))
			}
		}
	}
	for i := range spec.InitContainers {
		check(&spec.InitContainers[i], path.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		check(&spec.Containers[i], path.Child("containers").Index(i))
	}
	return errs
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

// isExtendedResource is kube-apiserver's IsExtendedResourceName (pkg/apis/core/helper): a name with a
// domain outside kubernetes.io that is a valid quota name once prefixed with "requests.".
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") || strings.HasPrefix(s, "requests.") {
		return false
	}
	return len(validation.IsQualifiedName("requests."+s)) == 0
}

// adminAccess refuses a claim or template that asks for admin access in a namespace of the input
// without the label resource.kubernetes.io/admin-access: "true", as kube-apiserver refuses it on create
// (AuthorizedForAdmin, pkg/registry/resource). A namespace not in the input is not known, and the
// claim is read as it is.
func (d *decoder) adminAccess() error {
	if len(d.objs.Namespaces) == 0 {
		return nil
	}
	labelled := make(map[string]bool, len(d.objs.Namespaces))
	for _, ns := range d.objs.Namespaces {
		labelled[ns.Name] = ns.Labels[resourceapi.DRAAdminNamespaceLabelKey] == "true"
	}
	check := func(obj runtime.Object, namespace string, requests []resourceapi.DeviceRequest, path *field.Path) error {
		ok, known := labelled[namespace]
		if !known || ok {
			return nil
		}
		for i, r := range requests {
			if r.Exactly == nil || r.Exactly.AdminAccess == nil || !*r.Exactly.AdminAccess {
				continue
			}
			p := path.Index(i).Child("exactly", "adminAccess")
			src, _ := d.objs.Source(obj)
			return &Error{Source: src, Object: objectName(obj, nil), Field: p.String(), Err: fmt.Errorf("%w: %s: Forbidden: admin access to devices requires the `%s: true` label on the containing namespace",
				ErrInvalid, p, resourceapi.DRAAdminNamespaceLabelKey)}
		}
		return nil
	}
	for _, c := range d.objs.Claims {
		if err := check(c, c.Namespace, c.Spec.Devices.Requests, field.NewPath("spec", "devices", "requests")); err != nil {
			return err
		}
	}
	for _, t := range d.objs.Templates {
		if err := check(t, t.Namespace, t.Spec.Spec.Devices.Requests, field.NewPath("spec", "spec", "devices", "requests")); err != nil {
			return err
		}
	}
	return nil
}
