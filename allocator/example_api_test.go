package allocator_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// Every gate on, the alpha ones included, for a cluster that runs them all.
func ExampleAllFeatures() {
	f := allocator.AllFeatures()
	snap := allocator.NewSnapshot(allocator.Options{Features: &f})
	fmt.Println(snap.Features().DRADerivedAttributes, allocator.DefaultFeatures().DRADerivedAttributes)
	// Output: true false
}

// Reasons is the short form of an explanation, one line per request that lacks candidates; Short says
// which requests those are.
func ExampleExplanation_Reasons() {
	snap := allocator.NewSnapshot(allocator.Options{})
	check(snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 2)))
	check(snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}))
	busy := gpuClaim("inference", 1)
	busy.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpus", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-1"}},
	}}
	check(snap.AddOrUpdateClaim(busy))

	e, err := snap.Explain(context.Background(), node("node-a", nil), []*resourceapi.ResourceClaim{gpuClaim("train", 2)})
	if err != nil {
		panic(err)
	}
	for _, r := range e.Reasons() {
		fmt.Println(r)
	}
	r := e.Claims[0].Requests[0]
	fmt.Println(r.Request, "short:", r.Short())
	// Output:
	// claim default/train, request "gpus": needs 2 devices, 1 of 2 is a candidate: 1 allocated to ResourceClaim default/inference
	// gpus short: true
}

// Deleting an allocated claim frees its devices for the calls that follow.
func ExampleSnapshot_DeleteClaim() {
	ctx := context.Background()
	snap := allocator.NewSnapshot(allocator.Options{})
	check(snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 1)))
	check(snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}))
	busy := gpuClaim("inference", 1)
	busy.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpus", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-0"}},
	}}
	check(snap.AddOrUpdateClaim(busy))
	train := []*resourceapi.ResourceClaim{gpuClaim("train", 1)}

	ok, _ := snap.Fits(ctx, node("node-a", nil), train)
	fmt.Println("while inference holds the GPU:", ok)
	check(snap.DeleteClaim("default", "inference"))
	ok, _ = snap.Fits(ctx, node("node-a", nil), train)
	fmt.Println("after it is deleted:", ok)
	// Output:
	// while inference holds the GPU: false
	// after it is deleted: true
}

// A node added with AddOrUpdateNode can be named in the *OnNode calls until it is deleted.
func ExampleSnapshot_DeleteNode() {
	ctx := context.Background()
	snap := allocator.NewSnapshot(allocator.Options{})
	check(snap.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}))
	check(snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 1)))
	check(snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}))
	claims := []*resourceapi.ResourceClaim{gpuClaim("train", 1)}

	ok, err := snap.FitsOnNode(ctx, "node-a", claims)
	fmt.Println(len(snap.Nodes()), ok, err)
	check(snap.DeleteNode("node-a"))
	ok, err = snap.FitsOnNode(ctx, "node-a", claims)
	fmt.Println(len(snap.Nodes()), ok, err)
	// Output:
	// 1 true <nil>
	// 0 false Node node-a: not in the snapshot
}

// Two decisions made on one snapshot pick the same GPU; written with UpdateClaims, the second is
// refused (nothing of it is written) and is decided again on the snapshot as it is now.
func ExampleSnapshot_UpdateClaims() {
	ctx := context.Background()
	snap := allocator.NewSnapshot(allocator.Options{})
	check(snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 2)))
	check(snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}))
	decide := func(name string) allocator.ClaimUpdate {
		claim := gpuClaim(name, 1)
		r, err := snap.Allocate(ctx, node("node-a", nil), []*resourceapi.ResourceClaim{claim})
		check(err)
		claim.Status.Allocation = &r[0]
		// IfUnchanged with no Base: the claim must not exist yet, as for a create.
		return allocator.ClaimUpdate{Namespace: claim.Namespace, Name: name, Claim: claim, IfUnchanged: true}
	}
	first, second := decide("first"), decide("second")
	fmt.Println("first:", snap.UpdateClaims([]allocator.ClaimUpdate{first}))
	fmt.Println("second:", snap.UpdateClaims([]allocator.ClaimUpdate{second}))
	fmt.Println("second again:", snap.UpdateClaims([]allocator.ClaimUpdate{decide("second")}))
	// Output:
	// first: <nil>
	// second: update: ResourceClaim default/second: device gpu.example.com/node-a/gpu-0 is already allocated in the snapshot
	// second again: <nil>
}

// Node looks a Node up by name.
func ExampleSnapshot_Node() {
	snap := allocator.NewSnapshot(allocator.Options{})
	check(snap.AddOrUpdateNode(node("node-a", map[string]string{"rack": "r1"})))
	n, ok := snap.Node("node-a")
	fmt.Println(ok, n.Labels["rack"])
	_, ok = snap.Node("node-b")
	fmt.Println(ok)
	// Output:
	// true r1
	// false
}

// PoolNode tells a node's own pool (its devices can only go to pods on that node) from a pool of
// network-attached devices.
func ExampleSnapshot_PoolNode() {
	snap := allocator.NewSnapshot(allocator.Options{})
	check(snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 2)))
	all := true
	fabric := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "fabric"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "nic.example.com", AllNodes: &all,
			Pool:    resourceapi.ResourcePool{Name: "fabric", ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "nic-0"}}},
	}
	check(snap.AddOrUpdateSlice(fabric))
	fmt.Println(snap.PoolNode(allocator.PoolID{Driver: "gpu.example.com", Pool: "node-a"}))
	fmt.Println(snap.PoolNode(allocator.PoolID{Driver: "nic.example.com", Pool: "fabric"}))
	// Output:
	// node-a true
	//  false
}
