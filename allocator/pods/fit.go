package pods

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/dralloc/dralloc/allocator"
)

// The filters of kube-scheduler (v1.37.2, pkg/scheduler/framework/plugins) that look at the node and at
// the pods on it rather than at devices: NodeName, NodeUnschedulable, NodePorts and NodeResourcesFit, and
// the SchedulingGates plugin that keeps a gated pod out of the scheduling queue. They run in the order of
// the default profile (getDefaultPlugins): NodeName, NodeUnschedulable, TaintToleration, NodeAffinity,
// NodePorts, NodeResourcesFit; like the framework's RunFilterPlugins the first that fails gives the
// node's reason.

// Filter names one of kube-scheduler's filter plugins that the Cluster reproduces; Options.DisableFilters
// switches them off one by one.
type Filter string

const (
	// NodeName is the NodeName plugin: a pod whose spec.nodeName is set runs on that node only.
	NodeName Filter = "NodeName"
	// NodeUnschedulable is the NodeUnschedulable plugin: a node with spec.unschedulable takes only pods
	// that tolerate the node.kubernetes.io/unschedulable:NoSchedule taint.
	NodeUnschedulable Filter = "NodeUnschedulable"
	// NodePorts is the NodePorts plugin: the host ports of the pod's containers (and sidecars) must be
	// free on the node.
	NodePorts Filter = "NodePorts"
	// NodeResourcesFit is the NodeResourcesFit plugin: the pod's requests (resourcehelper.PodRequests:
	// containers summed, init containers and sidecars as they run, pod overhead) of cpu, memory,
	// ephemeral-storage, hugepages and device-plugin extended resources, and one of the node's pods,
	// must fit into status.allocatable less what the pods on the node request.
	NodeResourcesFit Filter = "NodeResourcesFit"
	// SchedulingGates is the SchedulingGates plugin: a pod with spec.schedulingGates is not scheduled
	// ([ErrSchedulingGated]).
	SchedulingGates Filter = "SchedulingGates"
)

// ErrSchedulingGated reports a pod with spec.schedulingGates: kube-scheduler does not try to schedule it
// until every gate is removed.
var ErrSchedulingGated = errors.New("pod is waiting for scheduling gates")

// The reasons of the filters, in kube-scheduler's words.
const (
	reasonNodeName      = "node(s) didn't match the requested node name"               // nodename.ErrReason
	reasonUnschedulable = "node(s) were unschedulable"                                 // nodeunschedulable.ErrReasonUnschedulable
	reasonNodePorts     = "node(s) didn't have free ports for the requested pod ports" // nodeports.ErrReason
	reasonTooManyPods   = "Too many pods"                                              // noderesources.fitsRequest
)

func (c *Cluster) filterOn(f Filter) bool { return !slices.Contains(c.opts.DisableFilters, f) }

// gatedError is the error for a pod with scheduling gates, in the words of the SchedulingGates plugin's
// PreEnqueue ("waiting for scheduling gates: [a b]"); nil when the pod has none or the filter is off.
func (c *Cluster) gatedError(pod *v1.Pod) error {
	if len(pod.Spec.SchedulingGates) == 0 || !c.filterOn(SchedulingGates) {
		return nil
	}
	return fmt.Errorf("%s: %w: %v", podName(pod), ErrSchedulingGated, gateNames(pod))
}

func gateNames(pod *v1.Pod) []string {
	gates := make([]string, 0, len(pod.Spec.SchedulingGates))
	for _, g := range pod.Spec.SchedulingGates {
		gates = append(gates, g.Name)
	}
	return gates
}

// hostPort is a port a pod takes on its node, sanitized as HostPortInfo does: an empty IP is 0.0.0.0,
// an empty protocol TCP.
type hostPort struct {
	ip       string
	protocol v1.Protocol
	port     int32
}

const bindAll = "0.0.0.0" // framework.DefaultBindAllHostIP

