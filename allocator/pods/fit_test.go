package pods_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator/pods"
)

// withRequests sets the requests ("name=quantity") of the pod's first container.
func withRequests(p *v1.Pod, reqs ...string) *v1.Pod {
	l := v1.ResourceList{}
	for _, r := range reqs {
		name, q, _ := strings.Cut(r, "=")
		l[v1.ResourceName(name)] = resource.MustParse(q)
	}
	p.Spec.Containers[0].Resources.Requests = l
	return p
}

func bound(name, node string, reqs ...string) *v1.Pod {
	p := withRequests(pod(name), reqs...)
	p.Spec.NodeName = node
	p.Status.Phase = v1.PodRunning
	return p
}

func hostPortPod(name string, port int32, ip string, proto v1.Protocol) *v1.Pod {
	p := pod(name)
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: port, HostIP: ip, Protocol: proto}}
	return p
}

// TestBuiltinFilters: each of kube-scheduler's node-level filters, with its reason in kube-scheduler's
// words on the nodes where the pod does not fit.
func TestBuiltinFilters(t *testing.T) {
	two := func(mod func(ns []*v1.Node)) []*v1.Node {
		ns := nodes(2)
		if mod != nil {
			mod(ns)
		}
		return ns
	}
	tests := []struct {
		name       string
		opts       pods.Options
		nodes      []*v1.Node
		onNodes    []*v1.Pod // bound pods given to AddOrUpdatePod
		pod        *v1.Pod
		wantNode   string
		wantReason string // n1's reason, when the pod does not go there
	}{
		{name: "NodeName: a pod with spec.nodeName goes to that node only", nodes: two(nil),
			pod:      func() *v1.Pod { p := pod("p"); p.Spec.NodeName = "n2"; return p }(),
			wantNode: "n2", wantReason: "node(s) didn't match the requested node name"},
		{name: "NodeUnschedulable: a cordoned node takes no pod", nodes: two(func(ns []*v1.Node) { ns[0].Spec.Unschedulable = true }),
			pod: pod("p"), wantNode: "n2", wantReason: "node(s) were unschedulable"},
		{name: "NodeUnschedulable: unless the pod tolerates the unschedulable taint", nodes: two(func(ns []*v1.Node) { ns[0].Spec.Unschedulable = true }),
			pod: func() *v1.Pod {
				p := pod("p")
				p.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
				return p
			}(), wantNode: "n1"},
		{name: "NodeUnschedulable switched off", opts: pods.Options{DisableFilters: []pods.Filter{pods.NodeUnschedulable}},
			nodes: two(func(ns []*v1.Node) { ns[0].Spec.Unschedulable = true }), pod: pod("p"), wantNode: "n1"},
		{name: "NodePorts: a host port in use on the node", nodes: two(nil), onNodes: []*v1.Pod{func() *v1.Pod {
			p := hostPortPod("web", 8080, "", "")
			p.Spec.NodeName = "n1"
			return p
		}()}, pod: hostPortPod("p", 8080, "", ""), wantNode: "n2", wantReason: "node(s) didn't have free ports for the requested pod ports"},
		{name: "NodePorts: 0.0.0.0 conflicts with a port on one IP", nodes: two(nil), onNodes: []*v1.Pod{func() *v1.Pod {
			p := hostPortPod("web", 8080, "10.0.0.1", v1.ProtocolTCP)
			p.Spec.NodeName = "n1"
			return p
		}()}, pod: hostPortPod("p", 8080, "", ""), wantNode: "n2", wantReason: "node(s) didn't have free ports for the requested pod ports"},
		{name: "NodePorts: another IP or protocol is free", nodes: two(nil), onNodes: []*v1.Pod{func() *v1.Pod {
			p := hostPortPod("web", 8080, "10.0.0.1", v1.ProtocolUDP)
			p.Spec.NodeName = "n1"
			return p
		}()}, pod: hostPortPod("p", 8080, "10.0.0.2", v1.ProtocolUDP), wantNode: "n1"},
		{name: "NodePorts: a sidecar's host port counts", nodes: two(nil), onNodes: []*v1.Pod{func() *v1.Pod {
			p := pod("web")
			always := v1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []v1.Container{{Name: "proxy", RestartPolicy: &always, Ports: []v1.ContainerPort{{ContainerPort: 1, HostPort: 9000}}}}
			p.Spec.NodeName = "n1"
			return p
		}()}, pod: hostPortPod("p", 9000, "", ""), wantNode: "n2", wantReason: "node(s) didn't have free ports for the requested pod ports"},
		{name: "NodeResourcesFit: cpu taken by a bound pod", nodes: two(nil), onNodes: []*v1.Pod{bound("busy", "n1", "cpu=30")},
			pod: withRequests(pod("p"), "cpu=4"), wantNode: "n2", wantReason: "Insufficient cpu"},
		{name: "NodeResourcesFit: exactly what is left fits", nodes: two(nil), onNodes: []*v1.Pod{bound("busy", "n1", "cpu=28")},
			pod: withRequests(pod("p"), "cpu=4"), wantNode: "n1"},
		{name: "NodeResourcesFit: a terminal pod takes nothing", nodes: two(nil), onNodes: []*v1.Pod{func() *v1.Pod {
			p := bound("done", "n1", "cpu=30")
			p.Status.Phase = v1.PodSucceeded
			return p
		}()}, pod: withRequests(pod("p"), "cpu=4"), wantNode: "n1"},
		{name: "NodeResourcesFit: memory and cpu are both named", nodes: two(nil), onNodes: []*v1.Pod{bound("busy", "n1", "cpu=30", "memory=120Gi")},
			pod: withRequests(pod("p"), "cpu=4", "memory=16Gi"), wantNode: "n2", wantReason: "Insufficient cpu, Insufficient memory"},
		{name: "NodeResourcesFit: init containers count at their largest, sidecars on top", nodes: two(func(ns []*v1.Node) {
			ns[0].Status.Allocatable[v1.ResourceCPU] = resource.MustParse("3")
		}), pod: func() *v1.Pod {
			// Containers 1 CPU, a sidecar 1 CPU, an init container 2 CPUs after the sidecar started: 3 CPUs
			// at once (PodRequests), which n1 has; 4 with a second CPU in the containers, which it has not.
			p := withRequests(pod("p"), "cpu=1")
			always := v1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []v1.Container{
				{Name: "sidecar", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}},
				{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}},
			}
			return p
		}(), wantNode: "n1"},
		{name: "NodeResourcesFit: pod overhead counts", nodes: two(func(ns []*v1.Node) {
			ns[0].Status.Allocatable[v1.ResourceCPU] = resource.MustParse("3")
		}), pod: func() *v1.Pod {
			p := withRequests(pod("p"), "cpu=3")
			p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}
			return p
		}(), wantNode: "n2", wantReason: "Insufficient cpu"},
		{name: "NodeResourcesFit: a node with allocatable pods 0 fits nothing, even a pod without requests", nodes: two(func(ns []*v1.Node) {
			ns[0].Status.Allocatable[v1.ResourcePods] = resource.MustParse("0")
		}), pod: pod("p"), wantNode: "n2", wantReason: "Too many pods"},
		{name: "NodeResourcesFit: a node without allocatable has room for no pod", nodes: two(func(ns []*v1.Node) {
			ns[0].Status.Allocatable = nil
		}), pod: pod("p"), wantNode: "n2", wantReason: "Too many pods"},
		{name: "NodeResourcesFit: the pods of the node count", nodes: two(func(ns []*v1.Node) {
			ns[0].Status.Allocatable[v1.ResourcePods] = resource.MustParse("1")
		}), onNodes: []*v1.Pod{bound("busy", "n1")}, pod: pod("p"), wantNode: "n2", wantReason: "Too many pods"},
		{name: "NodeResourcesFit: hugepages", nodes: two(func(ns []*v1.Node) {
			ns[1].Status.Allocatable["hugepages-2Mi"] = resource.MustParse("1Gi")
		}), pod: withRequests(pod("p"), "hugepages-2Mi=512Mi", "memory=1Gi"), wantNode: "n2", wantReason: "Insufficient hugepages-2Mi"},
		{name: "NodeResourcesFit: a device plugin's extended resource", nodes: two(func(ns []*v1.Node) {
			ns[0].Status.Allocatable["example.com/nic"] = resource.MustParse("1")
			ns[1].Status.Allocatable["example.com/nic"] = resource.MustParse("2")
		}), pod: withRequests(pod("p"), "example.com/nic=2"), wantNode: "n2", wantReason: "Insufficient example.com/nic"},
		{name: "NodeResourcesFit switched off", opts: pods.Options{DisableFilters: []pods.Filter{pods.NodeResourcesFit}},
			nodes: two(nil), onNodes: []*v1.Pod{bound("busy", "n1", "cpu=30")}, pod: withRequests(pod("p"), "cpu=4"), wantNode: "n1"},
		{name: "the first failing filter gives the reason, in the default profile's order", nodes: two(func(ns []*v1.Node) {
			ns[0].Spec.Unschedulable = true
			ns[0].Spec.Taints = []v1.Taint{{Key: "maintenance", Effect: v1.TaintEffectNoSchedule}}
			ns[0].Labels = nil
		}), pod: func() *v1.Pod {
			p := withRequests(pod("p"), "cpu=64")
			p.Spec.NodeSelector = map[string]string{"zone": "b"}
			p.Spec.NodeName = "n1"
			return p
		}(), wantReason: "node(s) were unschedulable"},
		{name: "TaintToleration before NodeAffinity", nodes: two(func(ns []*v1.Node) {
			ns[0].Spec.Taints = []v1.Taint{{Key: "maintenance", Effect: v1.TaintEffectNoSchedule}}
		}), pod: func() *v1.Pod {
			p := pod("p")
			p.Spec.NodeSelector = map[string]string{"zone": "c"}
			return p
		}(), wantReason: "node(s) had untolerated taint {maintenance: }"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(t, tt.opts, 0, tt.nodes...)
			for _, b := range tt.onNodes {
				must(t, c.AddOrUpdatePod(b))
			}
			p, err := c.Place(context.Background(), tt.pod)
			var nn *pods.NoNodeError
			switch {
			case tt.wantNode == "" && !errors.As(err, &nn):
				t.Fatalf("placed %v, error %v; want a NoNodeError", p, err)
			case tt.wantNode == "":
			case err != nil:
				t.Fatalf("error %v, want node %s", err, tt.wantNode)
			case p.Node != tt.wantNode:
				t.Fatalf("placed on %s, want %s", p.Node, tt.wantNode)
			}
			if tt.wantReason == "" {
				return
			}
			e, err := c.Explain(context.Background(), tt.pod)
			must(t, err)
			if got := e.Nodes[0]; got.Fits || got.Reason != tt.wantReason {
				t.Errorf("n1: fits %v, reason %q; want %q", got.Fits, got.Reason, tt.wantReason)
			}
			if nn != nil && nn.Nodes[0].Reason != tt.wantReason {
				t.Errorf("NoNodeError on n1: %q, want %q", nn.Nodes[0].Reason, tt.wantReason)
			}
		})
	}
}

