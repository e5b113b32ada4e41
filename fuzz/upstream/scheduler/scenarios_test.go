package scheduler_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const gpuDriver = "gpu.example.com"

// node is a Node with room for 110 pods, 8 CPUs and 16Gi of memory, and extra in status.allocatable.
func node(name string, extra v1.ResourceList) *v1.Node {
	alloc := v1.ResourceList{
		v1.ResourcePods:   resource.MustParse("110"),
		v1.ResourceCPU:    resource.MustParse("8"),
		v1.ResourceMemory: resource.MustParse("16Gi"),
	}
	for k, v := range extra {
		alloc[k] = v
	}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	n.Status.Capacity = alloc.DeepCopy()
	n.Status.Allocatable = alloc
	return n
}

// gpus is the ResourceSlice of a node with n whole GPUs, gpu-0 …, of the given model.
func gpus(nodeName string, n int, model string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-gpus"}}
	s.Spec = resourceapi.ResourceSliceSpec{
		Driver:   gpuDriver,
		Pool:     resourceapi.ResourcePool{Name: nodeName, ResourceSliceCount: 1},
		NodeName: ptr.To(nodeName),
	}
	for i := range n {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"model": {StringValue: ptr.To(model)},
				"index": {IntValue: ptr.To(int64(i))},
			},
		})
	}
	return s
}

// gpuClass selects the GPU driver's devices; extended, when not empty, is its spec.extendedResourceName.
func gpuClass(name, extended string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: fmt.Sprintf("device.driver == %q", gpuDriver)}}}
	if extended != "" {
		c.Spec.ExtendedResourceName = ptr.To(extended)
	}
	return c
}

// claimSpec asks for count devices of class, every one matching the CEL selectors.
func claimSpec(class string, count int64, selectors ...string) resourceapi.ResourceClaimSpec {
	req := resourceapi.ExactDeviceRequest{DeviceClassName: class, Count: count, AllocationMode: resourceapi.DeviceAllocationModeExactCount}
	for _, s := range selectors {
		req.Selectors = append(req.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: s}})
	}
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &req}}}}
}

func template(name string, spec resourceapi.ResourceClaimSpec) *resourceapi.ResourceClaimTemplate {
	t := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}}
	t.Spec.ObjectMeta.Labels = map[string]string{"app": "oracle"}
	t.Spec.Spec = spec
	return t
}

func claim(name string, spec resourceapi.ResourceClaimSpec) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

// pod is a pod whose one container uses every claim; each entry is "name=template:T" or "name=claim:C".
func pod(name string, entries ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ctr := v1.Container{Name: "main", Image: "registry.k8s.io/pause:3.10"}
	for _, e := range entries {
		entry, ref, _ := strings.Cut(e, "=")
		kind, target, _ := strings.Cut(ref, ":")
		pc := v1.PodResourceClaim{Name: entry}
		if kind == "template" {
			pc.ResourceClaimTemplateName = ptr.To(target)
		} else {
			pc.ResourceClaimName = ptr.To(target)
		}
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, pc)
		ctr.Resources.Claims = append(ctr.Resources.Claims, v1.ResourceClaim{Name: entry})
	}
	p.Spec.Containers = []v1.Container{ctr}
	return p
}

// requesting gives the pod's container these requests (and the same limits, as extended resources need).
func requesting(p *v1.Pod, requests v1.ResourceList) *v1.Pod {
	p.Spec.Containers[0].Resources.Requests = requests
	limits := v1.ResourceList{}
	for k, v := range requests {
		if k != v1.ResourceCPU && k != v1.ResourceMemory {
			limits[k] = v
		}
	}
	if len(limits) > 0 {
		p.Spec.Containers[0].Resources.Limits = limits
	}
	return p
}

func podsNamed(prefix string, n int, entries ...string) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = pod(fmt.Sprintf("%s-%d", prefix, i), entries...)
	}
	return out
}

