package pods

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/dralloc/dralloc/allocator"
)

// Extended resources backed by DRA, as kube-scheduler's dynamicresources plugin handles them
// (pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go, commit 7dbde21cc771):
// a pod's request for an extended resource that a DeviceClass maps (its spec.extendedResourceName, or
// deviceclass.resource.kubernetes.io/<class> for every class) becomes a request of one special claim
// per pod; on a node whose status.allocatable has the resource (a device plugin) it is left to the
// device plugin.

// extendedClasses maps extended resource names to the DeviceClass that serves them, as the scheduler's
// extended resource cache does: every class serves its implicit name; of several classes with the same
// spec.extendedResourceName, the one created last wins, and of those created at the same time the one
// whose name sorts first (as the API documents).
func extendedClasses(classes []*resourceapi.DeviceClass) map[v1.ResourceName]*resourceapi.DeviceClass {
	out := make(map[v1.ResourceName]*resourceapi.DeviceClass, len(classes))
	for _, class := range classes { // sorted by name
		out[v1.ResourceName(resourceapi.ResourceDeviceClassPrefix+class.Name)] = class
	}
	for _, class := range classes {
		if class.Spec.ExtendedResourceName == nil {
			continue
		}
		name := v1.ResourceName(*class.Spec.ExtendedResourceName)
		if prev, ok := out[name]; ok && prev.Spec.ExtendedResourceName != nil && *prev.Spec.ExtendedResourceName == string(name) &&
			!class.CreationTimestamp.After(prev.CreationTimestamp.Time) {
			continue // prev was created later, or at the same time with a name that sorts first
		}
		out[name] = class
	}
	return out
}

// isDRAExtendedResourceName is kube-scheduler's IsDRAExtendedResourceName: an extended resource name
// (qualified, with a domain other than kubernetes.io, not requests.*) or the implicit name of a class.
func isDRAExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, resourceapi.ResourceDeviceClassPrefix) {
		return true
	}
	if !strings.Contains(s, "/") || strings.Contains(s, v1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}

// extendedPlan is what a pod asks of extended resources that DRA may serve, before a node is chosen.
type extendedPlan struct {
	requests map[v1.ResourceName]int64 // the pod's requests (as PodRequests sums them) of extended resources
	names    []v1.ResourceName         // sorted keys of requests
	classes  map[v1.ResourceName]*resourceapi.DeviceClass
	existing *resourceapi.ResourceClaim // the claim created in an earlier cycle, if any
}

// planExtended returns nil when the pod requests no extended resource that a class maps.
func (c *Cluster) planExtended(snap *allocator.Snapshot, pod *v1.Pod) *extendedPlan {
	if c.opts.DisableExtendedResources {
		return nil
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	var classes map[v1.ResourceName]*resourceapi.DeviceClass
	p := &extendedPlan{requests: map[v1.ResourceName]int64{}}
	mapped := false
	for name, q := range reqs {
		if q.IsZero() || !isDRAExtendedResourceName(name) {
			continue
		}
		if classes == nil {
			classes = extendedClasses(snap.Classes())
		}
		p.requests[name] = q.Value()
		p.names = append(p.names, name)
		if classes[name] != nil {
			mapped = true
		}
	}
	if !mapped {
		return nil
	}
	slices.Sort(p.names)
	p.classes = classes
	for _, claim := range snap.ClaimsOwnedBy(pod.Namespace, uidOf(pod)) {
		if claim.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
			continue
		}
		if (ownerOf{apiVersion: "v1", kind: "Pod", name: pod.Name, uid: uidOf(pod)}).ownsByName(claim) {
			p.existing = claim
			break
		}
	}
	return p
}

// ownsByName is the scheduler's test for the extended-resource claim: an owner reference with
// controller: true and the pod's name and UID.
func (o ownerOf) ownsByName(claim *resourceapi.ResourceClaim) bool {
	for _, ref := range claim.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Name == o.name && ref.UID == o.uid {
			return true
		}
	}
	return false
}

