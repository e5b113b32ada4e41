package manifest

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// defaultPod applies, in kube-apiserver's order, the defaults of a pod's create path that bear on
// scheduling: SetObjectDefaults_Pod (k8s.io/kubernetes pkg/apis/core/v1), then the pod-level
// resources PrepareForCreate derives (pkg/registry/core/pod). Admission, which needs other objects,
// is the decoder's (admitPods).
func defaultPod(pod *corev1.Pod) {
	spec := &pod.Spec
	// SetDefaults_Pod.
	for i := range spec.Containers {
		defaultRequests(&spec.Containers[i].Resources)
	}
	for i := range spec.InitContainers {
		defaultRequests(&spec.InitContainers[i].Resources)
	}
	if spec.HostNetwork {
		defaultHostNetworkPorts(spec.Containers)
		defaultHostNetworkPorts(spec.InitContainers)
	}
	// SetDefaults_PodSpec.
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	// The generated defaults of the containers' ports and resources, then of the pod's overhead and
	// pod-level resources.
	for _, ctrs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range ctrs {
			defaultPortProtocols(ctrs[i].Ports)
			roundUp(ctrs[i].Resources.Limits)
			roundUp(ctrs[i].Resources.Requests)
		}
	}
	for i := range spec.EphemeralContainers {
		defaultPortProtocols(spec.EphemeralContainers[i].Ports)
	}
	roundUp(spec.Overhead)
	if spec.Resources != nil {
		roundUp(spec.Resources.Limits)
		roundUp(spec.Resources.Requests)
	}
	defaultPodLevelResources(pod)
}

// defaultRequests is the part of SetDefaults_Pod that gives a container without a request for a
// resource its limit as the request.
func defaultRequests(res *corev1.ResourceRequirements) {
	for name, limit := range res.Limits {
		if _, ok := res.Requests[name]; ok {
			continue
		}
		if res.Requests == nil {
			res.Requests = make(corev1.ResourceList)
		}
		res.Requests[name] = limit.DeepCopy()
	}
}

// defaultHostNetworkPorts is SetDefaults_Pod's defaultHostNetworkPorts: a pod on the host's network
// takes its containers' ports on the host, so a port without a hostPort gets its containerPort, and
// two such pods conflict on a node (NodePorts) as they do in the cluster.
func defaultHostNetworkPorts(ctrs []corev1.Container) {
	for i := range ctrs {
		for j := range ctrs[i].Ports {
			if ctrs[i].Ports[j].HostPort == 0 {
				ctrs[i].Ports[j].HostPort = ctrs[i].Ports[j].ContainerPort
			}
		}
	}
}

// defaultPortProtocols is the generated default of ContainerPort.protocol.
func defaultPortProtocols(ports []corev1.ContainerPort) {
	for i := range ports {
		if ports[i].Protocol == "" {
			ports[i].Protocol = corev1.ProtocolTCP
		}
	}
}

// roundUp is SetDefaults_ResourceList: every quantity rounded up to thousandths, so that 0.0001 cpu
// asks for 1m, as the API server stores it.
func roundUp(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

// defaultPodLevelResources is DefaultPodLevelResources (k8s.io/kubernetes pkg/api/pod/util.go), which
// the pod strategy's PrepareForCreate runs when PodLevelResources and PodLevelResourcesFixDefaulting
// are on, as both are by default in 1.37. Pod-level resources are cpu, memory and hugepages-*; its
// steps, in order:
//
//  1. a hugepage the containers limit, without a pod-level request or limit, gets the containers'
//     total as its pod-level limit;
//  2. cpu and memory without a pod-level request get the containers' total request, then every
//     pod-level limit without a request becomes the request;
//  3. a pod-level request without a limit gets as its limit the containers' total limit, raised to
//     the request, when every container (init and ephemeral ones too) has a limit for it.
//
// The totals are those of the scheduler (resourcehelper: the larger of the regular containers' sum
// and each init container's need, sidecars counted), of the containers alone.
func defaultPodLevelResources(pod *corev1.Pod) {
	res := pod.Spec.Resources
	if res == nil || len(res.Requests) == 0 && len(res.Limits) == 0 {
		return
	}
	ctrs := &corev1.Pod{Spec: corev1.PodSpec{Containers: pod.Spec.Containers, InitContainers: pod.Spec.InitContainers}}

	// 1. Hugepage limits.
	limits := res.Limits
	if limits == nil {
		limits = make(corev1.ResourceList)
	}
	for name, q := range resourcehelper.AggregateContainerLimits(ctrs, resourcehelper.PodResourcesOptions{}) {
		if !isHugePages(name) {
			continue
		}
		if _, ok := res.Requests[name]; ok {
			continue
		}
		if _, ok := limits[name]; !ok {
			limits[name] = q
		}
	}
	if len(limits) > 0 {
		res.Limits = limits
	}

	// 2. Requests.
	requests := res.Requests
	if requests == nil {
		requests = make(corev1.ResourceList)
	}
	for name, q := range resourcehelper.AggregateContainerRequests(ctrs, resourcehelper.PodResourcesOptions{}) {
		// Supported and overcommittable: cpu and memory, not hugepages.
		if _, ok := requests[name]; !ok && (name == corev1.ResourceCPU || name == corev1.ResourceMemory) {
			requests[name] = q
		}
	}
	for name, q := range res.Limits {
		if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			requests[name] = q.DeepCopy()
		}
	}
	if len(requests) > 0 {
		res.Requests = requests
	}

	// 3. Limits.
	var candidates []corev1.ResourceName
	for name := range res.Requests {
		if _, ok := res.Limits[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) && everyContainerLimits(&pod.Spec, name) {
			candidates = append(candidates, name)
		}
	}
	if len(candidates) == 0 {
		return
	}
	total := resourcehelper.AggregateContainerLimits(ctrs, resourcehelper.PodResourcesOptions{})
	for _, name := range candidates {
		limit, ok := total[name]
		if !ok {
			continue
		}
		if req := res.Requests[name]; req.Cmp(limit) > 0 {
			limit = req
		}
		if res.Limits == nil {
			res.Limits = make(corev1.ResourceList)
		}
		res.Limits[name] = limit
	}
}

// everyContainerLimits reports whether every container of spec, init and ephemeral ones included,
// has a limit for name.
func everyContainerLimits(spec *corev1.PodSpec, name corev1.ResourceName) bool {
	for _, ctrs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range ctrs {
			if _, ok := ctrs[i].Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	for i := range spec.EphemeralContainers {
		if _, ok := spec.EphemeralContainers[i].Resources.Limits[name]; !ok {
			return false
		}
	}
	return true
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