func handWritten() []*scenario {
	one := template("one-gpu", claimSpec("gpu", 1))
	two := template("two-gpu", claimSpec("gpu", 2))
	res := func(name string, q string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceName(name): resource.MustParse(q)}
	}
	taint := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0-broken"}}
	taint.Spec.DeviceSelector = &resourceapi.DeviceTaintSelector{Driver: ptr.To(gpuDriver), Pool: ptr.To("node-a"), Device: ptr.To("gpu-0")}
	taint.Spec.Taint = resourceapi.DeviceTaint{Key: "example.com/broken", Value: "true", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	tolerating := template("tolerating", claimSpec("gpu", 1))
	tolerating.Spec.Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{
		Key: "example.com/broken", Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoSchedule}}

	// The pool says it has two slices; the second never comes.
	halfPublished := gpus("node-a", 2, "a100")
	halfPublished.Spec.Pool.ResourceSliceCount = 2
	allGPUs := template("all-gpus", claimSpec("gpu", 0))
	allGPUs.Spec.Spec.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeAll

	return []*scenario{{
		name:      "whole GPUs from a template, until none is left",
		nodes:     []*v1.Node{node("node-a", nil), node("node-b", nil)},
		slices:    []*resourceapi.ResourceSlice{gpus("node-a", 2, "a100"), gpus("node-b", 2, "a100")},
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{one},
		pods:      podsNamed("train", 5, "gpu=template:one-gpu"),
	}, {
		name:      "two GPUs per pod: only the node with room",
		nodes:     []*v1.Node{node("node-a", nil), node("node-b", nil)},
		slices:    []*resourceapi.ResourceSlice{gpus("node-a", 3, "a100"), gpus("node-b", 1, "a100")},
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{one, two},
		pods: []*v1.Pod{pod("big-0", "gpu=template:two-gpu"), pod("big-1", "gpu=template:two-gpu"),
			pod("small-0", "gpu=template:one-gpu"), pod("two-entries", "a=template:one-gpu", "b=template:one-gpu"),
			pod("small-1", "gpu=template:one-gpu")},
	}, {
		name:      "a claim shared by pods follows its first pod's node",
		nodes:     []*v1.Node{node("node-a", nil), node("node-b", nil)},
		slices:    []*resourceapi.ResourceSlice{gpus("node-a", 1, "a100"), gpus("node-b", 2, "a100")},
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{one},
		claims:    []*resourceapi.ResourceClaim{claim("shared", claimSpec("gpu", 1))},
		pods: []*v1.Pod{pod("user-0", "gpu=claim:shared"), pod("user-1", "gpu=claim:shared"),
			pod("user-2", "shared=claim:shared", "own=template:one-gpu"), pod("user-3", "shared=claim:shared", "own=template:one-gpu")},
	}, {
		name:    "extended resource backed by a DeviceClass's extendedResourceName",
		nodes:   []*v1.Node{node("node-a", nil), node("node-b", nil)},
		slices:  []*resourceapi.ResourceSlice{gpus("node-a", 2, "a100"), gpus("node-b", 1, "a100")},
		classes: []*resourceapi.DeviceClass{gpuClass("gpu", "example.com/gpu")},
		pods: []*v1.Pod{requesting(pod("ext-0"), res("example.com/gpu", "2")), requesting(pod("ext-1"), res("example.com/gpu", "1")),
			requesting(pod("ext-2"), res("example.com/gpu", "1"))},
	}, {
		name:    "extended resource by the implicit deviceclass.resource.kubernetes.io name",
		nodes:   []*v1.Node{node("node-a", nil)},
		slices:  []*resourceapi.ResourceSlice{gpus("node-a", 2, "a100")},
		classes: []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		pods: []*v1.Pod{requesting(pod("implicit-0"), res("deviceclass.resource.kubernetes.io/gpu", "1")),
			requesting(pod("implicit-1"), res("deviceclass.resource.kubernetes.io/gpu", "2"))},
	}, {
		name:    "nothing fits: too many GPUs, no such model",
		nodes:   []*v1.Node{node("node-a", nil), node("node-b", nil)},
		slices:  []*resourceapi.ResourceSlice{gpus("node-a", 2, "a100"), gpus("node-b", 2, "a100")},
		classes: []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{template("three-gpu", claimSpec("gpu", 3)),
			template("h100", claimSpec("gpu", 1, `device.attributes["gpu.example.com"].model == "h100"`))},
		pods: []*v1.Pod{pod("three", "gpu=template:three-gpu"), pod("h100", "gpu=template:h100")},
	}, {
		name:      "a device tainted NoSchedule is left to pods that tolerate it",
		nodes:     []*v1.Node{node("node-a", nil), node("node-b", nil)},
		slices:    []*resourceapi.ResourceSlice{gpus("node-a", 1, "a100"), gpus("node-b", 1, "a100")},
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		rules:     []*resourceapi.DeviceTaintRule{taint},
		templates: []*resourceapi.ResourceClaimTemplate{one, tolerating},
		// The tolerant pod comes before the pod left pending: once a pod counts as pending, the scheduler
		// still retries it on every later event (a claim created for the next pod), and one loaded run here
		// ended with kube-scheduler binding the pending pod while the tolerant one stayed pending (not
		// reproduced in isolation, cause not found). In this order no pod follows the pending one.
		pods:  []*v1.Pod{pod("plain-0", "gpu=template:one-gpu"), pod("tolerant", "gpu=template:tolerating"), pod("plain-1", "gpu=template:one-gpu")},
		known: "deviceTaintRuleToleration",
	}, {
		name:      "cpu and memory: the node is too small for the pod",
		nodes:     []*v1.Node{node("node-a", nil)},
		slices:    []*resourceapi.ResourceSlice{gpus("node-a", 2, "a100")},
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{one},
		pods:      []*v1.Pod{requesting(pod("hungry", "gpu=template:one-gpu"), v1.ResourceList{v1.ResourceCPU: resource.MustParse("16")})},
	}, {
		name:    "a device plugin serves the resource with too few",
		nodes:   []*v1.Node{node("node-a", res("example.com/gpu", "1"))},
		slices:  []*resourceapi.ResourceSlice{gpus("node-a", 2, "a100")},
		classes: []*resourceapi.DeviceClass{gpuClass("gpu", "example.com/gpu")},
		pods:    []*v1.Pod{requesting(pod("plugin"), res("example.com/gpu", "2"))},
	}, {
		// The upstream allocator fails the whole attempt: kube-scheduler keeps the pod with SchedulerError.
		name:      "a request for all devices of a pool still being published is an error",
		nodes:     []*v1.Node{node("node-a", nil)},
		slices:    []*resourceapi.ResourceSlice{halfPublished},
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{allGPUs},
		pods:      []*v1.Pod{pod("every-gpu", "gpu=template:all-gpus")},
	}, {
		name:      "a basic PodGroup's claim from a template, shared by its pods",
		nodes:     []*v1.Node{node("node-a", nil), node("node-b", nil)},
		slices:    []*resourceapi.ResourceSlice{gpus("node-a", 1, "a100"), gpus("node-b", 2, "a100")},
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{one},
		groups:    []*schedulingapi.PodGroup{basicGroup("workers", "shared=one-gpu")},
		pods: []*v1.Pod{inGroup(pod("worker-0", "shared=template:one-gpu"), "workers"),
			inGroup(pod("worker-1", "shared=template:one-gpu", "own=template:one-gpu"), "workers")},
	}}
}

// basicGroup is a PodGroup with the basic scheduling policy and claims "entry=template" made from templates.
func basicGroup(name string, claims ...string) *schedulingapi.PodGroup {
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name}}
	g.Spec.SchedulingPolicy.Basic = &schedulingapi.BasicSchedulingPolicy{}
	for _, c := range claims {
		entry, tmpl, _ := strings.Cut(c, "=")
		g.Spec.ResourceClaims = append(g.Spec.ResourceClaims, schedulingapi.PodGroupResourceClaim{Name: entry, ResourceClaimTemplateName: ptr.To(tmpl)})
	}
	return g
}

func inGroup(p *v1.Pod, group string) *v1.Pod {
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	return p
}

// TestHandWrittenScenarios compares dralloc with kube-scheduler on hand-written scenarios, pod by pod.
func TestHandWrittenScenarios(t *testing.T) {
	c := client(t)
	tl := newTally()
	for _, sc := range handWritten() {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, c, sc, tl) })
	}
	t.Logf("hand-written scenarios against kube-scheduler:\n%s", tl.summary())
}
