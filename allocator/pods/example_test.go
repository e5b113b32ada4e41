package pods_test

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/allocator/pods"
)

// exampleCluster is two nodes with one GPU each, the class "gpu" and the template "one-gpu".
func exampleCluster(opts pods.Options) *pods.Cluster {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, name := range []string{"node-a", "node-b"} {
		_ = snap.AddOrUpdateNode(node(name, map[string]string{"rack": "r1"}))
		_ = snap.AddOrUpdateSlice(gpus(name, 1))
	}
	_ = snap.AddOrUpdateClass(gpuClass("gpu", "example.com/gpu"))
	opts.NameSuffix = fixedSuffixes() // deterministic names; nil means random, as the API server does
	c := pods.New(snap, opts)
	_ = c.AddOrUpdateTemplate(template("one-gpu", 1))
	return c
}

func ExampleNew() {
	snap := allocator.NewSnapshot(allocator.Options{})
	c := pods.New(snap, pods.Options{Choice: pods.Spread, Workers: 4})
	fmt.Println(c.Snapshot() == snap)
	// Output: true
}

func ExampleCluster_PodClaims() {
	c := exampleCluster(pods.Options{})
	p := pod("train", "gpu=template:one-gpu")
	claims, err := c.PodClaims(p)
	if err != nil {
		panic(err)
	}
	for _, pc := range claims {
		fmt.Println(pc.Name, pc.Claim.Name, pc.Generated, pc.Claim.Annotations[resourceapi.PodResourceClaimAnnotation])
	}
	// Output: gpu train-gpu-aaaa0 true gpu
}

func ExampleCluster_Place() {
	c := exampleCluster(pods.Options{})
	ctx := context.Background()
	for _, name := range []string{"first", "second", "third"} {
		p, err := c.Place(ctx, pod(name, "gpu=template:one-gpu"))
		if errors.Is(err, pods.ErrNoNode) {
			fmt.Println(name, "fits nowhere")
			continue
		}
		if err != nil {
			panic(err)
		}
		r := p.Claims[0].Claim.Status.Allocation.Devices.Results[0]
		fmt.Println(name, p.Node, r.Pool+"/"+r.Device, p.Claims[0].Claim.Status.ReservedFor[0].Name)
		_ = c.Assume(p) // the next pod sees the GPU in use
	}
	// Output:
	// first node-a node-a/gpu-0 first
	// second node-b node-b/gpu-0 second
	// third fits nowhere
}

func ExampleCluster_Place_extendedResources() {
	c := exampleCluster(pods.Options{})
	p := pod("infer")
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"example.com/gpu": resource.MustParse("1")}
	pl, err := c.Place(context.Background(), p)
	if err != nil {
		panic(err)
	}
	ext := pl.Claims[0].Claim
	fmt.Println(ext.Name, ext.Spec.Devices.Requests[0].Name, ext.Spec.Devices.Requests[0].Exactly.DeviceClassName)
	m := pl.ExtendedResourceClaimStatus.RequestMappings[0]
	fmt.Println(m.ContainerName, m.ResourceName, m.RequestName)
	// Output:
	// infer-extended-resources-aaaa0 container-0-request-0 gpu
	// main example.com/gpu container-0-request-0
}

func ExampleCluster_Remove() {
	c := exampleCluster(pods.Options{})
	ctx := context.Background()
	p := pod("train", "gpu=template:one-gpu")
	pl, _ := c.Place(ctx, p)
	_ = c.Assume(pl)
	fmt.Println(len(c.Snapshot().Claims("default")))
	_ = c.Remove(p) // the generated claim goes with its pod
	fmt.Println(len(c.Snapshot().Claims("default")))
	// Output:
	// 1
	// 0
}