// TestAssumedPodsCount: a pod assumed on a node takes its requests there until it is removed, and a
// fork sees what its parent knew.
func TestAssumedPodsCount(t *testing.T) {
	ns := nodes(1)
	ns[0].Status.Allocatable[v1.ResourceCPU] = resource.MustParse("4")
	c := cluster(t, pods.Options{}, 0, ns...)
	ctx := context.Background()
	first := withRequests(pod("first"), "cpu=3")
	p, err := c.Place(ctx, first)
	must(t, err)
	must(t, c.Assume(p))
	second := withRequests(pod("second"), "cpu=2")
	if _, err := c.Place(ctx, second); !errors.Is(err, pods.ErrNoNode) || err.Error() != "pod default/second fits on no node: n1: Insufficient cpu" {
		t.Fatalf("second pod next to the assumed one: %v, want Insufficient cpu", err)
	}
	f := c.Fork()
	if _, err := f.Place(ctx, second); !errors.Is(err, pods.ErrNoNode) {
		t.Errorf("fork: %v, want the assumed pod counted there too", err)
	}
	must(t, f.Remove(first))
	if _, err := f.Place(ctx, second); err != nil {
		t.Errorf("fork after removing the first pod: %v", err)
	}
	if _, err := c.Place(ctx, second); !errors.Is(err, pods.ErrNoNode) {
		t.Errorf("parent after the fork removed the pod: %v, want it still counted", err)
	}
	f.Snapshot().Discard()
	must(t, c.Remove(first))
	if _, err := c.Place(ctx, second); err != nil {
		t.Errorf("after Remove: %v", err)
	}
	// A pod added, then deleted, then added without a node, takes nothing.
	must(t, c.AddOrUpdatePod(bound("other", "n1", "cpu=4")))
	if _, err := c.Place(ctx, second); !errors.Is(err, pods.ErrNoNode) {
		t.Errorf("next to a bound pod: %v, want no fit", err)
	}
	c.DeletePod("default", "other")
	if _, err := c.Place(ctx, second); err != nil {
		t.Errorf("after DeletePod: %v", err)
	}
	must(t, c.AddOrUpdatePod(bound("other", "n1", "cpu=4")))
	unbound := bound("other", "", "cpu=4")
	must(t, c.AddOrUpdatePod(unbound))
	if _, err := c.Place(ctx, second); err != nil {
		t.Errorf("after the pod lost its node: %v", err)
	}
	if err := c.AddOrUpdatePod(nil); err == nil {
		t.Error("nil pod accepted")
	}
}

