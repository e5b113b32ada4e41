package headroom_test

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// migSlices is one GPU of node m in dynamic-MIG mode, laid out as NVIDIA's driver does for 1.35 and
// later: a slice with the GPU's counter set (memory slices 0–7, one each), and a slice with its
// devices: the whole GPU (all 8 slices), 4g partitions at slices 0 and 4, 1g partitions at each slice.
func migSlices() []*resourceapi.ResourceSlice {
	node := "m"
	pool := resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 2}
	one := resource.MustParse("1")
	set := resourceapi.CounterSet{Name: "gpu-0-counter-set", Counters: map[string]resourceapi.Counter{}}
	for i := range 8 {
		set.Counters[fmt.Sprintf("memory-slice-%d", i)] = resourceapi.Counter{Value: one}
	}
	dev := func(name, profile string, from, to int) resourceapi.Device {
		c := map[string]resourceapi.Counter{}
		for i := from; i < to; i++ {
			c[fmt.Sprintf("memory-slice-%d", i)] = resourceapi.Counter{Value: one}
		}
		p := profile
		return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"profile": {StringValue: &p}},
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set.Name, Counters: c}}}
	}
	devices := []resourceapi.Device{dev("gpu-0", "gpu", 0, 8), dev("gpu-0-4g-0", "4g", 0, 4), dev("gpu-0-4g-4", "4g", 4, 8)}
	for i := range 8 {
		devices = append(devices, dev(fmt.Sprintf("gpu-0-1g-%d", i), "1g", i, i+1))
	}
	return []*resourceapi.ResourceSlice{
		{ObjectMeta: metav1.ObjectMeta{Name: "m-counters"}, Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &node, Pool: pool, SharedCounters: []resourceapi.CounterSet{set}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "m-devices"}, Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &node, Pool: pool, Devices: devices}},
	}
}

// allocated is a claim holding the device of node m.
func allocated(name, device string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	c.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: driver, Pool: "m", Device: device}}}}
	return c
}

func TestFragmentationMIG(t *testing.T) {
	inv, err := headroom.NewInventory(migSlices())
	if err != nil {
		t.Fatal(err)
	}
	profile := func(p string) headroom.Request {
		return headroom.Request{Count: 1, Attributes: map[resourceapi.QualifiedName][]string{"profile": {p}}}
	}
	mix := []headroom.Shape{{Name: "4g", Weight: 0.5, Requests: []headroom.Request{profile("4g")}}, {Name: "gpu", Weight: 0.5, Requests: []headroom.Request{profile("gpu")}}}
	for _, tc := range []struct {
		name                string
		held                []string
		tainted             []string // devices a DeviceTaintRule taints NoSchedule ("*": every device of the pool, NoExecute)
		free, f, strandFree float64
		stranded            int
	}{
		// Nothing held: both shapes fit and can use the GPU, F = 0.
		{name: "empty", free: 1},
		// A 1g at slice 0: 7 of 8 slices free. The 4g at slice 4 fits (F 0); the whole GPU does not
		// (F 7/8). F = ½·0 + ½·0.875.
		{name: "1g at 0", held: []string{"gpu-0-1g-0"}, free: 0.875, f: 0.4375},
		// 1g at slices 0 and 4: 6/8 free, but neither 4g nor the GPU fits: all of it is fragmented and
		// stranded.
		{name: "1g at 0 and 4", held: []string{"gpu-0-1g-0", "gpu-0-1g-4"}, free: 0.75, f: 0.75, stranded: 1, strandFree: 0.75},
		// FREE of a partitionable GPU is its counters that a device the allocator could give now draws
		// on. Every device tainted: none can be given, so none of the GPU is free (not 1): nothing
		// free, nothing fragmented or stranded.
		{name: "every device tainted", tainted: []string{"*"}},
		// The tainted 1g at slice 3 serves nothing, but the 4g at 0 and the whole GPU still draw on
		// slice 3: all 8 slices free, and both shapes fit (F 0), as when nothing is tainted.
		{name: "one 1g tainted", tainted: []string{"gpu-0-1g-3"}, free: 1},
		// The whole GPU, the 4g at 0 and the 1g at 0–3 tainted: no device that can be given draws on
		// slices 0–3, free 4/8. The 4g at 4 fits (F 0); the GPU shape does not (F 0.5, the node's free):
		// F = ½·0 + ½·0.5. The 4g shape can use the GPU: nothing stranded.
		{name: "first half tainted", tainted: []string{"gpu-0", "gpu-0-4g-0", "gpu-0-1g-0", "gpu-0-1g-1", "gpu-0-1g-2", "gpu-0-1g-3"}, free: 0.5, f: 0.25},
		// The 1g at 4 held, the 1g at 5 tainted: slice 5 is left, but the devices on it that are not
		// tainted (the GPU, the 4g at 4) need slice 4 too and do not fit: slices 0–3, 6, 7 free, 6/8.
		// The 4g at 0 fits (0), the GPU does not (0.75): F = ½·0.75.
		{name: "1g at 4 held, 1g at 5 tainted", held: []string{"gpu-0-1g-4"}, tainted: []string{"gpu-0-1g-5"}, free: 0.75, f: 0.375},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := allocator.NewSnapshot(allocator.Options{})
			for _, s := range migSlices() {
				must(snap.AddOrUpdateSlice(s))
			}
			must(snap.AddOrUpdateClass(gpuClass()))
			for i, d := range tc.held {
				must(snap.AddOrUpdateClaim(allocated(fmt.Sprint("c", i), d)))
			}
			for _, d := range tc.tainted {
				rule := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "taint-" + d}}
				rule.Spec.DeviceSelector = &resourceapi.DeviceTaintSelector{Device: &d}
				rule.Spec.Taint = resourceapi.DeviceTaint{Key: "example.com/unhealthy", Effect: resourceapi.DeviceTaintEffectNoSchedule}
				if d == "*" {
					pool := "m"
					rule.Name = "taint-pool"
					rule.Spec.DeviceSelector = &resourceapi.DeviceTaintSelector{Pool: &pool}
					rule.Spec.Taint.Effect = resourceapi.DeviceTaintEffectNoExecute
				}
				must(snap.AddOrUpdateTaintRule(rule))
			}
			rep, err := inv.Fragmentation(pods.New(snap, pods.Options{}), mix)
			if err != nil {
				t.Fatal(err)
			}
			n := rep.Nodes[0]
			if !near(n.Free, tc.free) || !near(n.F, tc.f) || n.StrandedDevices != tc.stranded || !near(n.StrandedFree, tc.strandFree) {
				t.Fatalf("got %+v, want free %v F %v stranded %d (%v)", n, tc.free, tc.f, tc.stranded, tc.strandFree)
			}
		})
	}
}
