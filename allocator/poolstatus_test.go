package allocator_test

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// poolSlice is a slice of pool p of node n at generation gen, the pool saying it has count slices.
func poolSlice(name, p string, gen, count int64, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	n := p
	return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.example.com", NodeName: &n, Pool: resourceapi.ResourcePool{Name: p, Generation: gen, ResourceSliceCount: count}, Devices: devices}}
}

// TestPoolStatus: the allocator reads a pool's newest generation only, and only once all of its slices
// are published; the snapshot and PoolStatuses say so alike.
func TestPoolStatus(t *testing.T) {
	gpu := resourceapi.Device{Name: "gpu-0"}
	one := map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("1")}}
	compat := resourceapi.Device{Name: "gpu-1", ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-1", Counters: one, CompatibilityGroups: []string{"a"}}}}
	counters := func(s *resourceapi.ResourceSlice) *resourceapi.ResourceSlice {
		s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-1", Counters: one}}
		return s
	}
	for _, tc := range []struct {
		name   string
		slices []*resourceapi.ResourceSlice
		all    bool // every gate on, DRADeviceCompatibilityGroups among them; else the default gates
		want   allocator.PoolStatus
		reads  []bool // per slice
	}{
		{name: "one complete slice", slices: []*resourceapi.ResourceSlice{poolSlice("a", "a", 1, 1, gpu)},
			want: allocator.PoolStatus{Generation: 1, Slices: 1, ResourceSliceCount: 1}, reads: []bool{true}},
		// Generation 2 replaces generation 1, whichever is added first; 1 slice of 1.
		{name: "republished pool", slices: []*resourceapi.ResourceSlice{poolSlice("a-2", "a", 2, 1, gpu), poolSlice("a-1", "a", 1, 1, gpu)},
			want: allocator.PoolStatus{Generation: 2, Slices: 1, ResourceSliceCount: 1}, reads: []bool{true, false}},
		// Generation 2 says 2 slices and publishes 1: incomplete, and generation 1 is obsolete all the same.
		{name: "republishing under way", slices: []*resourceapi.ResourceSlice{poolSlice("a-1", "a", 1, 1, gpu), poolSlice("a-2", "a", 2, 2, gpu)},
			want: allocator.PoolStatus{Generation: 2, Slices: 1, ResourceSliceCount: 2}, reads: []bool{false, false}},
		{name: "two of two", slices: []*resourceapi.ResourceSlice{poolSlice("a-x", "a", 3, 2, gpu), poolSlice("a-y", "a", 3, 2)},
			want: allocator.PoolStatus{Generation: 3, Slices: 2, ResourceSliceCount: 2}, reads: []bool{true, true}},
		// With DRADeviceCompatibilityGroups off the slice using compatibility groups is ignored: 1 of 2.
		{name: "compatibility groups off", slices: []*resourceapi.ResourceSlice{counters(poolSlice("a-x", "a", 1, 2)), poolSlice("a-y", "a", 1, 2, compat)},
			want: allocator.PoolStatus{Generation: 1, Slices: 1, ResourceSliceCount: 2}, reads: []bool{false, false}},
		{name: "compatibility groups on", all: true, slices: []*resourceapi.ResourceSlice{counters(poolSlice("a-x", "a", 1, 2)), poolSlice("a-y", "a", 1, 2, compat)},
			want: allocator.PoolStatus{Generation: 1, Slices: 2, ResourceSliceCount: 2}, reads: []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := allocator.DefaultFeatures()
			if tc.all {
				f = allocator.AllFeatures()
			}
			snap := allocator.NewSnapshot(allocator.Options{Features: &f})
			for _, s := range tc.slices {
				if err := snap.AddOrUpdateSlice(s); err != nil {
					t.Fatal(err)
				}
			}
			id := allocator.PoolID{Driver: "gpu.example.com", Pool: "a"}
			got, ok := snap.PoolStatus(id)
			if !ok || got != tc.want {
				t.Errorf("Snapshot.PoolStatus = %+v, %v; want %+v", got, ok, tc.want)
			}
			all := allocator.PoolStatuses(f, tc.slices)
			if len(all) != 1 || all[id] != tc.want {
				t.Errorf("PoolStatuses = %+v; want %+v", all, tc.want)
			}
			for i, s := range tc.slices {
				if r := tc.want.Reads(s); r != tc.reads[i] {
					t.Errorf("Reads(%s) = %v, want %v", s.Name, r, tc.reads[i])
				}
			}
		})
	}
	snap := allocator.NewSnapshot(allocator.Options{})
	if _, ok := snap.PoolStatus(allocator.PoolID{Driver: "gpu.example.com", Pool: "none"}); ok {
		t.Error("PoolStatus of a pool the snapshot does not hold: ok")
	}
}