// hostPorts is util.GetHostPorts: the ports with a hostPort of the regular containers and of the init
// containers that run as long as the pod (restartPolicy Always).
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
			if hp.ip == "" {
				hp.ip = bindAll
			}
			if hp.protocol == "" {
				hp.protocol = v1.ProtocolTCP
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// conflicts is HostPortInfo.CheckConflict: a port on 0.0.0.0 conflicts with the same protocol and port
// on any IP, a port on another IP with the same on that IP or on 0.0.0.0.
func conflicts(used []hostPort, p hostPort) bool {
	for _, u := range used {
		if u.port == p.port && u.protocol == p.protocol && (p.ip == bindAll || u.ip == bindAll || u.ip == p.ip) {
			return true
		}
	}
	return false
}

// demand is what a pod takes on its node for the node-level filters, computed once per pod.
type demand struct {
	requests map[v1.ResourceName]int64 // cpu in millicores, the others in units; only positive ones
	names    []v1.ResourceName         // the keys of requests in the order fitsRequest reports them
	ports    []hostPort
	// nonZeroCPU and nonZeroMem are the cpu (millicores) and memory the scheduler's scores count for a
	// pod on a node (nonZeroOf), for the Scheduler choice only; 0 under the others.
	nonZeroCPU, nonZeroMem int64
}

// demandOf is the pod's requests as NodeResourcesFit computes them (computePodResourceRequest for the pod
// to schedule, NodeInfo's calculateResource for the pods on a node: resourcehelper.PodRequests with
// pod-level resources and, for status resources, InPlacePodVerticalScaling, both on in 1.37), kept for
// the resources the scheduler counts (framework.Resource.Add: cpu, memory, ephemeral-storage and the
// scalar resources), and its host ports.
func demandOf(pod *v1.Pod) demand {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	d := demand{requests: make(map[v1.ResourceName]int64, len(reqs)), ports: hostPorts(pod)}
	for name, q := range reqs {
		var v int64
		switch {
		case name == v1.ResourceCPU:
			v = q.MilliValue()
		case name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage || isScalarResourceName(name):
			v = q.Value()
		}
		if v > 0 {
			d.requests[name] = v
			d.names = append(d.names, name)
		}
	}
	sortResourceNames(d.names)
	return d
}

// boundDemand is the demand of a pod on a node: demandOf, with, for the Scheduler choice, what its
// scores count of the pod (nonZeroOf). The other choices do not pay for it.
func (c *Cluster) boundDemand(pod *v1.Pod) demand {
	d := demandOf(pod)
	if c.opts.Choice == Scheduler {
		d.nonZeroCPU, d.nonZeroMem = nonZeroOf(pod)
	}
	return d
}

// sortResourceNames sorts as fitsRequest checks: cpu, memory, ephemeral-storage, then the scalar
// resources by name (upstream ranges over a map; a fixed order keeps the reasons deterministic).
func sortResourceNames(names []v1.ResourceName) {
	rank := func(n v1.ResourceName) int {
		switch n {
		case v1.ResourceCPU:
			return 0
		case v1.ResourceMemory:
			return 1
		case v1.ResourceEphemeralStorage:
			return 2
		}
		return 3
	}
	slices.SortFunc(names, func(a, b v1.ResourceName) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(string(a), string(b))
	})
}

// isScalarResourceName is the scheduler's IsScalarResourceName: extended resources, hugepages,
// kubernetes.io/-prefixed native resources and attachable volumes.
func isScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	return (isDRAExtendedResourceName(name) && !strings.HasPrefix(s, "deviceclass.resource.kubernetes.io/")) ||
		strings.HasPrefix(s, v1.ResourceHugePagesPrefix) || strings.Contains(s, v1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix)
}

// usage is what the pods on one node take: their number, the sum of their requests and their host
// ports. A usage is never changed once stored (a change stores a new one), so that forks share them.
type usage struct {
	pods      int
	requested map[v1.ResourceName]int64
	ports     []hostPort
	// nonZeroCPU and nonZeroMem are the sums of the pods' demand.nonZeroCPU and nonZeroMem (NodeInfo's
	// NonZeroRequested).
	nonZeroCPU, nonZeroMem int64
}

// with returns the usage with the demand added (sign 1) or taken away (sign -1).
func (u *usage) with(d demand, sign int) *usage {
	out := &usage{requested: map[v1.ResourceName]int64{}}
	if u != nil {
		out.pods, out.nonZeroCPU, out.nonZeroMem = u.pods, u.nonZeroCPU, u.nonZeroMem
		maps.Copy(out.requested, u.requested)
		out.ports = slices.Clone(u.ports)
	}
	out.pods += sign
	out.nonZeroCPU += int64(sign) * d.nonZeroCPU
	out.nonZeroMem += int64(sign) * d.nonZeroMem
	for name, v := range d.requests {
		out.requested[name] += int64(sign) * v
		if out.requested[name] == 0 {
			delete(out.requested, name)
		}
	}
	if sign > 0 {
		out.ports = append(out.ports, d.ports...)
	} else {
		for _, p := range d.ports {
			if i := slices.Index(out.ports, p); i >= 0 {
				out.ports = slices.Delete(out.ports, i, i+1)
			}
		}
	}
	return out
}

// boundPod is a pod the Cluster knows to be on a node: added by the caller or assumed.
type boundPod struct {
	node   string
	demand demand
	group  string // spec.schedulingGroup.podGroupName, for GangScheduling's count of scheduled pods
}

