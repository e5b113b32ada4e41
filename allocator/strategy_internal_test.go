package allocator

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestInterchangeableDevicesRankAlike: the search of every strategy skips a device interchangeable with
// one that failed at the same position (failures.cover). That is sound only when the two are in the same
// state, and then BestFit and Spread rank them alike: devices of different fill are never
// interchangeable. The node has partitions of two GPUs (one partly used), devices taking shares of 8Gi
// (two with 4Gi used, one with 2Gi, one with none) and plain devices; every pair of candidates of a
// request for any device is checked, and the pairs that must be interchangeable (the two half-used
// shared devices, the plain devices) are.
func TestInterchangeableDevicesRankAlike(t *testing.T) {
	const drv = "gpu.example.com"
	node := "node-1"
	one := resourceapi.Counter{Value: resource.MustParse("1")}
	counters := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "counters"},
		Spec:       resourceapi.ResourceSliceSpec{Driver: drv, NodeName: &node, Pool: resourceapi.ResourcePool{Name: "parts", Generation: 1, ResourceSliceCount: 2}},
	}
	parts := counters.DeepCopy()
	parts.Name = "parts"
	for g := range 2 {
		set := fmt.Sprintf("gpu-%d", g)
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, resourceapi.CounterSet{Name: set, Counters: map[string]resourceapi.Counter{"a": one, "b": one}})
		for _, half := range []string{"a", "b"} {
			parts.Spec.Devices = append(parts.Spec.Devices, resourceapi.Device{Name: set + "-" + half,
				ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: map[string]resourceapi.Counter{half: one}}}})
		}
	}
	yes := true
	shared := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Spec:       resourceapi.ResourceSliceSpec{Driver: drv, NodeName: &node, Pool: resourceapi.ResourcePool{Name: "shared", Generation: 1, ResourceSliceCount: 1}},
	}
	for i := range 4 {
		shared.Spec.Devices = append(shared.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("share-%d", i), AllowMultipleAllocations: &yes,
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("8Gi")}}})
	}
	for i := range 3 {
		shared.Spec.Devices = append(shared.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("plain-%d", i)})
	}
	f := DefaultFeatures()
	f.DRAConsumableCapacity, f.DRAPartitionableDevices = true, true
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "req",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "any", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}}}
	held := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held", UID: "held"}, Spec: spec}
	held.Status.Allocation = &resourceapi.AllocationResult{}
	held.Status.Allocation.Devices.Results = append(held.Status.Allocation.Devices.Results,
		resourceapi.DeviceRequestAllocationResult{Request: "req", Driver: drv, Pool: "parts", Device: "gpu-1-a"})
	for i, use := range []struct{ device, memory string }{{"share-1", "4Gi"}, {"share-2", "4Gi"}, {"share-3", "2Gi"}} {
		held.Status.Allocation.Devices.Results = append(held.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "req", Driver: drv, Pool: "shared", Device: use.device, ShareID: ptrTo(types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(use.memory)}})
	}
	held.Spec.Devices.Requests[0].Exactly.Count = int64(len(held.Status.Allocation.Devices.Results))
	mustNil := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	want := map[[2]string]bool{{"share-1", "share-2"}: true, {"plain-0", "plain-1"}: true, {"plain-0", "plain-2"}: true, {"plain-1", "plain-2"}: true}
	for _, strategy := range []Strategy{BestFit, Spread} {
		s := NewSnapshot(Options{Strategy: strategy, Features: &f})
		for _, sl := range []*resourceapi.ResourceSlice{counters, parts, shared} {
			mustNil(s.AddOrUpdateSlice(sl))
		}
		mustNil(s.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "any"}}))
		mustNil(s.AddOrUpdateClaim(held))
		pending := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pending"}, Spec: spec}
		err := s.do(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, []*resourceapi.ResourceClaim{pending}, func(a *allocation) (bool, error) {
			// As search prepares the call, up to the search itself.
			pools, err := a.gatherPools(a.node)
			if err != nil {
				return false, err
			}
			a.pools, a.matches = pools, map[matchKey]bool{}
			a.perClaim = grow(a.perClaim, len(a.claims))
			if err := a.prepareClaim(0); err != nil {
				return false, err
			}
			list, err := a.rankKeys(a.perClaim[0].slots[0].alts[0])
			if err != nil {
				return false, err
			}
			list = append([]ranked(nil), list...)
			if len(list) != 11 {
				t.Errorf("%s: %d candidates, want 11", strategy, len(list))
			}
			found := map[[2]string]bool{}
			for i, x := range list {
				dx := a.pools[x.at.pool].slices[x.at.slice].devices()[x.at.device]
				for _, y := range list[i+1:] {
					dy := a.pools[y.at.pool].slices[y.at.slice].devices()[y.at.device]
					if !a.interchangeable(dx, dy) {
						continue
					}
					found[[2]string{dx.id.Device, dy.id.Device}] = true
					if x.whole != y.whole || x.fill != y.fill || x.size != y.size || x.blocks != y.blocks {
						t.Errorf("%s: %s and %s are interchangeable but rank apart: %+v, %+v", strategy, dx.id.Device, dy.id.Device, x, y)
					}
				}
			}
			for pair := range want {
				if !found[pair] {
					t.Errorf("%s: %s and %s are not interchangeable", strategy, pair[0], pair[1])
				}
			}
			for pair := range found {
				if !want[pair] {
					t.Errorf("%s: %s and %s are interchangeable", strategy, pair[0], pair[1])
				}
			}
			return true, nil
		})
		mustNil(err)
	}
}
