package pods_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// Nodes are of one kind for a pod when the filters read the same of them: here n0 and n1 are alike; n2
// has a GPU in use, n3 a pod's CPUs, n4 another zone (the pod selects one), n5 a taint, n6 fewer GPUs.
// Without the node selector, the zone is not read and n4 is of n0's kind.
func TestNodeKinds(t *testing.T) {
	ctx := context.Background()
	var nodes []*v1.Node
	for i := range 7 {
		zone := "a"
		if i == 4 {
			zone = "b"
		}
		n := node(fmt.Sprintf("n%d", i), map[string]string{"zone": zone, "kubernetes.io/hostname": fmt.Sprintf("n%d", i)})
		if i == 5 {
			n.Spec.Taints = []v1.Taint{{Key: "dedicated", Effect: v1.TaintEffectNoSchedule}}
		}
		nodes = append(nodes, n)
	}
	snap := allocator.NewSnapshot(allocator.Options{})
	for i, n := range nodes {
		must(t, snap.AddOrUpdateNode(n))
		count := 2
		if i == 6 {
			count = 1
		}
		must(t, snap.AddOrUpdateSlice(gpus(n.Name, count)))
	}
	must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	c := pods.New(snap, pods.Options{NameSuffix: fixedSuffixes()})
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	p, err := c.PlaceOnNode(ctx, pod("gpu-user", "gpu=template:one-gpu"), "n2")
	must(t, err)
	must(t, c.Assume(p))
	p, err = c.PlaceOnNode(ctx, withExtended(pod("cpu-user"), v1.ResourceCPU, 2), "n3")
	must(t, err)
	must(t, c.Assume(p))

	w := pod("w", "gpu=template:one-gpu")
	w.Spec.NodeSelector = map[string]string{"zone": "a"}
	kinds, err := c.NodeKinds(ctx, w, snap.Nodes())
	must(t, err)
	if fmt.Sprint(kinds) != "[0 0 1 2 3 4 5]" {
		t.Errorf("kinds %v, want [0 0 1 2 3 4 5]", kinds)
	}
	w.Spec.NodeSelector = nil
	kinds, err = c.NodeKinds(ctx, w, snap.Nodes())
	must(t, err)
	if fmt.Sprint(kinds) != "[0 0 1 2 0 3 4]" {
		t.Errorf("without a node selector: kinds %v, want [0 0 1 2 0 3 4]", kinds)
	}
	// A Predicate may read anything of a node: every node is a kind of its own.
	alone := pods.New(snap, pods.Options{Predicate: func(*v1.Pod, *v1.Node) error { return nil }})
	must(t, alone.AddOrUpdateTemplate(template("one-gpu", 1)))
	kinds, err = alone.NodeKinds(ctx, w, snap.Nodes())
	must(t, err)
	if fmt.Sprint(kinds) != "[0 1 2 3 4 5 6]" {
		t.Errorf("with a Predicate: kinds %v, want every node alone", kinds)
	}
	var in *allocator.InputError
	if _, err := c.NodeKinds(ctx, nil, snap.Nodes()); !errors.As(err, &in) {
		t.Errorf("nil pod: %v", err)
	}
	if _, err := c.NodeKinds(ctx, w, []*v1.Node{nil}); !errors.As(err, &in) || in.Field != "nodes[0]" {
		t.Errorf("nil node: %v", err)
	}
	if _, err := c.NodeKinds(ctx, pod("x", "gpu=template:missing"), snap.Nodes()); !errors.Is(err, pods.ErrTemplateNotFound) {
		t.Errorf("missing template: %v", err)
	}
}

// Capacity planning fills one node of each kind: here the two free nodes are one kind, the node with a
// GPU in use another.
func ExampleCluster_NodeKinds() {
	ctx := context.Background()
	c := exampleCluster(pods.Options{}) // node-a and node-b, one GPU each
	snap := c.Snapshot()
	_ = snap.AddOrUpdateNode(node("node-c", map[string]string{"rack": "r1"}))
	_ = snap.AddOrUpdateSlice(gpus("node-c", 1))
	p, err := c.PlaceOnNode(ctx, pod("first", "gpu=template:one-gpu"), "node-b")
	if err != nil {
		panic(err)
	}
	if err := c.Assume(p); err != nil {
		panic(err)
	}
	kinds, err := c.NodeKinds(ctx, pod("train", "gpu=template:one-gpu"), snap.Nodes())
	if err != nil {
		panic(err)
	}
	fmt.Println(kinds)
	// Output: [0 1 0]
}