// errExtendedUnfit is a node that neither a device plugin nor DRA can give a requested resource.
var errExtendedUnfit = errors.New("extended resource not served")

// forNode returns the requests that DRA must serve on the node (nil when the device plugins serve all of
// them), as filterExtendedResources decides: a resource a class maps goes to DRA when the node's
// allocatable has none of it; a resource no class maps must be in the node's allocatable. Whether the
// device plugin has enough of it is NodeResourcesFit's to say (fit.go), before this runs.
func (p *extendedPlan) forNode(node *v1.Node) (map[v1.ResourceName]int64, error) {
	var out map[v1.ResourceName]int64
	for _, name := range p.names {
		alloc, ok := node.Status.Allocatable[name]
		backed := p.classes[name] != nil
		switch {
		case backed && alloc.IsZero():
			if out == nil {
				out = map[v1.ResourceName]int64{}
			}
			out[name] = p.requests[name]
		case !ok:
			return nil, fmt.Errorf("%w: %s is neither allocatable on the node nor backed by a device class", errExtendedUnfit, name)
		}
	}
	return out, nil
}

// extendedClaim builds the special claim for the resources DRA serves on a node, with the request
// mappings for pod.status.extendedResourceClaimStatus.
func (c *Cluster) extendedClaim(pod *v1.Pod, p *extendedPlan, need map[v1.ResourceName]int64, name string) (*resourceapi.ResourceClaim, []v1.ContainerExtendedResourceRequest) {
	yes := true
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    pod.Namespace,
			Name:         name,
			GenerateName: pod.Name + "-extended-resources-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "Pod",
				Name:       pod.Name,
				UID:        uidOf(pod),
				Controller: &yes,
			}},
			Annotations: map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"},
		},
	}
	reqs, mappings := requestsAndMappings(pod, need, p.classes)
	claim.Spec.Devices.Requests = reqs
	return claim, mappings
}

// requestsAndMappings reproduces createRequestsAndMappings: per resource (sorted), one request per
// long-lived container (regular containers and sidecars, named container-<index>-request-<index of the
// resource among the container's sorted requests>, the index counting init containers first) for its
// count; non-sidecar init containers first reuse the requests of the long-lived containers after them
// and ask for the rest, and of their requests only the largest is kept, every init container mapped to
// it. The requests are sorted by name.
func requestsAndMappings(pod *v1.Pod, need map[v1.ResourceName]int64, classes map[v1.ResourceName]*resourceapi.DeviceClass) ([]resourceapi.DeviceRequest, []v1.ContainerExtendedResourceRequest) {
	containers := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		containers = append(containers, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		containers = append(containers, &pod.Spec.Containers[i])
	}
	shortLived := func(i int) bool {
		c := containers[i]
		return i < len(pod.Spec.InitContainers) && (c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways)
	}
	names := make([]v1.ResourceName, 0, len(need))
	for n := range need {
		names = append(names, n)
	}
	slices.Sort(names)

	var requests []resourceapi.DeviceRequest
	var mappings []v1.ContainerExtendedResourceRequest
	for _, rName := range names {
		class := classes[rName]
		if class == nil {
			continue
		}
		long := make([]*resourceapi.DeviceRequest, len(containers))
		var longMaps, shortMaps []v1.ContainerExtendedResourceRequest
		for i := range containers {
			if shortLived(i) {
				continue
			}
			req, m := containerRequest(i, containers[i], rName, class.Name, nil)
			long[i] = req
			longMaps = append(longMaps, m...)
		}
		var maxShort *resourceapi.DeviceRequest
		shortNames := map[string]bool{}
		for i := range containers {
			if !shortLived(i) {
				continue
			}
			req, m := containerRequest(i, containers[i], rName, class.Name, long[i:])
			if req != nil {
				shortNames[req.Name] = true
				if maxShort == nil || maxShort.Exactly.Count < req.Exactly.Count {
					maxShort = req
				}
			}
			shortMaps = append(shortMaps, m...)
		}
		if maxShort != nil && len(shortNames) > 1 {
			for i := range shortMaps {
				if shortNames[shortMaps[i].RequestName] {
					shortMaps[i].RequestName = maxShort.Name
				}
			}
		}
		if maxShort != nil {
			requests = append(requests, *maxShort)
		}
		for _, r := range long {
			if r != nil {
				requests = append(requests, *r)
			}
		}
		mappings = append(mappings, longMaps...)
		mappings = append(mappings, shortMaps...)
	}
	slices.SortStableFunc(requests, func(x, y resourceapi.DeviceRequest) int { return strings.Compare(x.Name, y.Name) })
	return requests, mappings
}

