package allocator_test

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// quotaScene is a node with three H100s, a quota that lets namespace ml hold one, and two claims that
// hold a GPU each: lab/eval and ml/done. ml/train, pending, was refused for ml's quota: the Requeue holds
// it with the limits the refusal named.
type quotaScene struct {
	snap       *allocator.Snapshot
	rq         *allocator.Requeue
	node       *v1.Node
	train      *resourceapi.ResourceClaim
	eval, done *resourceapi.ResourceClaim
}

func h100Claim(namespace, name string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name:    "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "h100", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
}

func newQuotaScene(ctx context.Context) *quotaScene {
	quota := &allocator.Quota{Limits: []allocator.QuotaLimit{
		{Owner: "ml", Class: "h100", Kind: allocator.QuotaDevices, Max: resource.MustParse("1")},
	}}
	s := &quotaScene{
		snap: allocator.NewSnapshot(allocator.Options{Quota: quota}),
		node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
	}
	var err error
	// The Requeue applies the same quota as the Snapshot, so that it knows who owns a claim and which
	// quota changes matter.
	if s.rq, err = allocator.NewRequeue(allocator.RequeueOptions{Quota: quota}); err != nil {
		panic(err)
	}
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "h100"}}
	slice := exampleGPUSlice("node-1", "h100", "h100", "h100")
	if err := s.snap.AddOrUpdateClass(class); err != nil {
		panic(err)
	}
	if err := s.snap.AddOrUpdateSlice(slice); err != nil {
		panic(err)
	}
	if _, err := s.rq.AddOrUpdateClass(ctx, class); err != nil {
		panic(err)
	}
	if _, err := s.rq.AddOrUpdateSlice(ctx, slice); err != nil {
		panic(err)
	}
	s.eval, s.done = s.allocate(ctx, h100Claim("lab", "eval")), s.allocate(ctx, h100Claim("ml", "done"))

	s.train = h100Claim("ml", "train")
	_, err = s.snap.Allocate(ctx, s.node, []*resourceapi.ResourceClaim{s.train})
	var ue *allocator.UnsatisfiableError
	if !errors.As(err, &ue) || len(ue.Quota) == 0 {
		panic(fmt.Sprintf("ml/train was not refused for quota: %v", err))
	}
	fmt.Println("refused:", ue.Quota[0])
	if err := s.rq.AddPendingOverQuota(s.train, ue.Quota); err != nil {
		panic(err)
	}
	return s
}

// allocate allocates a claim on the node and records it in the Snapshot.
func (s *quotaScene) allocate(ctx context.Context, c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	res, err := s.snap.Allocate(ctx, s.node, []*resourceapi.ResourceClaim{c})
	if err != nil {
		panic(err)
	}
	c.Status.Allocation = &res[0]
	if err := s.snap.AddOrUpdateClaim(c); err != nil {
		panic(err)
	}
	return c
}

// deallocate forgets a claim in the Snapshot and tells the Requeue.
func (s *quotaScene) deallocate(ctx context.Context, c *resourceapi.ResourceClaim) {
	if err := s.snap.DeleteClaim(c.Namespace, c.Name); err != nil {
		panic(err)
	}
	woken, err := s.rq.ClaimDeallocated(ctx, c)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s/%s deallocated: woken %v\n", c.Namespace, c.Name, woken)
}

// A claim refused for its owner's quota is not worth retrying when another namespace frees a GPU: only
// when its own namespace frees one (or its quota is raised).
func ExampleRequeue_AddPendingOverQuota() {
	ctx := context.Background()
	s := newQuotaScene(ctx)
	s.deallocate(ctx, s.eval)
	s.deallocate(ctx, s.done)

	res, err := s.snap.Allocate(ctx, s.node, []*resourceapi.ResourceClaim{s.train})
	if err != nil {
		panic(err)
	}
	fmt.Println("retried: ml/train gets", res[0].Devices.Results[0].Device)
	// Output:
	// refused: quota owner ml, DeviceClass h100, devices ≤ 1: holds 1, asks for 1 more
	// lab/eval deallocated: woken []
	// ml/done deallocated: woken [ml/train]
	// retried: ml/train gets gpu-0
}

// When the quota changes, as an informer on ResourceQuotas sees it, the Snapshot and the Requeue get the
// new one; the Requeue wakes the claims whose owner may now hold more.
func ExampleRequeue_SetQuota() {
	ctx := context.Background()
	s := newQuotaScene(ctx)
	raised := &allocator.Quota{Limits: []allocator.QuotaLimit{
		{Owner: "ml", Class: "h100", Kind: allocator.QuotaDevices, Max: resource.MustParse("2")},
	}}
	if err := s.snap.SetQuota(raised); err != nil {
		panic(err)
	}
	woken, err := s.rq.SetQuota(raised)
	if err != nil {
		panic(err)
	}
	fmt.Println("quota raised: woken", woken)

	res, err := s.snap.Allocate(ctx, s.node, []*resourceapi.ResourceClaim{s.train})
	if err != nil {
		panic(err)
	}
	fmt.Println("retried: ml/train gets", res[0].Devices.Results[0].Device)
	// Output:
	// refused: quota owner ml, DeviceClass h100, devices ≤ 1: holds 1, asks for 1 more
	// quota raised: woken [ml/train]
	// retried: ml/train gets gpu-2
}
