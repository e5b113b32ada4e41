package feed_test

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/feed"
)

// TestFeedEnforcesResourceQuotas: with Options.EnforceQuota a ResourceQuota's limit on devices of a
// class applies to the snapshot's allocations, a DeviceClass's extendedResourceName added later makes
// a requests.<name> key apply, and deleting the quotas lifts them; without the option a ResourceQuota
// is an error.
func TestFeedEnforcesResourceQuotas(t *testing.T) {
	c := newCluster()
	f := feed.New(c, feed.Options{EnforceQuota: true})
	nodeName := "node-0"
	f.OnAdd(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, true)
	f.OnAdd(&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.example.com", NodeName: &nodeName, Pool: resourceapi.ResourcePool{Name: nodeName, ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}}, true)
	f.OnAdd(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}, true)
	quota := func(name, key string) *v1.ResourceQuota {
		return &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
			Spec: v1.ResourceQuotaSpec{Hard: v1.ResourceList{v1.ResourceName(key): resource.MustParse("1")}}}
	}
	claims := []*resourceapi.ResourceClaim{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpus",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2}}}}},
	}}
	allocate := func() error {
		_, err := c.Snapshot().AllocateOnNode(context.Background(), nodeName, claims)
		return err
	}
	f.OnAdd(quota("by-class", "gpu.deviceclass.resource.k8s.io/devices"), true)
	if err := allocate(); !errors.Is(err, allocator.ErrQuotaExceeded) {
		t.Fatalf("under the quota by class: %v, want ErrQuotaExceeded", err)
	}
	f.OnDelete(quota("by-class", ""))
	f.OnAdd(quota("by-name", "requests.example.com/gpu"), true)
	if err := allocate(); err != nil {
		t.Fatalf("requests.example.com/gpu before a class names it: %v", err)
	}
	named := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}
	named.Spec.ExtendedResourceName = new(string)
	*named.Spec.ExtendedResourceName = "example.com/gpu"
	f.OnUpdate(nil, named)
	if err := allocate(); !errors.Is(err, allocator.ErrQuotaExceeded) {
		t.Fatalf("requests.example.com/gpu once the class names it: %v, want ErrQuotaExceeded", err)
	}
	f.OnDelete(quota("by-name", ""))
	if err := allocate(); err != nil {
		t.Fatalf("after the quotas were deleted: %v", err)
	}
	if n := f.Stats().Failed["ResourceQuota"] + f.Stats().Failed[""]; n != 0 {
		t.Fatalf("%d failed events", n)
	}

	var failed error
	plain := feed.New(newCluster(), feed.Options{OnError: func(err error) { failed = err }})
	plain.OnAdd(quota("q", "gpu.deviceclass.resource.k8s.io/devices"), true)
	if failed == nil {
		t.Fatal("a ResourceQuota without EnforceQuota was applied")
	}
}
