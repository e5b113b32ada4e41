package pods_test

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator/pods"
)

// A pod bound to a node takes its requests there: NodeResourcesFit counts them for the next pod.
func ExampleCluster_AddOrUpdatePod() {
	c := exampleCluster(pods.Options{}) // two nodes of 32 CPUs
	running := withRequests(pod("db"), "cpu=30")
	running.Spec.NodeName = "node-a"
	running.Status.Phase = v1.PodRunning
	if err := c.AddOrUpdatePod(running); err != nil {
		panic(err)
	}
	p, err := c.Place(context.Background(), withRequests(pod("web"), "cpu=4"))
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Node)
	e, _ := c.Explain(context.Background(), withRequests(pod("web"), "cpu=4"))
	fmt.Println(e.Nodes[0].Node, e.Nodes[0].Reason)
	// Output:
	// node-b
	// node-a Insufficient cpu
}

// A pod that went away frees what it took on its node.
func ExampleCluster_DeletePod() {
	c := exampleCluster(pods.Options{})
	for _, node := range []string{"node-a", "node-b"} {
		busy := withRequests(pod("busy-"+node), "cpu=32")
		busy.Spec.NodeName = node
		_ = c.AddOrUpdatePod(busy)
	}
	_, err := c.Place(context.Background(), withRequests(pod("web"), "cpu=1"))
	fmt.Println(err)
	c.DeletePod("default", "busy-node-b")
	p, _ := c.Place(context.Background(), withRequests(pod("web"), "cpu=1"))
	fmt.Println(p.Node)
	// Output:
	// pod default/web fits on no node: node-a: Insufficient cpu; node-b: Insufficient cpu
	// node-b
}

// Built-in filters are switched off one by one.
func ExampleFilter() {
	cordon := func(c *pods.Cluster) *pods.Cluster {
		for _, n := range c.Snapshot().Nodes() {
			n = n.DeepCopy()
			n.Spec.Unschedulable = true
			_ = c.Snapshot().AddOrUpdateNode(n)
		}
		return c
	}
	on := cordon(exampleCluster(pods.Options{}))
	_, err := on.Place(context.Background(), pod("p"))
	fmt.Println(err)
	off := cordon(exampleCluster(pods.Options{DisableFilters: []pods.Filter{pods.NodeUnschedulable}}))
	p, _ := off.Place(context.Background(), pod("p"))
	fmt.Println(p.Node)
	// Output:
	// pod default/p fits on no node: node-a: node(s) were unschedulable; node-b: node(s) were unschedulable
	// node-a
}

// A pod with scheduling gates is not placed, and Explain says what it waits for.
func ExampleCluster_Place_schedulingGates() {
	c := exampleCluster(pods.Options{})
	p := pod("p", "gpu=template:one-gpu")
	p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/quota"}}
	_, err := c.Place(context.Background(), p)
	fmt.Println(errors.Is(err, pods.ErrSchedulingGated))
	e, _ := c.Explain(context.Background(), p)
	fmt.Println(e)
	// Output:
	// true
	// waiting for scheduling gates: [example.com/quota]
}

// What the pods on a node request, as NodeResourcesFit counts it: what a Cost sees as
// CostInput.Requested.
func ExampleCluster_Requested() {
	c := exampleCluster(pods.Options{}) // two nodes of 32 CPUs
	running := withRequests(pod("db"), "cpu=6", "memory=4Gi")
	running.Spec.NodeName = "node-a"
	running.Status.Phase = v1.PodRunning
	if err := c.AddOrUpdatePod(running); err != nil {
		panic(err)
	}
	a, b := c.Requested("node-a"), c.Requested("node-b")
	fmt.Println(a[v1.ResourceCPU], a[v1.ResourceMemory], len(b))
	// Output: 6000 4294967296 0
}