// TestExtendedResourceAmountOnDevicePluginNode is the item 3: a device plugin node with too few
// of the resource does not take the pod; a DRA-only node serves it with the extended-resource claim.
func TestExtendedResourceAmountOnDevicePluginNode(t *testing.T) {
	ns := nodes(2)
	ns[0].Status.Allocatable["example.com/gpu"] = resource.MustParse("1") // n1: a device plugin with one
	c := cluster(t, pods.Options{}, 0, ns...)
	must(t, c.Snapshot().AddOrUpdateSlice(gpus("n2", 2))) // n2: DRA devices only
	must(t, c.Snapshot().AddOrUpdateClass(gpuClass("gpu", "example.com/gpu")))
	p := withExtended(pod("p"), "example.com/gpu", 2)
	pl, err := c.Place(context.Background(), p)
	must(t, err)
	if pl.Node != "n2" || pl.ExtendedResourceClaimStatus == nil || !slices.Equal(devices(pl), []string{"n2/gpu-0", "n2/gpu-1"}) {
		t.Fatalf("placed on %s with %v (extended claim %v), want n2 with its two GPUs through the extended-resource claim", pl.Node, devices(pl), pl.ExtendedResourceClaimStatus)
	}
	e, err := c.Explain(context.Background(), p)
	must(t, err)
	if got := e.Nodes[0].Reason; got != "Insufficient example.com/gpu" {
		t.Errorf("n1: %q, want Insufficient example.com/gpu", got)
	}
	// Alone, the device plugin node does not take it either.
	only := cluster(t, pods.Options{}, 0, ns[0])
	must(t, only.Snapshot().AddOrUpdateClass(gpuClass("gpu", "example.com/gpu")))
	var nn *pods.NoNodeError
	if _, err := only.Place(context.Background(), p); !errors.As(err, &nn) || nn.Nodes[0].Reason != "Insufficient example.com/gpu" {
		t.Errorf("device plugin node alone: %v, want Insufficient example.com/gpu", err)
	}
}