// PlaceGroup is kube-scheduler's pass over a gang: a second gang finds no GPU left, and stays pending
// with the GangScheduling plugin's reason.
func ExampleCluster_PlaceGroup() {
	c := exampleCluster(pods.Options{})
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gang", UID: "uid-gang"}}
	g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: 2}
	g.Spec.SchedulingConstraints = &schedulingapi.PodGroupSchedulingConstraints{Topology: []schedulingapi.TopologyConstraint{{Key: "rack"}}}
	_ = c.AddOrUpdatePodGroup(g)
	gp, err := c.PlaceGroup(context.Background(), g, members([]string{"w0", "w1"}, "gpu=template:one-gpu"))
	if err != nil {
		panic(err)
	}
	for _, p := range gp.Pods {
		fmt.Println(p.Pod.Name, p.Node, gp.Domain)
	}
	_ = c.AssumeGroup(gp)

	second := g.DeepCopy()
	second.Name, second.UID = "second", "uid-second"
	_ = c.AddOrUpdatePodGroup(second)
	ps := members([]string{"w2", "w3"}, "gpu=template:one-gpu")
	for _, p := range ps {
		p.Spec.SchedulingGroup.PodGroupName = &second.Name
	}
	_, err = c.PlaceGroup(context.Background(), second, ps)
	var pending *pods.GroupUnschedulableError
	if errors.As(err, &pending) {
		fmt.Println(pending.Reason)
	}
	// Output:
	// w0 node-a r1
	// w1 node-b r1
	// minCount (2) cannot be satisfied: 0 scheduled, 1 remaining
}

// kube-scheduler's pass puts w0 on node-a, the first node, and w1, which needs node-a, then fits
// nowhere: the gang stays pending. A placement exists, which the search finds: w0 on node-b.
func ExampleCluster_SearchGroupPlacement() {
	c := exampleCluster(pods.Options{})
	n := c.Snapshot().Nodes()[0].DeepCopy()
	n.Labels["nvlink"] = "yes"
	_ = c.Snapshot().AddOrUpdateNode(n)
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gang", UID: "uid-gang"}}
	g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: 2}
	_ = c.AddOrUpdatePodGroup(g)
	ps := members([]string{"w0", "w1"}, "gpu=template:one-gpu")
	ps[1].Spec.NodeSelector = map[string]string{"nvlink": "yes"}

	_, err := c.PlaceGroup(context.Background(), g, ps)
	fmt.Println(err)
	gp, err := c.SearchGroupPlacement(context.Background(), g, ps, nil)
	if err != nil {
		panic(err)
	}
	for _, p := range gp.Pods {
		fmt.Println(p.Pod.Name, p.Node)
	}
	// Output:
	// PodGroup default/gang: pod group cannot be placed: minCount (2) cannot be satisfied: 1 scheduled, 0 remaining
	// w0 node-b
	// w1 node-a
}

// A Budget bounds the gang search: running out is allocator.ErrSearchBudget ("gave up"), never
// ErrGroupUnschedulable ("does not fit"). Three one-GPU pods over two one-GPU nodes are decided by
// counting, in a couple of tries.
func ExampleBudget() {
	c := exampleCluster(pods.Options{})
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gang", UID: "uid-gang"}}
	g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: 2}
	_ = c.AddOrUpdatePodGroup(g)
	ps := members([]string{"w0", "w1"}, "gpu=template:one-gpu")

	b := &pods.Budget{Limit: 1}
	_, err := c.SearchGroupPlacement(context.Background(), g, ps, b)
	fmt.Println(errors.Is(err, allocator.ErrSearchBudget), errors.Is(err, pods.ErrGroupUnschedulable), b.Used)

	b = &pods.Budget{Limit: 100}
	gp, err := c.SearchGroupPlacement(context.Background(), g, ps, b)
	fmt.Println(err, b.Used, gp.Pods[0].Node, gp.Pods[1].Node)

	g.Spec.SchedulingPolicy.Gang.MinCount = 3
	_ = c.AddOrUpdatePodGroup(g)
	b = &pods.Budget{Limit: 100}
	_, err = c.SearchGroupPlacement(context.Background(), g, members([]string{"w0", "w1", "w2"}, "gpu=template:one-gpu"), b)
	fmt.Println(errors.Is(err, pods.ErrGroupUnschedulable), b.Used)
	// Output:
	// true false 1
	// <nil> 4 node-a node-b
	// true 2
}

