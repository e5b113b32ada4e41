package fragscore

import (
	"fmt"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/dralloc/dralloc/allocator/headroom"
)

// podClaims are the pod's claims that the DRA plugin will allocate: those of spec.resourceClaims not
// allocated yet, read from the tracker (assumed claims included). The names are those of
// [podClaimNames]. Claims of PodGroups and of DRA extended resources are not read.
func podClaims(t fwk.ResourceClaimTracker, pod *v1.Pod) ([]*resourceapi.ResourceClaim, error) {
	names, err := podClaimNames(pod)
	if err != nil {
		return nil, err
	}
	var out []*resourceapi.ResourceClaim
	for _, n := range names {
		c, err := t.Get(pod.Namespace, n.name)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: spec.resourceClaims[%d]: ResourceClaim %s: %w", pod.Namespace, pod.Name, n.index, n.name, err)
		}
		if c.Status.Allocation != nil || t.GetPendingAllocation(c.UID) != nil {
			continue // allocated before: its devices are taken wherever the pod goes
		}
		out = append(out, c)
	}
	return out, nil
}

// podClaimName is the name of the claim of the pod's spec.resourceClaims[index].
type podClaimName struct {
	index int
	name  string
}

// podClaimNames resolves the names of the pod's claims as the DRA plugin resolves them
// (k8s.io/dynamic-resource-allocation/resourceclaim.Name): resourceClaimName, or for a template the
// name in status.resourceClaimStatuses, where a nil name means no claim is needed.
func podClaimNames(pod *v1.Pod) ([]podClaimName, error) {
	out := make([]podClaimName, 0, len(pod.Spec.ResourceClaims))
	for i, pc := range pod.Spec.ResourceClaims {
		switch {
		case pc.ResourceClaimName != nil:
			out = append(out, podClaimName{i, *pc.ResourceClaimName})
		case pc.ResourceClaimTemplateName != nil:
			j := slices.IndexFunc(pod.Status.ResourceClaimStatuses, func(s v1.PodResourceClaimStatus) bool { return s.Name == pc.Name })
			if j < 0 {
				return nil, fmt.Errorf("pod %s/%s: spec.resourceClaims[%d]: the claim of template %s is not created yet", pod.Namespace, pod.Name, i, *pc.ResourceClaimTemplateName)
			}
			if n := pod.Status.ResourceClaimStatuses[j].ResourceClaimName; n != nil {
				out = append(out, podClaimName{i, *n})
			}
		default:
			return nil, fmt.Errorf("pod %s/%s: spec.resourceClaims[%d]: neither resourceClaimName nor resourceClaimTemplateName is set", pod.Namespace, pod.Name, i)
		}
	}
	return out, nil
}

// shapeOf is the pod's shape for the learned mix, read as headroom.ShapeOf reads it: each ExactCount
// request as Count whole devices or one share of the first capacity requested by name, and the pod's
// CPU and memory. Its name says all of that, so pods of one shape count as one.
func shapeOf(claims []*resourceapi.ResourceClaim, reqs v1.ResourceList) (headroom.Shape, error) {
	var s headroom.Shape
	s.CPU, s.Memory = reqs[v1.ResourceCPU], reqs[v1.ResourceMemory]
	name := "cpu=" + s.CPU.String() + ",memory=" + s.Memory.String()
	for _, c := range claims {
		for i, r := range c.Spec.Devices.Requests {
			e := r.Exactly
			if e == nil || e.AllocationMode != resourceapi.DeviceAllocationModeExactCount {
				return headroom.Shape{}, fmt.Errorf("ResourceClaim %s/%s: spec.devices.requests[%d]: only exactly with allocationMode ExactCount is a shape", c.Namespace, c.Name, i)
			}
			req := headroom.Request{Count: e.Count}
			if e.Capacity != nil && len(e.Capacity.Requests) > 0 {
				names := make([]string, 0, len(e.Capacity.Requests))
				for k := range e.Capacity.Requests {
					names = append(names, string(k))
				}
				slices.Sort(names)
				req.Capacity = resourceapi.QualifiedName(names[0])
				req.Amount = e.Capacity.Requests[req.Capacity]
			}
			s.Requests = append(s.Requests, req)
			name += ";" + strconv.FormatInt(req.Count, 10) + "x" + string(req.Capacity) + "=" + req.Amount.String()
		}
	}
	s.Name = name
	return s, nil
}
