package allocator_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// useSnapshot is node-a with two GPUs and claim train allocated one of them.
func useSnapshot() (*allocator.Snapshot, *resourceapi.ResourceClaim) {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, err := range []error{
		snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 2)),
		snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}),
	} {
		if err != nil {
			panic(err)
		}
	}
	claim := gpuClaim("train", 1)
	results, err := snap.Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		panic(err)
	}
	claim.Status.Allocation = &results[0]
	return snap, claim
}

// PoolUse moves when a claim on the pool is allocated or freed, and a fork shares the stamp until its
// own devices change; DeviceUse follows the claims.
func TestPoolUse(t *testing.T) {
	snap, claim := useSnapshot()
	pool := allocator.PoolID{Driver: "gpu.example.com", Pool: "node-a"}
	gpu0 := allocator.DeviceID{Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-0"}
	empty := snap.PoolUse(pool)
	if err := snap.AddOrUpdateClaim(claim); err != nil {
		t.Fatal(err)
	}
	held := snap.PoolUse(pool)
	if held == empty || !snap.DeviceUse(gpu0).Held() || snap.DeviceUse(gpu0).Exclusive != 1 {
		t.Fatalf("after allocation: stamp %d (before %d), use %+v", held, empty, snap.DeviceUse(gpu0))
	}
	fork := snap.Fork()
	if fork.PoolUse(pool) != held {
		t.Fatalf("fork stamp %d, want %d", fork.PoolUse(pool), held)
	}
	if err := fork.DeleteClaim("default", "train"); err != nil {
		t.Fatal(err)
	}
	if fork.PoolUse(pool) == held || fork.DeviceUse(gpu0).Held() {
		t.Fatalf("after free in fork: stamp %d, use %+v", fork.PoolUse(pool), fork.DeviceUse(gpu0))
	}
	if snap.PoolUse(pool) != held || !snap.DeviceUse(gpu0).Held() {
		t.Fatal("the fork's change reached its parent")
	}
	_ = fork.Discard()
}

func ExampleSnapshot_DeviceUse() {
	snap, claim := useSnapshot()
	_ = snap.AddOrUpdateClaim(claim)
	for _, d := range []string{"gpu-0", "gpu-1"} {
		u := snap.DeviceUse(allocator.DeviceID{Driver: "gpu.example.com", Pool: "node-a", Device: d})
		fmt.Println(d, u.Held(), u.Exclusive, u.Shares)
	}
	// Output:
	// gpu-0 true 1 0
	// gpu-1 false 0 0
}

func ExampleSnapshot_PoolUse() {
	snap, claim := useSnapshot()
	pool := allocator.PoolID{Driver: "gpu.example.com", Pool: "node-a"}
	before := snap.PoolUse(pool)
	_ = snap.AddOrUpdateClaim(claim)
	fmt.Println(before, snap.PoolUse(pool) != before)
	// Output: 0 true
}