func ExampleCluster_RemovePodGroup() {
	c := exampleCluster(pods.Options{})
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gang", UID: "uid-gang"}}
	g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: 1}
	g.Spec.ResourceClaims = []schedulingapi.PodGroupResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr("one-gpu")}}
	_ = c.AddOrUpdatePodGroup(g)
	gp, _ := c.PlaceGroup(context.Background(), g, members([]string{"w0"}, "gpu=template:one-gpu"))
	_ = c.AssumeGroup(gp)
	for _, cl := range c.Snapshot().Claims("default") {
		owner := cl.OwnerReferences[0]
		fmt.Println(cl.Name, "owned by", owner.APIVersion, owner.Kind, owner.Name)
	}
	_ = c.RemovePodGroup(g) // the group's generated claim goes with the group
	fmt.Println(len(c.Snapshot().Claims("default")))
	// Output:
	// gang-gpu-aaaa0 owned by scheduling.k8s.io/v1beta1 PodGroup gang
	// 0
}

// A PodGroup of scheduling.k8s.io/v1alpha3 has the fields of v1beta1, the version the Cluster takes;
// manifest.Convert turns one into the other.
func ExampleCluster_AddOrUpdatePodGroup_v1alpha3() {
	c := exampleCluster(pods.Options{})
	alpha := &schedulingv1alpha3.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gang", UID: "uid-gang"}}
	alpha.Spec.SchedulingPolicy.Gang = &schedulingv1alpha3.GangSchedulingPolicy{MinCount: 2}
	obj, err := manifest.Convert(alpha)
	if err != nil {
		panic(err)
	}
	g := obj.(*schedulingapi.PodGroup)
	if err := c.AddOrUpdatePodGroup(g); err != nil {
		panic(err)
	}
	gp, err := c.PlaceGroup(context.Background(), g, members([]string{"w0", "w1"}, "gpu=template:one-gpu"))
	if err != nil {
		panic(err)
	}
	fmt.Println(g.APIVersion, len(gp.Pods), "pods placed")
	// Output: scheduling.k8s.io/v1beta1 2 pods placed
}

func ExampleCluster_MixedNodes() {
	c := exampleCluster(pods.Options{})
	n := c.Snapshot().Nodes()[1].DeepCopy()
	n.Status.Allocatable[v1.ResourceName("example.com/gpu")] = resource.MustParse("1") // a device plugin too
	_ = c.Snapshot().AddOrUpdateNode(n)
	mixed, err := c.MixedNodes(context.Background())
	if err != nil {
		panic(err)
	}
	for _, m := range mixed {
		fmt.Println(m.Node, m.Resource, m.Class)
	}
	// Output: node-b example.com/gpu gpu
}

func ExampleCluster_AddOrUpdateTemplate() {
	c := pods.New(allocator.NewSnapshot(allocator.Options{}), pods.Options{NameSuffix: fixedSuffixes()})
	_ = c.AddOrUpdateTemplate(template("one-gpu", 1))
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gang"}}
	_ = c.AddOrUpdatePodGroup(g)

	_, err := c.PodClaims(pod("train", "gpu=template:one-gpu"))
	fmt.Println(err)
	c.DeleteTemplate("default", "one-gpu")
	_, err = c.PodClaims(pod("train", "gpu=template:one-gpu"))
	fmt.Println(errors.Is(err, pods.ErrTemplateNotFound))

	c.DeletePodGroup("default", "gang")
	_, err = c.PlaceGroup(context.Background(), g, nil)
	fmt.Println(errors.Is(err, pods.ErrPodGroupNotFound))
	// Output:
	// <nil>
	// true
	// true
}

func ExampleChoice_String() {
	fmt.Println(pods.FirstFit, pods.BestFit, pods.Spread)
	// Output: FirstFit BestFit Spread
}

func ExampleCluster_Fork() {
	c := exampleCluster(pods.Options{})
	ctx := context.Background()
	whatIf := c.Fork()
	for _, name := range []string{"a", "b"} {
		p, _ := whatIf.Place(ctx, pod(name, "gpu=template:one-gpu"))
		_ = whatIf.Assume(p)
	}
	_, err := whatIf.Place(ctx, pod("c", "gpu=template:one-gpu"))
	fmt.Println("a third pod in the fork:", errors.Is(err, pods.ErrNoNode))
	whatIf.Snapshot().Discard()
	_, err = c.Place(ctx, pod("c", "gpu=template:one-gpu"))
	fmt.Println("in the cluster:", err)
	// Output:
	// a third pod in the fork: true
	// in the cluster: <nil>
}