// AddOrUpdatePod tells the Cluster about a pod of the cluster, so that the node-level filters
// (NodeResourcesFit, NodePorts) count it: a pod bound to a node (spec.nodeName set) that is not terminal
// (status.phase Succeeded or Failed), as kube-scheduler's cache holds the assigned pods of its informer,
// which leaves terminal ones out. A pod without a node, or terminal, is forgotten instead. Pods are
// known by namespace and name; the pod is not kept, only what it takes on its node. Feed it the bound
// pods of the cluster (Assume records the pods it places itself).
func (c *Cluster) AddOrUpdatePod(pod *v1.Pod) error {
	if pod == nil {
		return &allocator.InputError{Object: "Pod", Err: errors.New("nil object")}
	}
	if pod.Name == "" {
		return &allocator.InputError{Object: "Pod " + pod.Namespace + "/", Field: "metadata.name", Err: errors.New("must not be empty")}
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	c.mu.Lock()
	if pod.Spec.NodeName == "" || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		old, had := c.forgetLocked(key)
		c.mu.Unlock()
		if had {
			c.fullIdx.freed([]string{old}, false, nil)
		}
		return nil
	}
	old, had := c.recordLocked(key, pod.Spec.NodeName, c.boundDemand(pod), pod)
	c.mu.Unlock()
	// What the pod took before (an update of a known pod) is free again, and the pod takes from its
	// node: the indexes ask those nodes again (nodeindex.go, rankindex.go), after the record and
	// without c.mu, which a placement asking nodes reads under a rank's lock.
	if had {
		c.fullIdx.freed([]string{old}, false, nil)
	}
	c.fullIdx.touched([]string{pod.Spec.NodeName}, false, false, allocator.Revision{}, allocator.Revision{})
	return nil
}

// DeletePod forgets a pod given to AddOrUpdatePod or assumed: what it took on its node is free again.
func (c *Cluster) DeletePod(namespace, name string) {
	if node, ok := c.forget(namespace, name); ok {
		c.fullIdx.freed([]string{node}, false, nil)
	}
}

// forget forgets the pod on its node, and returns the node; false when the pod was not known. The
// caller tells the node index (nodeIndex.freed).
func (c *Cluster) forget(namespace, name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.forgetLocked(types.NamespacedName{Namespace: namespace, Name: name})
}

// podChange is one change of the pods on nodes of a fork: pod recorded on node, or (pod nil) forgotten.
type podChange struct {
	key    types.NamespacedName
	node   string
	demand demand
	pod    *v1.Pod
}

// recordLocked records the pod on the node; when the pod was known it is forgotten first, and the node
// it was on is returned with true, for the caller to tell the node index (nodeIndex.freed) once c.mu is
// released.
func (c *Cluster) recordLocked(key types.NamespacedName, node string, d demand, pod *v1.Pod) (string, bool) {
	old, had := c.forgetLocked(key)
	if c.parent != nil {
		c.podLog = append(c.podLog, podChange{key: key, node: node, demand: d, pod: pod})
	}
	if c.bound == nil {
		c.bound = map[types.NamespacedName]*boundPod{}
		c.usage = map[string]*usage{}
	}
	group := ""
	if pod != nil && pod.Spec.SchedulingGroup != nil && pod.Spec.SchedulingGroup.PodGroupName != nil {
		group = *pod.Spec.SchedulingGroup.PodGroupName
	}
	c.bound[key] = &boundPod{node: node, demand: d, group: group}
	c.usage[node] = c.usage[node].with(d, 1)
	return old, had
}

// forgetLocked forgets the pod and returns the node it was on; false when it was not known. What the
// pod took is free again, so that the node may fit pods it was found full for: the caller tells the
// node index (nodeIndex.freed, or reset), once c.mu is released where the rank indexes are marked.
func (c *Cluster) forgetLocked(key types.NamespacedName) (string, bool) {
	b, ok := c.bound[key]
	if !ok {
		return "", false
	}
	if c.parent != nil {
		c.podLog = append(c.podLog, podChange{key: key})
	}
	delete(c.bound, key)
	u := c.usage[b.node].with(b.demand, -1)
	if u.pods <= 0 {
		delete(c.usage, b.node)
	} else {
		c.usage[b.node] = u
	}
	return b.node, true
}

// knownOn reports whether the pod is known to be on the node already.
func (c *Cluster) knownOn(pod *v1.Pod, node string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	b, ok := c.bound[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]
	return ok && b.node == node
}

// recordPlacements records the pods of placements written into the snapshot on their nodes, and returns
// the nodes that pods known before were on (recordLocked).
func (c *Cluster) recordPlacements(ps []*Placement) (freed []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range ps {
		if p == nil || p.Pod == nil {
			continue
		}
		if old, had := c.recordLocked(types.NamespacedName{Namespace: p.Pod.Namespace, Name: p.Pod.Name}, p.Node, c.boundDemand(p.Pod), p.Pod); had {
			freed = append(freed, old)
		}
	}
	return freed
}

