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
	"github.com/dralloc/dralloc/inventory"
)

// Two tenants share a DGX H100 in dynamic MIG, as a Kueue ClusterQueue per team would: team-a may hold
// two whole GPUs and four MIG partitions, team-b three whole GPUs. Each job asks for a whole GPU or, failing
// that, a 3g.40gb partition (firstAvailable). Kubernetes' quota charges such a claim its worst case at
// admission and Kueue refuses it; here the search charges what it takes: team-a's third job falls back to
// a partition once its whole GPUs are used up, although whole GPUs are free on the node, and its
// eighth job, beyond both limits, is refused naming the limit, what the team holds and what it asks.
func ExampleQuota() {
	tmpl, _ := inventory.Profile("dgxh100")
	tmpl.Mode = inventory.ModeDynamicMIG
	published, _ := tmpl.Slices("dgx-0", 1)
	driver := published[0].Spec.Driver

	q := &allocator.Quota{Limits: []allocator.QuotaLimit{
		{Owner: "team-a", Class: "gpu", Kind: allocator.QuotaDevices, Max: resource.MustParse("2")},
		{Owner: "team-a", Class: "mig", Kind: allocator.QuotaDevices, Max: resource.MustParse("4")},
		{Owner: "team-b", Class: "gpu", Kind: allocator.QuotaDevices, Max: resource.MustParse("3")},
	}}
	s := allocator.NewSnapshot(allocator.Options{Quota: q})
	for _, sl := range published {
		_ = s.AddOrUpdateSlice(sl)
	}
	for _, typ := range []string{"gpu", "mig"} {
		_ = s.AddOrUpdateClass(&resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: typ},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.driver == %q && device.attributes[%q].type == %q`, driver, driver, typ)}}}},
		})
	}
	job := func(ns, name string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "gpu",
				FirstAvailable: []resourceapi.DeviceSubRequest{
					{Name: "whole", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
					{Name: "mig", DeviceClassName: "mig", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
						Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
							Expression: fmt.Sprintf(`device.attributes[%q].profile == "3g.40gb"`, driver)}}}},
				},
			}}}},
		}
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dgx-0"}}
	ctx := context.Background()
	for i, ns := range []string{"team-a", "team-a", "team-a", "team-b", "team-a", "team-a", "team-a", "team-a"} {
		c := job(ns, fmt.Sprintf("job-%d", i))
		res, err := s.Allocate(ctx, node, []*resourceapi.ResourceClaim{c})
		if errors.Is(err, allocator.ErrQuotaExceeded) {
			var ue *allocator.UnsatisfiableError
			errors.As(err, &ue)
			fmt.Printf("%s/%s: refused: %s\n", ns, c.Name, ue.Quota[0])
			continue
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		r := res[0].Devices.Results[0]
		fmt.Printf("%s/%s: %s %s\n", ns, c.Name, r.Request, r.Device)
		c.Status.Allocation = &res[0]
		_ = s.AddOrUpdateClaim(c)
	}
	// Output:
	// team-a/job-0: gpu/whole gpu-0
	// team-a/job-1: gpu/whole gpu-1
	// team-a/job-2: gpu/mig gpu-2-mig-3g40gb-2-0
	// team-b/job-3: gpu/whole gpu-3
	// team-a/job-4: gpu/mig gpu-2-mig-3g40gb-2-4
	// team-a/job-5: gpu/mig gpu-4-mig-3g40gb-2-0
	// team-a/job-6: gpu/mig gpu-4-mig-3g40gb-2-4
	// team-a/job-7: refused: quota owner team-a, DeviceClass gpu, devices ≤ 2: holds 2, asks for 1 more
}

// The cluster's ResourceQuota allows team-a two devices of class gpu and it holds one. A claim that asks
// for two GPUs or else one MIG device is refused by kube-apiserver when it is created (admission charges
// the largest alternative: 1 held + 2 > 2), while dralloc, which charges what the search takes, gives it
// the MIG device.
func ExampleQuotaFromResourceQuotas() {
	rq := &v1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "devices"},
		Spec: v1.ResourceQuotaSpec{Hard: v1.ResourceList{
			"gpu.deviceclass.resource.k8s.io/devices": resource.MustParse("2"),
			"requests.cpu": resource.MustParse("64"),
		}},
	}
	q, _ := allocator.QuotaFromResourceQuotas([]*v1.ResourceQuota{rq}, nil)
	fmt.Println(q.Limits[0])

	dev := func(name, typ string) resourceapi.Device {
		return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValue: &typ}}}
	}
	s := allocator.NewSnapshot(allocator.Options{Quota: q})
	nodeName := "node-0"
	_ = s.AddOrUpdateSlice(&resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "node-0-gpus"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: &nodeName,
			Pool:    resourceapi.ResourcePool{Name: "node-0", ResourceSliceCount: 1},
			Devices: []resourceapi.Device{dev("gpu-0", "gpu"), dev("gpu-1", "gpu"), dev("gpu-2", "gpu"), dev("mig-0", "mig")}},
	})
	for _, typ := range []string{"gpu", "mig"} {
		_ = s.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: typ},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.attributes["gpu.example.com"].type == %q`, typ)}}}}})
	}
	held := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "held"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}}},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node-0", Device: "gpu-0"}}}}},
	}
	_ = s.AddOrUpdateClaim(held)
	ask := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ask"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
			FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "two", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
				{Name: "mig", DeviceClassName: "mig", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
			}}}}},
	}
	res, err := s.Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, []*resourceapi.ResourceClaim{ask})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res[0].Devices.Results {
		fmt.Println(r.Request, r.Device)
	}
	// Output:
	// owner team-a, DeviceClass gpu, devices ≤ 2
	// gpu/mig mig-0
}

// A quota read after the snapshot was filled, as the cluster's ResourceQuotas change: the claim that fit
// without it is refused under it, with the limit, what the namespace holds and what it asks.
func ExampleSnapshot_SetQuota() {
	nodeName := "node-0"
	s := allocator.NewSnapshot(allocator.Options{})
	_ = s.AddOrUpdateSlice(&resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "node-0-gpus"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: &nodeName,
			Pool:    resourceapi.ResourcePool{Name: "node-0", ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}},
	})
	_ = s.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})
	ask := []*resourceapi.ResourceClaim{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpus",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2}}}}},
	}}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	_, err := s.Allocate(context.Background(), node, ask)
	fmt.Println("without quota:", err)

	_ = s.SetQuota(&allocator.Quota{Limits: []allocator.QuotaLimit{
		{Owner: "team-a", Class: "gpu", Kind: allocator.QuotaDevices, Max: resource.MustParse("1")},
	}})
	_, err = s.Allocate(context.Background(), node, ask)
	fmt.Println(errors.Is(err, allocator.ErrQuotaExceeded), err)
	// Output:
	// without quota: <nil>
	// true cannot allocate all claims on node node-0: quota owner team-a, DeviceClass gpu, devices ≤ 1: holds 0, asks for 2 more
}
