package explainer

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// Unschedulable reports a pod kube-scheduler tried and could not place: not bound to a node, not
// finished, and with the condition PodScheduled=False, reason Unschedulable (as the scheduler's
// failure handler writes it, pkg/scheduler/schedule_one.go). A pod that waits for its scheduling gates
// has reason SchedulingGated and is not one.
func Unschedulable(pod *v1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable
		}
	}
	return false
}

// UsesDRA reports a pod whose scheduling involves Dynamic Resource Allocation: it has
// spec.resourceClaims (its own claims, templates and its PodGroup's claims are all named there), or it
// requests an extended resource that DRA serves or could serve — one a DeviceClass names in
// spec.extendedResourceName, an implicit deviceclass.resource.kubernetes.io/<class> name, or a
// qualified extended resource that no node advertises in status.allocatable (the device plugin that
// would serve it is absent, so only a DeviceClass could: a missing class is the likely reason).
func UsesDRA(pod *v1.Pod, classes []*resourceapi.DeviceClass, nodes []*v1.Node) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return true
	}
	return len(draExtendedResources(pod, classes, nodes)) > 0
}

// extendedRequest is one extended resource a pod requests that DRA serves or should serve.
type extendedRequest struct {
	name  v1.ResourceName
	class string // the DeviceClass that serves it; empty when none does
}

// draExtendedResources lists the pod's extended resources that DRA serves or that nothing serves, in
// the order of the containers' requests (init containers first), without repeats.
func draExtendedResources(pod *v1.Pod, classes []*resourceapi.DeviceClass, nodes []*v1.Node) []extendedRequest {
	var out []extendedRequest
	seen := map[v1.ResourceName]bool{}
	visit := func(cs []v1.Container) {
		for i := range cs {
			for name, q := range cs[i].Resources.Requests {
				if seen[name] || q.IsZero() || !extendedName(name) {
					continue
				}
				seen[name] = true
				if class := classFor(name, classes); class != "" {
					out = append(out, extendedRequest{name: name, class: class})
				} else if !advertised(name, nodes) {
					out = append(out, extendedRequest{name: name})
				}
			}
		}
	}
	visit(pod.Spec.InitContainers)
	visit(pod.Spec.Containers)
	return out
}

// extendedName is an extended resource name as kube-scheduler's IsDRAExtendedResourceName reads it:
// qualified with a domain other than kubernetes.io, or the implicit name of a class.
func extendedName(name v1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, resourceapi.ResourceDeviceClassPrefix) {
		return true
	}
	return strings.Contains(s, "/") && !strings.Contains(s, v1.ResourceDefaultNamespacePrefix) && !strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix)
}

// classFor is the DeviceClass that serves an extended resource: one naming it in
// spec.extendedResourceName, or the class of an implicit name (dralloc's pods layer decides which of
// several; here any one says DRA serves it).
func classFor(name v1.ResourceName, classes []*resourceapi.DeviceClass) string {
	implicit, isImplicit := strings.CutPrefix(string(name), resourceapi.ResourceDeviceClassPrefix)
	for _, c := range classes {
		if c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName == string(name) || isImplicit && c.Name == implicit {
			return c.Name
		}
	}
	return ""
}

func advertised(name v1.ResourceName, nodes []*v1.Node) bool {
	for _, n := range nodes {
		if q, ok := n.Status.Allocatable[name]; ok && !q.IsZero() {
			return true
		}
	}
	return false
}