// usageOf is what the known pods take on the node; nil when none.
func (c *Cluster) usageOf(node string) *usage {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.usage[node]
}

// nodeFilters runs NodeName and NodeUnschedulable, the filters before TaintToleration.
func (c *Cluster) nodeFilters(pod *v1.Pod, node *v1.Node) string {
	// nodename.Fits.
	if c.filterOn(NodeName) && pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return reasonNodeName
	}
	// NodeUnschedulable.Filter: a pod that tolerates the unschedulable taint tolerates spec.unschedulable.
	if c.filterOn(NodeUnschedulable) && node.Spec.Unschedulable &&
		!corev1helpers.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations, &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}, false) {
		return reasonUnschedulable
	}
	return ""
}

// fitFilters runs NodePorts and NodeResourcesFit for pods that go to the node together (one pod, or the
// pods of a group that the gang search puts there), on top of the pods already on it.
func (c *Cluster) fitFilters(reqs []*request, node *v1.Node) string {
	ports, fit := c.filterOn(NodePorts), c.filterOn(NodeResourcesFit)
	if !ports && !fit {
		return ""
	}
	u := c.usageOf(node.Name)
	if ports {
		// nodeports.fitsPorts; ports of the pods placed together are checked against each other too.
		var used []hostPort
		if u != nil {
			used = u.ports
		}
		added := false
		for _, r := range reqs {
			for _, p := range r.demand.ports {
				if conflicts(used, p) {
					return reasonNodePorts
				}
			}
			if len(reqs) > 1 {
				if !added {
					used, added = slices.Clone(used), true
				}
				used = append(used, r.demand.ports...)
			}
		}
	}
	if fit {
		return fitsRequest(reqs, node, u)
	}
	return ""
}

// fitsRequest is noderesources.fitsRequest: "Too many pods" when the node's allocatable pods (none: 0)
// are taken, then "Insufficient <resource>" for every resource the pods request more of than is left:
// cpu, memory, ephemeral-storage, then the scalar resources by name. An extended resource that a
// DeviceClass maps and the node's allocatable has none of is left to DRA (shouldDelegateResourceToDRA).
// The reasons are joined with ", ", as the scheduler lists a node under each. One pod (Place) is checked
// without allocating unless it does not fit.
func fitsRequest(reqs []*request, node *v1.Node, u *usage) string {
	alloc := node.Status.Allocatable
	var reasons []string
	onNode := 0
	if u != nil {
		onNode = u.pods
	}
	if allowed := alloc[v1.ResourcePods]; int64(onNode+len(reqs)) > allowed.Value() {
		reasons = append(reasons, reasonTooManyPods)
	}
	delegated := func(r *request, name v1.ResourceName) bool {
		if r.ext == nil || r.ext.classes[name] == nil || !isScalarResourceName(name) {
			return false
		}
		q := alloc[name]
		return q.Value() <= 0 // DRA's: the extended-resource claim asks for it
	}
	check := func(name v1.ResourceName, want int64) {
		q := alloc[name]
		capacity := q.Value()
		if name == v1.ResourceCPU {
			capacity = q.MilliValue()
		}
		var used int64
		if u != nil {
			used = u.requested[name]
		}
		if want > capacity-used {
			reasons = append(reasons, "Insufficient "+string(name))
		}
	}
	if len(reqs) == 1 {
		r := reqs[0]
		for _, name := range r.demand.names {
			if !delegated(r, name) {
				check(name, r.demand.requests[name])
			}
		}
		return strings.Join(reasons, ", ")
	}
	want := map[v1.ResourceName]int64{}
	var names []v1.ResourceName
	for _, r := range reqs {
		for _, name := range r.demand.names {
			if delegated(r, name) {
				continue
			}
			if _, ok := want[name]; !ok {
				names = append(names, name)
			}
			want[name] += r.demand.requests[name]
		}
	}
	sortResourceNames(names)
	for _, name := range names {
		check(name, want[name])
	}
	return strings.Join(reasons, ", ")
}

// fitKey says what the node-level filters see of a node beyond its spec: its allocatable and what the
// pods on it take. Nodes with the same key (and the same predicate verdicts) are alike for them.
func (c *Cluster) fitKey(node *v1.Node) string {
	if !c.filterOn(NodePorts) && !c.filterOn(NodeResourcesFit) {
		return ""
	}
	u := c.usageOf(node.Name)
	if u == nil {
		u = &usage{}
	}
	ports := slices.Clone(u.ports)
	slices.SortFunc(ports, func(a, b hostPort) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	alloc := make([]string, 0, len(node.Status.Allocatable))
	for name, q := range node.Status.Allocatable {
		alloc = append(alloc, string(name)+"="+q.String())
	}
	slices.Sort(alloc)
	// fmt prints maps sorted by key.
	return fmt.Sprint(alloc, u.pods, u.requested, ports)
}