// containerRequest is createResourceRequestAndMappings: the container's request for the resource, after
// what reusable requests (of later long-lived containers, in order) already provide.
func containerRequest(index int, c *v1.Container, rName v1.ResourceName, className string, reusable []*resourceapi.DeviceRequest) (*resourceapi.DeviceRequest, []v1.ContainerExtendedResourceRequest) {
	q, ok := c.Resources.Requests[rName]
	if !ok {
		return nil, nil
	}
	want, ok := q.AsInt64()
	if !ok || want == 0 {
		return nil, nil
	}
	var mappings []v1.ContainerExtendedResourceRequest
	sum := int64(0)
	for _, r := range reusable {
		if r == nil {
			continue
		}
		sum += r.Exactly.Count
		mappings = append(mappings, v1.ContainerExtendedResourceRequest{ContainerName: c.Name, ResourceName: string(rName), RequestName: r.Name})
		if sum >= want {
			return nil, mappings
		}
	}
	keys := make([]string, 0, len(c.Resources.Requests))
	for k := range c.Resources.Requests {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	ridx := slices.Index(keys, string(rName))
	name := fmt.Sprintf("container-%d-request-%d", index, ridx)
	req := &resourceapi.DeviceRequest{
		Name: name,
		Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: className,
			AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
			Count:           want - sum,
		},
	}
	mappings = append(mappings, v1.ContainerExtendedResourceRequest{ContainerName: c.Name, ResourceName: string(rName), RequestName: name})
	return req, mappings
}

// MixedNode is a node where a device plugin advertises an extended resource that a DeviceClass also
// serves through DRA from devices on the node: the same hardware may be handed out twice.
type MixedNode struct {
	// Node is the node's name.
	Node string
	// Resource is the extended resource in the node's status.allocatable.
	Resource v1.ResourceName
	// Class is the DeviceClass that maps the resource.
	Class string
}

// MixedNodes lists the nodes of the snapshot, sorted by name and resource, where status.allocatable has
// a positive amount of an extended resource that a DeviceClass maps, and the class selects a device on
// the node (allocated or not, when DRAAdminAccess is on; free ones only otherwise). kube-scheduler
// then leaves the resource to the device plugin, while claims for the class may get the same devices.
func (c *Cluster) MixedNodes(ctx context.Context) ([]MixedNode, error) {
	classes := extendedClasses(c.snap.Classes())
	admin := c.snap.Features().DRAAdminAccess
	var out []MixedNode
	for _, node := range c.snap.Nodes() {
		names := make([]v1.ResourceName, 0, len(node.Status.Allocatable))
		for name, q := range node.Status.Allocatable {
			if q.Cmp(resource.Quantity{}) > 0 && classes[name] != nil && isDRAExtendedResourceName(name) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			class := classes[name]
			probe := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "probe", Name: "mixed-mode-probe"}}
			ex := &resourceapi.ExactDeviceRequest{DeviceClassName: class.Name, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}
			if admin {
				yes := true
				ex.AdminAccess = &yes
			}
			probe.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "probe", Exactly: ex}}
			fits, err := c.snap.Fits(ctx, node, []*resourceapi.ResourceClaim{probe})
			if err != nil {
				return nil, fmt.Errorf("node %s, resource %s: %w", node.Name, name, err)
			}
			if fits {
				out = append(out, MixedNode{Node: node.Name, Resource: name, Class: class.Name})
			}
		}
	}
	return out, nil
}
