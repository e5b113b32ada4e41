package explainer

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// The objects of the tests: one driver whose devices have a model and a NUMA node.
const testDriver = "gpu.live.example"

// node is a Node with a kubelet's allocatable: kube-scheduler's NodeResourcesFit, which the pods package
// reproduces, fits no pod on a node without allocatable pods.
func node(name string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	n.Status.Allocatable = v1.ResourceList{v1.ResourcePods: resource.MustParse("110"), v1.ResourceCPU: resource.MustParse("32"),
		v1.ResourceMemory: resource.MustParse("128Gi")}
	return n
}

type dev struct {
	name, model string
	numa        int64
}

// slice is the one slice of the pool named after its node.
func slice(name, nodeName string, gen int64, devs ...dev) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   testDriver,
			Pool:     resourceapi.ResourcePool{Name: nodeName, Generation: gen, ResourceSliceCount: 1},
			NodeName: ptr.To(nodeName),
		},
	}
	for _, d := range devs {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: d.name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"model": {StringValue: ptr.To(d.model)},
			"numa":  {IntValue: ptr.To(d.numa)},
		}})
	}
	return s
}

// class selects the devices of the driver with the model; an empty model selects every device.
func class(name, model string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if model != "" {
		c.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "` + testDriver + `" && device.attributes["` + testDriver + `"].model == "` + model + `"`}}}
	}
	return c
}

// claimSpec asks for count devices of the class in request "gpu"; sameNUMA adds a matchAttribute
// constraint on the NUMA node.
func claimSpec(className string, count int64, sameNUMA bool) resourceapi.ResourceClaimSpec {
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: className, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count},
	}}}}
	if sameNUMA {
		spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(testDriver + "/numa"))}}
	}
	return spec
}

func claim(ns, name, className string, count int64, sameNUMA bool) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: claimSpec(className, count, sameNUMA)}
}

func template(ns, name, className string, count int64) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: claimSpec(className, count, false)}}
}

// allocation gives the claim's request "gpu" the devices of the node's pool.
func allocation(nodeName string, devices ...string) *resourceapi.AllocationResult {
	a := &resourceapi.AllocationResult{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}},
	}}}}
	for _, d := range devices {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: testDriver, Pool: nodeName, Device: d})
	}
	return a
}

// taintRule taints one device of a pool with NoSchedule.
func taintRule(name, pool, device string) *resourceapi.DeviceTaintRule {
	return &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceTaintRuleSpec{
		DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(testDriver), Pool: ptr.To(pool), Device: ptr.To(device)},
		Taint:          resourceapi.DeviceTaint{Key: "live.example/broken", Value: "true", Effect: resourceapi.DeviceTaintEffectNoSchedule},
	}}
}

// pod is a pending pod with a claim (claimName), a claim from a template (templateName) or an
// extended resource (extended, one of it).
func pod(ns, name, claimName, templateName, extended string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		// The API server's TaintNodesByCondition admission taints every new node not-ready; no kubelet
		// ever clears it here.
		Tolerations: []v1.Toleration{{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists}},
	}}
	switch {
	case claimName != "":
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claimName)}}
	case templateName != "":
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(templateName)}}
	}
	if len(p.Spec.ResourceClaims) > 0 {
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	}
	if extended != "" {
		one := v1.ResourceList{v1.ResourceName(extended): resource.MustParse("1")}
		p.Spec.Containers[0].Resources.Requests, p.Spec.Containers[0].Resources.Limits = one, one
	}
	return p
}

// unschedulable is the status kube-scheduler writes on a pod it could not place.
func unschedulable(p *v1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{
		Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable,
		Message: "0/2 nodes are available", LastTransitionTime: metav1.Now(),
	})
}

// scheduleStep is the step a scheduler takes on a new pod. markUnschedulable writes, through the
// status subresource, what kube-scheduler writes on a pod it could not place; with a real
// kube-scheduler, awaitUnschedulable waits until the scheduler wrote it.
type scheduleStep func(ctx context.Context, t *testing.T, c kubernetes.Interface, p *v1.Pod)

func markUnschedulable(ctx context.Context, t *testing.T, c kubernetes.Interface, p *v1.Pod) {
	t.Helper()
	cur, err := c.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	unschedulable(cur)
	if _, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("mark pod %s/%s unschedulable: %v", p.Namespace, p.Name, err)
	}
}

// bindPod binds the pod to the node as kube-scheduler does, through the pods/binding subresource.
// client-go's fake clientset has none; there the pod gets what the API server writes on a binding:
// spec.nodeName and PodScheduled=True.
func bindPod(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name, nodeName string) {
	t.Helper()
	if _, ok := c.(*fake.Clientset); ok {
		cur, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get pod %s/%s: %v", ns, name, err)
		}
		cur.Spec.NodeName = nodeName
		for i := range cur.Status.Conditions {
			if cur.Status.Conditions[i].Type == v1.PodScheduled {
				cur.Status.Conditions[i] = v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()}
			}
		}
		if _, err := c.CoreV1().Pods(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("bind pod %s/%s: %v", ns, name, err)
		}
		return
	}
	b := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Target: v1.ObjectReference{Kind: "Node", Name: nodeName}}
	if err := c.CoreV1().Pods(ns).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind pod %s/%s to %s: %v", ns, name, nodeName, err)
	}
}
