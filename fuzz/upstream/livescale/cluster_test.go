package livescale

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/fuzz/upstream/bench"
)

// The generated cluster's namespace, extended resource and GPUs per node.
const (
	namespace   = "scale"
	extended    = "example.com/gpu"
	gpusPerNode = 8
	// boundPerNode pods hold one GPU each on every node, so that every node has four GPUs free.
	boundPerNode = 4
	// pendingPerNode is the pending pods per node: the 10,000 on 5,000 nodes.
	pendingPerNode = 2
	// sharedBy is how many pending pods share one ResourceClaim.
	sharedBy = 8
	// workers create objects at once; the client's QPS is raised to match (see newClient).
	workers = 48
)

// shape is the generated cluster of one size.
type shape struct{ nodes, pending, bound int }

func newShape(nodes int) shape {
	return shape{nodes: nodes, pending: pendingPerNode * nodes, bound: boundPerNode * nodes}
}

func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// The pending pods are of four kinds, by index modulo 4, none of which fits (every node has four GPUs
// free): six GPUs through a ResourceClaimTemplate, six through the extended resource the DeviceClass
// names, six through a ResourceClaim shared by sharedBy pods, and two GPUs of at least 100Gi (no GPU
// has more than 80Gi) through another template.
const (
	pendingTemplate = iota
	pendingExtended
	pendingShared
	pendingSelector
)

func deviceClass() *resourceapi.DeviceClass {
	c := bench.Classes()[0] // the GPU class: selects every generated GPU
	c.Spec.ExtendedResourceName = ptr.To(extended)
	return c
}

func claimSpec(count int64, selector string) resourceapi.ResourceClaimSpec {
	req := resourceapi.DeviceRequest{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: bench.GPUClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
	if selector != "" {
		req.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}
	}
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}}
}

func template(name string, count int64, selector string) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: claimSpec(count, selector)}}
}

func claim(name string, count int64) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: claimSpec(count, "")}
}

func basePod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": "livescale"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}},
	}
}

// withClaim makes the pod use one claim entry "gpus", by name or by template.
func withClaim(p *v1.Pod, claimName, templateName string) *v1.Pod {
	pc := v1.PodResourceClaim{Name: "gpus"}
	if claimName != "" {
		pc.ResourceClaimName = ptr.To(claimName)
	} else {
		pc.ResourceClaimTemplateName = ptr.To(templateName)
	}
	p.Spec.ResourceClaims = []v1.PodResourceClaim{pc}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpus"}}
	return p
}

func pendingPod(i int) *v1.Pod {
	p := basePod(fmt.Sprintf("pending-%05d", i))
	switch i % 4 {
	case pendingTemplate:
		return withClaim(p, "", "six-gpus")
	case pendingExtended:
		six := resource.MustParse("6")
		p.Spec.Containers[0].Resources.Requests[extended] = six
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{extended: six}
		return p
	case pendingShared:
		return withClaim(p, sharedClaimName(i), "")
	default:
		return withClaim(p, "", "big-memory")
	}
}

func sharedClaimName(pending int) string { return fmt.Sprintf("shared-%05d", pending/(4*sharedBy)) }

// populate creates the cluster of s through the API server with a pool of workers.
func populate(ctx context.Context, c kubernetes.Interface, s shape) error {
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	// No kube-controller-manager creates the namespace's ServiceAccount, without which pods are refused.
	if _, err := c.CoreV1().ServiceAccounts(namespace).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := c.ResourceV1().DeviceClasses().Create(ctx, deviceClass(), metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, t := range []*resourceapi.ResourceClaimTemplate{template("six-gpus", 6, ""), template("big-memory", 2,
		`device.capacity["gpu.example.com"].memory.compareTo(quantity("100Gi")) >= 0`)} {
		if _, err := c.ResourceV1().ResourceClaimTemplates(namespace).Create(ctx, t, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if err := parallel(ctx, s.nodes, func(ctx context.Context, i int) error { return createNode(ctx, c, i) }); err != nil {
		return err
	}
	shared := (s.pending + 4*sharedBy - 1) / (4 * sharedBy)
	if err := parallel(ctx, shared, func(ctx context.Context, i int) error {
		_, err := c.ResourceV1().ResourceClaims(namespace).Create(ctx, claim(sharedClaimName(i*4*sharedBy), 6), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := parallel(ctx, s.bound, func(ctx context.Context, i int) error { return createBound(ctx, c, i) }); err != nil {
		return err
	}
	return parallel(ctx, s.pending, func(ctx context.Context, i int) error { return createPending(ctx, c, s, i) })
}

func createNode(ctx context.Context, c kubernetes.Interface, i int) error {
	name := nodeName(i)
	n := bench.BenchNode(name)
	allocatable := n.Status.Allocatable
	n.UID = ""
	n.Status = v1.NodeStatus{}
	got, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	got.Status.Allocatable, got.Status.Capacity = allocatable, allocatable
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return err
	}
	_, err = c.ResourceV1().ResourceSlices().Create(ctx, bench.NodeSlice(name, gpusPerNode, 1), metav1.CreateOptions{})
	return err
}

// createBound creates bound pod i on node i/boundPerNode with its claim of one GPU, allocated and
// reserved for it as kube-scheduler would have written it.
func createBound(ctx context.Context, c kubernetes.Interface, i int) error {
	node := nodeName(i / boundPerNode)
	name := fmt.Sprintf("bound-%05d", i)
	cl, err := c.ResourceV1().ResourceClaims(namespace).Create(ctx, claim(name, 1), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	p := withClaim(basePod(name), name, "")
	p.Spec.NodeName = node
	p, err = c.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	cl.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
			Request: "gpus", Driver: bench.Driver, Pool: node, Device: fmt.Sprintf("gpu-%d", i%boundPerNode)}}},
		NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}},
	}
	cl.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: p.Name, UID: p.UID}}
	_, err = c.ResourceV1().ResourceClaims(namespace).UpdateStatus(ctx, cl, metav1.UpdateOptions{})
	return err
}

// createPending creates pending pod i with the condition kube-scheduler writes on a pod it found no
// node for (the explainer explains only those).
func createPending(ctx context.Context, c kubernetes.Interface, s shape, i int) error {
	p, err := c.CoreV1().Pods(namespace).Create(ctx, pendingPod(i), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable,
		Message: fmt.Sprintf("0/%d nodes are available", s.nodes), LastTransitionTime: metav1.Now()}}
	_, err = c.CoreV1().Pods(namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// parallel calls f for 0..n-1 from a pool of workers and returns the first error.
func parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && err != context.Canceled {
		return err
	}
	return nil
}
