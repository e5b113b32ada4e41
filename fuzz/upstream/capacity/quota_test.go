package capacity_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dralloc/dralloc/capacity"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"pgregory.net/rapid"
)

// quotaClasses select devices by driver: whole GPUs, and GPUs shared by capacity.
var quotaClasses = classes{
	{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{
		{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{
		{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "shared.example.com"`}}}}},
}

// TestChargeClaimBoundsUpstreamAllocations draws a two-node inventory and a claim (ExactCount, All,
// firstAvailable, capacity requests on shared devices), lets the upstream allocator allocate it on one
// node, and checks that the exact charge of that allocation never exceeds what ChargeClaim charged for the
// claim beforehand: the quota promise that admission-time charges are an upper bound.
func TestChargeClaimBoundsUpstreamAllocations(t *testing.T) {
	var compared, allocated atomic.Int64
	rapid.Check(t, func(t *rapid.T) {
		var slices []*resourceapi.ResourceSlice
		for n := range 2 {
			nodeName := fmt.Sprintf("node-%d", n)
			for _, drv := range []string{"gpu.example.com", "shared.example.com"} {
				s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: nodeName + drv}, Spec: resourceapi.ResourceSliceSpec{
					Driver: drv, NodeName: &nodeName, Pool: resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1}}}
				for i := range rapid.IntRange(0, 3).Draw(t, nodeName+drv) {
					d := resourceapi.Device{Name: fmt.Sprintf("dev-%d", i), Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}}
					if drv == "shared.example.com" {
						d.AllowMultipleAllocations = ptrBool(true)
						d.Capacity["memory"] = genCapacity(t, fmt.Sprint(nodeName, i))
					} else {
						d.Capacity["memory"] = resourceapi.DeviceCapacity{Value: milliQ(1000 * rapid.Int64Range(1, 80).Draw(t, fmt.Sprint(nodeName, "mem", i)))}
					}
					s.Spec.Devices = append(s.Spec.Devices, d)
				}
				slices = append(slices, s)
			}
		}
		inv, err := capacity.NewInventory(slices, func(driver string, _ *resourceapi.Device) ([]string, error) {
			if driver == "gpu.example.com" {
				return []string{"gpu"}, nil
			}
			return []string{"shared"}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sub := func(label string) resourceapi.ExactDeviceRequest {
			class := rapid.SampledFrom([]string{"gpu", "shared"}).Draw(t, label+"class")
			r := resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount,
				Count: rapid.Int64Range(1, 2).Draw(t, label+"count")}
			if class == "gpu" && rapid.IntRange(0, 3).Draw(t, label+"all") == 0 {
				r.AllocationMode, r.Count = resourceapi.DeviceAllocationModeAll, 0
			}
			if class == "shared" && rapid.Bool().Draw(t, label+"capacity") {
				r.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
					"memory": milliQ(rapid.Int64Range(0, 20000).Draw(t, label+"memory"))}}
			}
			return r
		}
		var requests []resourceapi.DeviceRequest
		for i := range rapid.IntRange(1, 2).Draw(t, "requests") {
			name := fmt.Sprintf("r%d", i)
			if rapid.Bool().Draw(t, name+"first") {
				var alts []resourceapi.DeviceSubRequest
				for j := range rapid.IntRange(1, 3).Draw(t, name+"alts") {
					e := sub(fmt.Sprint(name, j))
					alts = append(alts, resourceapi.DeviceSubRequest{Name: fmt.Sprintf("s%d", j), DeviceClassName: e.DeviceClassName,
						AllocationMode: e.AllocationMode, Count: e.Count, Capacity: e.Capacity})
				}
				requests = append(requests, resourceapi.DeviceRequest{Name: name, FirstAvailable: alts})
				continue
			}
			e := sub(name)
			requests = append(requests, resourceapi.DeviceRequest{Name: name, Exactly: &e})
		}
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim", UID: "claim-uid"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}}}
		bound, err := capacity.ChargeClaim(claim.Spec, inv, capacity.Options{})
		if err != nil {
			t.Fatal(err)
		}

		state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
			AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
		ctx := context.Background()
		a, err := structured.NewAllocator(ctx, allFeatures(true), state, quotaClasses, slices, celCache)
		if err != nil {
			t.Fatal(err)
		}
		nodeName := rapid.SampledFrom([]string{"node-0", "node-1"}).Draw(t, "node")
		results, err := a.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, []*resourceapi.ResourceClaim{claim})
		compared.Add(1)
		if err != nil || results == nil {
			return // upstream rejects or cannot fit: nothing is charged
		}
		allocated.Add(1)
		claim.Status.Allocation = &results[0]
		exact, err := capacity.ChargeAllocation(claim, inv)
		if err != nil {
			t.Fatal(err)
		}
		for class, n := range exact.Devices {
			if n > bound.Devices[class] {
				t.Fatalf("class %s: allocated %d devices, charged %d (charge %v, allocation charge %v)", class, n, bound.Devices[class], bound, exact)
			}
		}
		for class, m := range exact.Capacity {
			for name, q := range m {
				if b := bound.Capacity[class][name]; q.Cmp(b) > 0 {
					t.Fatalf("class %s capacity %s: allocated %s, charged %s (charge %v, allocation charge %v)", class, name, q.String(), b.String(), bound, exact)
				}
			}
		}
	})
	t.Logf("compared %d claims with the upstream allocator, %d allocated", compared.Load(), allocated.Load())
}