// TestSchedulingGates: a gated pod is not placed and is explained by its gates.
func TestSchedulingGates(t *testing.T) {
	c := cluster(t, pods.Options{}, 0, nodes(1)...)
	p := pod("p")
	p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/quota"}, {Name: "example.com/review"}}
	_, err := c.Place(context.Background(), p)
	if !errors.Is(err, pods.ErrSchedulingGated) || err.Error() != "Pod default/p: pod is waiting for scheduling gates: [example.com/quota example.com/review]" {
		t.Errorf("Place: %v, want ErrSchedulingGated", err)
	}
	e, err := c.Explain(context.Background(), p)
	must(t, err)
	if e.String() != "waiting for scheduling gates: [example.com/quota example.com/review]" || len(e.FitsOn) != 0 {
		t.Errorf("Explain: %q, want the gates", e.String())
	}
	off := cluster(t, pods.Options{DisableFilters: []pods.Filter{pods.SchedulingGates}}, 0, nodes(1)...)
	if _, err := off.Place(context.Background(), p); err != nil {
		t.Errorf("with SchedulingGates off: %v", err)
	}
}

// TestSearchGroupPlacementCountsRequestsTogether: two pods that each fit on a node alone do not fit there
// together; the gang search spreads them.
func TestSearchGroupPlacementCountsRequestsTogether(t *testing.T) {
	c := cluster(t, pods.Options{}, 0, nodes(2)...)
	g := gang(2, "")
	must(t, c.AddOrUpdatePodGroup(g))
	ps := members([]string{"a", "b"})
	for _, p := range ps {
		withRequests(p, "cpu=20")
	}
	gp, err := c.SearchGroupPlacement(context.Background(), g, ps, nil)
	must(t, err)
	if got := placedNodes(gp); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("placed on %v, want n1 n2 (32 CPUs a node, 20 a pod)", got)
	}
	ports := members([]string{"a", "b"})
	for _, p := range ports {
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
	}
	gp, err = c.SearchGroupPlacement(context.Background(), g, ports, nil)
	must(t, err)
	if got := placedNodes(gp); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("host ports: placed on %v, want n1 n2", got)
	}
	one := cluster(t, pods.Options{}, 0, nodes(1)...)
	must(t, one.AddOrUpdatePodGroup(g))
	if _, err := one.SearchGroupPlacement(context.Background(), g, ps, nil); !errors.Is(err, pods.ErrGroupUnschedulable) {
		t.Errorf("one node: %v, want ErrGroupUnschedulable", err)
	}
}
