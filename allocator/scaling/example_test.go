package scaling_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/inventory"
)

// exampleCluster is an empty cluster with NVIDIA's GPU class, which also serves the extended resource
// nvidia.com/gpu.
func exampleCluster() *pods.Cluster {
	snap := allocator.NewSnapshot(allocator.Options{})
	gpu := "nvidia.com/gpu"
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
		Spec: resourceapi.DeviceClassSpec{
			Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes['gpu.nvidia.com'].type == 'gpu'`}}},
			ExtendedResourceName: &gpu,
		},
	})
	return pods.New(snap, pods.Options{})
}

func gpuPod(name string, n int64) *v1.Pod {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{"nvidia.com/gpu": q}, Requests: v1.ResourceList{"nvidia.com/gpu": q}}}}},
	}
}

func dgx(name string, cost float64) scaling.NodeType {
	t, _ := inventory.Profile(name)
	return scaling.NodeType{Template: t, Cost: cost}
}

func ExampleNew() {
	p, err := scaling.New(exampleCluster(), []scaling.NodeType{dgx("dgxh100", 3), dgx("dgxb200", 5)}, scaling.Options{StepBudget: 10000})
	fmt.Println(p.Types(), err)
	// Output: [dgxh100 dgxb200] <nil>
}

func ExamplePlanner_Fits() {
	p, _ := scaling.New(exampleCluster(), []scaling.NodeType{dgx("dgxa100", 1), dgx("dgxh100", 3)}, scaling.Options{})
	fits, _ := p.Fits(context.Background(), []scaling.Pending{{Pod: gpuPod("train", 8)}})
	for _, tf := range fits[0].Types {
		fmt.Println(fits[0].Pending, tf.Type, tf.Fits, tf.Reason)
	}
	// Output:
	// Pod default/train dgxa100 false cannot allocate all claims
	// Pod default/train dgxh100 true
}

func ExamplePlanner_ScaleUp() {
	p, _ := scaling.New(exampleCluster(), []scaling.NodeType{dgx("dgxa100", 1), dgx("dgxh100", 3)}, scaling.Options{})
	var pending []scaling.Pending
	for i := range 5 {
		pending = append(pending, scaling.Pending{Pod: gpuPod(fmt.Sprint("worker-", i), 3)})
	}
	plan, _ := p.ScaleUp(context.Background(), pending)
	fmt.Println(plan.Counts, plan.Cost)
	for _, pl := range plan.Placed {
		fmt.Println(pl.Pod, pl.Node)
	}
	// Output:
	// [{dgxh100 3}] 9
	// default/worker-0 dgxh100-new-00000
	// default/worker-1 dgxh100-new-00000
	// default/worker-2 dgxh100-new-00001
	// default/worker-3 dgxh100-new-00001
	// default/worker-4 dgxh100-new-00002
}

func ExamplePlanner_ScaleDown() {
	c := exampleCluster()
	t, _ := inventory.Profile("dgxh100")
	for _, name := range []string{"node-1", "node-2"} {
		in, _ := t.Instantiate(name)
		_ = c.Snapshot().AddOrUpdateNode(in.Node)
		for _, s := range in.Slices {
			_ = c.Snapshot().AddOrUpdateSlice(s)
		}
	}
	pod := gpuPod("infer", 2)
	pl, _ := c.Place(context.Background(), pod)
	_ = c.Assume(pl)
	pod.Spec.NodeName = pl.Node
	pod.Status.ExtendedResourceClaimStatus = pl.ExtendedResourceClaimStatus

	p, _ := scaling.New(c, nil, scaling.Options{})
	r, _ := p.ScaleDown(context.Background(), pl.Node, []*v1.Pod{pod})
	fmt.Println(r.Node, r.Removable, r.Moves[0].Pod, r.Moves[0].Node)
	// Output: node-1 true default/infer node-2
}

func ExampleUtilisation() {
	c := exampleCluster()
	t, _ := inventory.Profile("dgxh100")
	in, _ := t.Instantiate("node-1")
	_ = c.Snapshot().AddOrUpdateNode(in.Node)
	for _, s := range in.Slices {
		_ = c.Snapshot().AddOrUpdateSlice(s)
	}
	pl, _ := c.Place(context.Background(), gpuPod("infer", 2))
	_ = c.Assume(pl)
	u := scaling.Utilisation(in.Slices, c.Snapshot().Claims(""))
	n := u.Nodes[0]
	fmt.Printf("%s: %d of %d devices (%.3f)\n", n.Node, n.Allocated, n.Devices, n.Fraction())
	for _, cu := range u.Pools[0].Counters {
		if cu.Counter == "multiprocessors" && !cu.Used.IsZero() {
			fmt.Println(cu.CounterSet, cu.Used.String(), "of", cu.Total.String())
		}
	}
	// Output:
	// node-1: 2 of 232 devices (0.009)
	// gpu-0-counter-set 112 of 112
	// gpu-1-counter-set 112 of 112
}

func ExampleNodeName() {
	fmt.Println(scaling.NodeName("dgxh100", 7))
	// Output: dgxh100-new-00007
}

// exampleH100 is the example cluster with one DGX H100 and its slices.
func exampleH100() (*pods.Cluster, inventory.Instance) {
	c := exampleCluster()
	t, _ := inventory.Profile("dgxh100")
	in, _ := t.Instantiate("node-1")
	_ = c.Snapshot().AddOrUpdateNode(in.Node)
	for _, s := range in.Slices {
		_ = c.Snapshot().AddOrUpdateSlice(s)
	}
	return c, in
}

func ExampleClassMatcher() {
	c, in := exampleH100()
	match, _ := scaling.ClassMatcher(c.Snapshot().Classes())
	gpu, _ := match("gpu.nvidia.com", &in.Slices[1].Spec.Devices[0])
	mig, _ := match("gpu.nvidia.com", &in.Slices[1].Spec.Devices[1])
	fmt.Println(in.Slices[1].Spec.Devices[0].Name, gpu)
	fmt.Println(in.Slices[1].Spec.Devices[1].Name, mig)
	// Output:
	// gpu-0 [gpu.nvidia.com]
	// gpu-0-mig-1g10gb-0-0 []
}

func ExampleNewInventory() {
	c, in := exampleH100()
	inv, _ := scaling.NewInventory(in.Slices, c.Snapshot().Classes())
	fmt.Println(len(inv.Classes["gpu.nvidia.com"]), "GPUs")
	// Output: 8 GPUs
}

func ExampleCharges() {
	c, in := exampleH100()
	inv, _ := scaling.NewInventory(in.Slices, c.Snapshot().Classes())
	pl, _ := c.Place(context.Background(), gpuPod("running", 2))
	_ = c.Assume(pl)
	// A pod naming a claim that does not exist is refused alone; the others are charged.
	typo := gpuPod("typo", 1)
	typo.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr("no-such-claim")}}
	q, _ := scaling.Charges(c, inv, []*v1.Pod{gpuPod("pending", 3), typo})
	fmt.Println("allocated:", q.Allocated["default"].Devices)
	fmt.Println("pending:", q.Pending["default"].Devices)
	for _, r := range q.Refused {
		fmt.Println("refused:", r.Err)
	}
	// Output:
	// allocated: map[gpu.nvidia.com:2]
	// pending: map[gpu.nvidia.com:3]
	// refused: Pod default/typo: spec.resourceClaims[0].resourceClaimName: resource claim not found: default/no-such-claim
}

func ExampleNewChargeback() {
	c, in := exampleH100()
	inv, _ := scaling.NewInventory(in.Slices, c.Snapshot().Classes())
	pod := gpuPod("infer", 2)
	pl, _ := c.Place(context.Background(), pod)
	_ = c.Assume(pl)
	cb, _ := scaling.NewChargeback(c, inv, []*v1.Pod{pod})
	mem := cb.Pods[0].Charge.Capacity["gpu.nvidia.com"]["memory"]
	fmt.Println(cb.Pods[0].Pod, cb.Pods[0].Owner, cb.Pods[0].Devices, mem.String())
	// Output: default/infer Pod/infer 2 160Gi
}

func ExampleAudit() {
	c, _ := exampleH100()
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one-gpu"}}
	tmpl.Spec.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
	_ = c.AddOrUpdateTemplate(tmpl)
	byClaim := gpuPod("by-claim", 0)
	byClaim.Spec.Containers[0].Resources = v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}
	byClaim.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl.Name}}
	audit, _ := scaling.Audit(c, nil, []*v1.Pod{gpuPod("by-resource", 1), byClaim})
	for _, e := range audit {
		fmt.Println(e.Pod, e.ClaimDevices, e.ExtendedDevices, e.Declared, e.Missed)
	}
	// Output:
	// default/by-resource 0 1 [{nvidia.com/gpu 1}] false
	// default/by-claim 1 0 [] true
}
