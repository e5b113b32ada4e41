package allocator_test

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

func ExampleSnapshot_AllocateOnNode() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 4))
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})

	results, err := snap.AllocateOnNode(context.Background(), "node-a", []*resourceapi.ResourceClaim{gpuClaim("a", 1), gpuClaim("b", 2)})
	if err != nil {
		panic(err)
	}
	for i, r := range results {
		for _, d := range r.Devices.Results {
			fmt.Println("claim", i, d.Device)
		}
	}
	// Output:
	// claim 0 gpu-0
	// claim 1 gpu-1
	// claim 1 gpu-2
}

func ExampleSnapshot_AddOrUpdateTaintRule() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 1))
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})
	driver, pool, dev := "gpu.example.com", "node-a", "gpu-0"
	_ = snap.AddOrUpdateTaintRule(&resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "maintenance"},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &driver, Pool: &pool, Device: &dev},
			Taint:          resourceapi.DeviceTaint{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
		},
	})
	nodeA := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}

	_, err := snap.Allocate(context.Background(), nodeA, []*resourceapi.ResourceClaim{gpuClaim("plain", 1)})
	fmt.Println("without toleration:", errors.Is(err, allocator.ErrUnsatisfiable))

	tolerant := gpuClaim("tolerant", 1)
	tolerant.Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{
		Key: "example.com/maintenance", Operator: resourceapi.DeviceTolerationOpExists,
	}}
	results, err := snap.Allocate(context.Background(), nodeA, []*resourceapi.ResourceClaim{tolerant})
	fmt.Println("with toleration:", err == nil, results[0].Devices.Results[0].Tolerations[0].Key)
	// Output:
	// without toleration: true
	// with toleration: true example.com/maintenance
}

func ExampleSnapshot_Discard() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 1))
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})

	what := snap.Fork()
	_ = what.DeleteSlice("node-a-gpus") // what if the node lost its GPUs?
	nodeA := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	_, err := what.Allocate(context.Background(), nodeA, []*resourceapi.ResourceClaim{gpuClaim("c", 1)})
	fmt.Println("in the fork:", errors.Is(err, allocator.ErrUnsatisfiable))
	if err := what.Discard(); err != nil {
		fmt.Println(err)
	}

	_, err = snap.Allocate(context.Background(), nodeA, []*resourceapi.ResourceClaim{gpuClaim("c", 1)})
	fmt.Println("in the snapshot:", err == nil)
	fmt.Println("discard the snapshot itself:", snap.Discard())
	// Output:
	// in the fork: true
	// in the snapshot: true
	// discard the snapshot itself: discard: snapshot is not a fork
}

func ExampleDefaultFeatures() {
	f := allocator.DefaultFeatures()
	f.DRAListTypeAttributes = true // opt into an alpha gate
	snap := allocator.NewSnapshot(allocator.Options{Features: &f})
	fmt.Println(snap.Features().DRAListTypeAttributes, snap.Features().DRAConsumableCapacity)
	// Output: true true
}

// A scheduler's filter asks every node whether the pod's claims fit, and only the chosen node for the
// allocation: Fits searches as Allocate does but builds no result.
func ExampleSnapshot_Fits() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})
	var nodes []*v1.Node
	for i, gpus := range []int{1, 4, 2} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}
		nodes = append(nodes, node)
		_ = snap.AddOrUpdateSlice(gpuSlice(node.Name, "H100", gpus))
	}
	claims := []*resourceapi.ResourceClaim{gpuClaim("train", 2)}

	ctx := context.Background()
	var feasible []*v1.Node
	for _, node := range nodes {
		ok, err := snap.Fits(ctx, node, claims)
		if err != nil {
			panic(err)
		}
		if ok {
			feasible = append(feasible, node)
		}
	}
	for _, node := range feasible {
		fmt.Println("fits on", node.Name)
	}
	results, err := snap.Allocate(ctx, feasible[0], claims)
	if err != nil {
		panic(err)
	}
	fmt.Println(feasible[0].Name, "gets", results[0].Devices.Results[0].Device, results[0].Devices.Results[1].Device)
	// Output:
	// fits on node-1
	// fits on node-2
	// node-1 gets gpu-0 gpu-1
}

// Two what-ifs place a claim each on the same node; both see the same free GPU. The first commit holds, the
// second is refused with the device that is no longer free, and the snapshot keeps the first only.
func ExampleSnapshot_Commit() {
	ctx := context.Background()
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 1))
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})
	nodeA := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}

	place := func(fork *allocator.Snapshot, name string) {
		claim := gpuClaim(name, 1)
		results, err := fork.Allocate(ctx, nodeA, []*resourceapi.ResourceClaim{claim})
		if err != nil {
			panic(err)
		}
		claim.Status.Allocation = &results[0]
		if err := fork.AddOrUpdateClaim(claim); err != nil {
			panic(err)
		}
	}
	first, second := snap.Fork(), snap.Fork()
	place(first, "train")
	place(second, "serve")
	fmt.Println("first:", first.Commit())
	err := second.Commit()
	var conflict *allocator.ConflictError
	if errors.As(err, &conflict) {
		fmt.Println("second:", conflict.Claim, conflict.Devices)
		fmt.Println(err)
		_ = second.Discard()
	}
	_, err = snap.Allocate(ctx, nodeA, []*resourceapi.ResourceClaim{gpuClaim("more", 1)})
	fmt.Println("the snapshot is full:", errors.Is(err, allocator.ErrUnsatisfiable))
	// Output:
	// first: <nil>
	// second: default/serve [gpu.example.com/node-a/gpu-0]
	// commit: ResourceClaim default/serve: device gpu.example.com/node-a/gpu-0 is already allocated in the parent snapshot
	// the snapshot is full: true
}

// An autoscaler that keeps its node templates in the snapshot asks each by name whether a pending pod's
// claims would fit there; a name the snapshot does not hold is invalid input, not "does not fit".
func ExampleSnapshot_FitsOnNode() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})
	for name, gpus := range map[string]int{"small": 1, "large": 4} {
		_ = snap.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		_ = snap.AddOrUpdateSlice(gpuSlice(name, "H100", gpus))
	}
	claims := []*resourceapi.ResourceClaim{gpuClaim("train", 2)}

	ctx := context.Background()
	for _, name := range []string{"small", "large"} {
		ok, err := snap.FitsOnNode(ctx, name, claims)
		fmt.Println(name, ok, err)
	}
	_, err := snap.FitsOnNode(ctx, "huge", claims)
	fmt.Println(errors.Is(err, allocator.ErrInvalidInput), err)
	// Output:
	// small false <nil>
	// large true <nil>
	// true Node huge: not in the snapshot
}
