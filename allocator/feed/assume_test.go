package feed_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator/feed"
	"github.com/dralloc/dralloc/allocator/pods"
)

// gpuNode publishes node n1 with the devices gpu-0, gpu-1, … of driver gpu.example.com, and the class
// gpu.
func gpuNode(f *feed.Feed, gpus int) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("110")}}}
	nodeName := "n1"
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "n1-gpu", ResourceVersion: "2"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   "gpu.example.com",
			Pool:     resourceapi.ResourcePool{Name: "n1", ResourceSliceCount: 1},
			NodeName: &nodeName,
		},
	}
	for i := range gpus {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", ResourceVersion: "3"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "gpu.example.com"`}}}},
	}
	f.OnAdd(node, true)
	f.OnAdd(slice, true)
	f.OnAdd(class, true)
}

// gpuClaim is an unallocated claim asking for one device of class gpu.
func gpuClaim(name, rv string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
}

func claimPod(name, claim string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			Containers:     []v1.Container{{Name: "main"}},
			ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}},
		},
	}
}

// A resync (OnUpdate with the object the informer holds) and a re-list deliver a claim at the version
// the Feed applied, unallocated, while the Cluster holds the allocation a placement assumed on top of
// it: the allocation stays, and the only GPU is not given to a second pod. The API server's write of
// the allocation, at a newer version, is applied; so is a later deallocation.
func TestFeedResyncKeepsAssumedAllocation(t *testing.T) {
	ctx := context.Background()
	c := newCluster()
	var errs []error
	f := feed.New(c, feed.Options{OnError: func(err error) { errs = append(errs, err) }})
	gpuNode(f, 1)
	first, second := gpuClaim("first", "10"), gpuClaim("second", "11")
	f.OnAdd(first, true)
	f.OnAdd(second, true)

	pl, err := c.Place(ctx, claimPod("a", "first"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Assume(pl); err != nil {
		t.Fatal(err)
	}
	f.OnUpdate(first, first)            // a resync
	f.OnAdd(first, false)               // a re-list of a new informer
	f.OnUpdate(first, first.DeepCopy()) // a re-list's replace
	if held, _ := c.Snapshot().Claim("default", "first"); held.Status.Allocation == nil {
		t.Fatal("a resync of the claim's applied version undid the assumed allocation")
	}
	if _, err := c.Place(ctx, claimPod("b", "second")); !errors.Is(err, pods.ErrNoNode) {
		t.Fatalf("a second pod for the only GPU: %v, want ErrNoNode", err)
	}

	// The scheduler's write arrives: the allocation at a newer version.
	written := pl.Claims[0].Claim.DeepCopy()
	written.ResourceVersion = "12"
	f.OnUpdate(first, written)
	if held, _ := c.Snapshot().Claim("default", "first"); held.ResourceVersion != "12" || held.Status.Allocation == nil {
		t.Fatalf("the written allocation was not applied: %+v", held)
	}
	// The claim is deallocated in the cluster: the newer, unallocated version frees the GPU.
	freed := gpuClaim("first", "13")
	f.OnUpdate(written, freed)
	if _, err := c.Place(ctx, claimPod("b", "second")); err != nil {
		t.Fatalf("after the deallocation: %v", err)
	}
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if st := f.Stats(); st.Stale["ResourceClaim"] != 3 {
		t.Fatalf("stale claim events %d, want the 3 resynced copies", st.Stale["ResourceClaim"])
	}
}

// A typed nil pointer, delivered directly or inside a tombstone, is reported through OnError with its
// kind, for every kind the Feed reads; nothing panics.
func TestFeedReportsTypedNil(t *testing.T) {
	objs := []any{
		(*v1.Node)(nil), (*resourceapi.ResourceSlice)(nil), (*resourceapi.DeviceClass)(nil),
		(*resourceapi.ResourceClaim)(nil), (*resourceapi.ResourceClaimTemplate)(nil),
		(*resourceapi.DeviceTaintRule)(nil), (*schedulingapi.PodGroup)(nil),
	}
	kinds := len(objs)
	objs = append(objs, nil, (*deletedFinalStateUnknown)(nil))
	for i, obj := range objs {
		for _, how := range []string{"add", "update", "delete", "tombstone"} {
			t.Run(fmt.Sprintf("%s %T", how, obj), func(t *testing.T) {
				var errs []error
				f := feed.New(newCluster(), feed.Options{OnError: func(err error) { errs = append(errs, err) }})
				switch how {
				case "add":
					f.OnAdd(obj, false)
				case "update":
					f.OnUpdate(obj, obj)
				case "delete":
					f.OnDelete(obj)
				case "tombstone":
					f.OnDelete(deletedFinalStateUnknown{Key: "default/x", Obj: obj})
				}
				if len(errs) != 1 {
					t.Fatalf("errors %v, want one", errs)
				}
				if kind := reflect.TypeOf(obj); i < kinds && !strings.HasPrefix(errs[0].Error(), kind.Elem().Name()+": nil object") {
					t.Fatalf("error %q does not name the kind %s", errs[0], kind)
				}
			})
		}
	}
}

// Informers resync and re-list claims while pods for them are placed and assumed concurrently (run
// with the race detector in CI): every assumed allocation survives, each on its own GPU, and a pod
// more finds no node.
func TestFeedConcurrentResyncsKeepAssumedAllocations(t *testing.T) {
	const gpus = 8
	ctx := context.Background()
	c := newCluster()
	var errs atomic.Int32
	f := feed.New(c, feed.Options{OnError: func(error) { errs.Add(1) }})
	gpuNode(f, gpus)
	claims := make([]*resourceapi.ResourceClaim, gpus+1)
	for i := range claims {
		claims[i] = gpuClaim(fmt.Sprintf("claim-%d", i), strconv.Itoa(100+i))
		f.OnAdd(claims[i], true)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for round := 0; round < 10000; round++ { // bounded; ends when the placements are done
				select {
				case <-done:
					return
				default:
				}
				for i := w; i < len(claims); i += 2 {
					f.OnUpdate(claims[i], claims[i])
				}
			}
		})
	}
	for i := range gpus {
		pl, err := c.Place(ctx, claimPod(fmt.Sprintf("pod-%d", i), claims[i].Name))
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		if err := c.Assume(pl); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
	}
	close(done)
	wg.Wait()
	used := map[string]bool{}
	for _, claim := range claims[:gpus] {
		held, _ := c.Snapshot().Claim("default", claim.Name)
		if held.Status.Allocation == nil {
			t.Fatalf("claim %s lost its assumed allocation", claim.Name)
		}
		dev := held.Status.Allocation.Devices.Results[0].Device
		if used[dev] {
			t.Fatalf("device %s allocated twice", dev)
		}
		used[dev] = true
	}
	if _, err := c.Place(ctx, claimPod("one-more", claims[gpus].Name)); !errors.Is(err, pods.ErrNoNode) {
		t.Fatalf("a pod more: %v, want ErrNoNode", err)
	}
	if errs.Load() != 0 {
		t.Fatalf("%d feed errors", errs.Load())
	}
}