func ExampleCluster_PlanHandBack() {
	// One GPU that takes shares of 8Gi of memory; an inference server asks for 2Gi and prefers 6Gi.
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateNode(node("n1", nil))
	_ = snap.AddOrUpdateSlice(sharedGPU())
	_ = snap.AddOrUpdateClass(gpuClass("gpu", ""))
	prefer := func(claim *resourceapi.ResourceClaim, request string) map[resourceapi.QualifiedName]resource.Quantity {
		if claim.Annotations[resourceapi.PodResourceClaimAnnotation] == "kv-cache" {
			return map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("6Gi")}
		}
		return nil
	}
	c := pods.New(snap, pods.Options{Preferred: prefer, NameSuffix: fixedSuffixes()})
	_ = c.AddOrUpdateTemplate(memoryTemplate("mem-2", "2Gi"))
	_ = c.AddOrUpdateTemplate(memoryTemplate("mem-4", "4Gi"))
	ctx := context.Background()

	server, _ := c.Place(ctx, pod("server", "kv-cache=template:mem-2"))
	m := server.Claims[0].Claim.Status.Allocation.Devices.Results[0].ConsumedCapacity["memory"]
	fmt.Println("server records", m.String())
	_ = c.Assume(server)

	job := pod("job", "gpu=template:mem-4")
	_, err := c.Place(ctx, job)
	fmt.Println("job fits:", err == nil)
	plan, p, _ := c.PlanHandBack(ctx, job)
	for _, h := range plan {
		fmt.Printf("%s gives back %s of %s %s\n", h.Claim, h.Amount.String(), h.Consumed.String(), h.Capacity)
	}
	fmt.Println("then job goes to", p.Node)
	// Output:
	// server records 6Gi
	// job fits: false
	// default/server-kv-cache-aaaa0 gives back 4Gi of 6Gi memory
	// then job goes to n1
}

func ExampleCluster_Explain() {
	c := exampleCluster(pods.Options{})
	ctx := context.Background()
	p, err := c.Place(ctx, pod("first", "gpu=template:one-gpu"))
	if err != nil {
		panic(err)
	}
	_ = c.Assume(p) // node-a's GPU is in use
	e, err := c.Explain(ctx, pod("second", "gpu=template:one-gpu", "more=template:one-gpu"))
	if err != nil {
		panic(err)
	}
	fmt.Println(e)
	for _, n := range e.Nodes {
		fmt.Println(n.Node, n.Fits, n.Reason)
	}
	// Output:
	// 1 node: claim default/second-gpu-aaaa1, request "gpu": 1 of 1 matching device allocated to ResourceClaim default/first-gpu-aaaa0; 1 node: claim default/second-gpu-aaaa1, request "gpu"; claim default/second-more-aaaa2, request "gpu": together need 2 devices and share 1 candidate
	// node-a false claim default/second-gpu-aaaa1, request "gpu": 1 of 1 matching device allocated to ResourceClaim default/first-gpu-aaaa0
	// node-b false claim default/second-gpu-aaaa1, request "gpu"; claim default/second-more-aaaa2, request "gpu": together need 2 devices and share 1 candidate
}

// A what-if on a fork: place a pod there, and keep the result with Commit (claims and the pod on its
// node), or drop it with Snapshot().Discard().
func ExampleCluster_Commit() {
	c := exampleCluster(pods.Options{})
	f := c.Fork()
	p, err := f.Place(context.Background(), pod("train", "gpu=template:one-gpu"))
	if err != nil {
		panic(err)
	}
	_ = f.Assume(p)
	fmt.Println("parent before:", len(c.Snapshot().Claims("default")))
	fmt.Println("commit:", f.Commit())
	fmt.Println("parent after:", len(c.Snapshot().Claims("default")))
	// Output:
	// parent before: 0
	// commit: <nil>
	// parent after: 1
}
