package fuzz_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// handBuilt is a cluster as a test writes it: one node with a pool of two GPUs published in generation 2, and a
// leftover slice of generation 1.
func handBuilt() *fuzz.Cluster {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}
	slice := func(name string, gen int64, devices ...string) *resourceapi.ResourceSlice {
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
			Driver: fuzz.GPUDriver, NodeName: &node.Name,
			Pool: resourceapi.ResourcePool{Name: "node-0-gpu", Generation: gen, ResourceSliceCount: 1},
		}}
		for _, d := range devices {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: d})
		}
		return s
	}
	return &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node,
		Slices: []*resourceapi.ResourceSlice{slice("old", 1, "gpu-9"), slice("new", 2, "gpu-0", "gpu-1")}}
}

// Devices lists what the newest generation of every pool publishes.
func ExampleCluster_Devices() {
	for _, d := range handBuilt().Devices() {
		fmt.Println(d.ID)
	}
	// Output:
	// gpu.example.com/node-0-gpu/gpu-0
	// gpu.example.com/node-0-gpu/gpu-1
}

// A hand-built cluster with nil Features runs with the gates Kubernetes 1.37 enables by default, as
// allocator.Options and verify.Input do; ClusterGen sets every gate.
func ExampleCluster_Gates() {
	c := handBuilt()
	fmt.Println(c.Gates() == verify.DefaultFeatures())
	c.Features = &verify.Features{DRAPrioritizedList: true}
	fmt.Println(c.Gates().DRAPrioritizedList, c.Gates().DRAConsumableCapacity)
	// Output:
	// true
	// true false
}

// Input is the verifier's view of the cluster, with its gates.
func ExampleCluster_Input() {
	in := handBuilt().Input()
	fmt.Println(len(in.Slices), in.Node.Name, *in.Features == verify.DefaultFeatures())
	// Output: 2 node-0 true
}

// A deep copy shares nothing: changing it leaves the cluster as it was, which is how CheckAllocations
// detects an allocator that mutates its input.
func ExampleCluster_DeepCopy() {
	c := handBuilt()
	cp := c.DeepCopy()
	cp.Slices[1].Spec.Devices[0].Name = "renamed"
	cp.Node.Name = "elsewhere"
	fmt.Println(c.Slices[1].Spec.Devices[0].Name, c.Node.Name, cp.Node == cp.Nodes[0])
	// Output: gpu-0 node-0 true
}

// ClaimsGen draws pending claims for given classes and slices, for a test that builds its own cluster.
func ExampleClaimsGen() {
	c := fuzz.ClusterGen(fuzz.Options{}).Example(1)
	claims := fuzz.ClaimsGen(fuzz.Options{MaxClaims: 1}, c.Classes, c.Slices).Example(2)
	for _, cl := range claims {
		fmt.Println(cl.Namespace, cl.Name, len(cl.Spec.Devices.Requests) > 0)
	}
	// Output: default claim-0 true
}
