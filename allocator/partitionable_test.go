package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// partition is a device of size "half" or "whole" drawing memory from counter set gpu-0.
func partition(name, size, memory string, groups ...string) resourceapi.Device {
	d := device(name, map[string]any{"size": size})
	d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{
		CounterSet:          "gpu-0",
		Counters:            map[string]resourceapi.Counter{"memory": {Value: quantity(memory)}},
		CompatibilityGroups: groups,
	}}
	return d
}

// partitionedPool is a pool of two slices on node-1: the counters (8Gi of memory) and the devices.
func partitionedPool(devs ...resourceapi.Device) []*resourceapi.ResourceSlice {
	counters := withPool(nodeSlice("s-counters", node1, driverA, "pool-1"), 1, 2)
	counters.Spec.SharedCounters = []resourceapi.CounterSet{{
		Name:     "gpu-0",
		Counters: map[string]resourceapi.Counter{"memory": {Value: quantity("8Gi")}},
	}}
	return []*resourceapi.ResourceSlice{counters, withPool(nodeSlice("s-devices", node1, driverA, "pool-1", devs...), 1, 2)}
}

// partitionedPoolSpare is partitionedPool with a second counter set, gpu-1 (8Gi of memory), on which no
// device draws: counting the memory of both sets together finds room that no device can use, so only
// the search tells that devices drawing on gpu-0 do not fit together.
func partitionedPoolSpare(devs ...resourceapi.Device) []*resourceapi.ResourceSlice {
	s := partitionedPool(devs...)
	s[0].Spec.SharedCounters = append(s[0].Spec.SharedCounters, resourceapi.CounterSet{
		Name:     "gpu-1",
		Counters: map[string]resourceapi.Counter{"memory": {Value: quantity("8Gi")}},
	})
	return s
}

func sizeClass(size string) *resourceapi.DeviceClass {
	return class(size, `device.attributes["`+driverA+`"].size == "`+size+`"`)
}

func TestAllocatePartitionableDevices(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass, sizeClass("half"), sizeClass("whole")}
	gpu := partitionedPool(partition("p-a", "half", "4Gi"), partition("p-b", "half", "4Gi"), partition("whole", "whole", "8Gi"))
	noPartitions := allocator.DefaultFeatures()
	noPartitions.DRAPartitionableDevices = false
	runAll(t, []scenario{{
		name: "partitions draw on the shared counters", slices: gpu, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))},
		want:   [][]string{{"req=pool-1/p-a", "req=pool-1/p-b"}},
	}, {
		name: "the counters allow no third device", slices: gpu, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 3))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "a whole device and a partition do not fit together", slices: gpu, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("w", "whole", 1), exact("h", "half", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "an allocated partition leaves room only for the other partition", slices: gpu, classes: classes,
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "p-a"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		want:      [][]string{{"req=pool-1/p-b"}},
	}, {
		name: "a pool overdrawn by allocated devices admits no further partition", slices: gpu, classes: classes,
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other",
			result(driverA, "pool-1", "whole"), result(driverA, "pool-1", "p-a"))},
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "counters consumed on another node count too",
		slices: func() []*resourceapi.ResourceSlice {
			counters := withPool(nodeSlice("s-counters", node1, driverA, "pool-1"), 1, 3)
			counters.Spec.NodeName = nil
			counters.Spec.AllNodes = ptr(true)
			counters.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: quantity("8Gi")}}}}
			return []*resourceapi.ResourceSlice{counters,
				withPool(nodeSlice("s-node1", node1, driverA, "pool-1", partition("p-a", "half", "4Gi")), 1, 3),
				withPool(nodeSlice("s-node2", node2, driverA, "pool-1", partition("p-b", "half", "8Gi")), 1, 3),
			}
		}(),
		classes:   classes,
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "p-b"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr:   allocator.ErrUnsatisfiable,
	}, {
		name:   "devices that consume counters are not allocated when DRAPartitionableDevices is off",
		slices: partitionedPool(partition("p-a", "half", "4Gi"), device("plain", nil)), classes: classes,
		features: &noPartitions,
		claims:   []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		want:     [][]string{{"req=pool-1/plain"}},
	}, {
		name: "a device consuming an unknown counter set makes the pool invalid", classes: classes,
		slices: partitionedPool(func() resourceapi.Device {
			d := partition("p-a", "half", "4Gi")
			d.ConsumesCounters[0].CounterSet = "gpu-9"
			return d
		}()),
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable, wantErrText: "counter set gpu-9 not found",
	}, {
		name: "a counter set defined twice makes the pool invalid", classes: classes, trusted: true,
		slices: func() []*resourceapi.ResourceSlice {
			s := partitionedPool(partition("p-a", "half", "4Gi"))
			s[0].Spec.SharedCounters = append(s[0].Spec.SharedCounters, s[0].Spec.SharedCounters[0])
			return s
		}(),
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable, wantErrText: "duplicate counter set name gpu-0",
	}, {
		name: "compatibility groups: devices on one counter set need a common group", classes: classes,
		features: ptr(allocator.AllFeatures()),
		slices: partitionedPool(partition("g-x", "half", "1Gi", "x"), partition("g-y", "half", "1Gi", "y"),
			partition("g-xy", "half", "1Gi", "x", "y")),
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))},
		want:   [][]string{{"req=pool-1/g-x", "req=pool-1/g-xy"}},
	}, {
		name: "compatibility groups: slices using them are ignored while the gate is off", classes: classes,
		slices:  partitionedPool(partition("g-x", "half", "1Gi", "x")),
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}})
}

func TestAllocatePerDeviceNodeSelection(t *testing.T) {
	perDevice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "s1"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:                 driverA,
			Pool:                   resourceapi.ResourcePool{Name: "fabric", Generation: 1, ResourceSliceCount: 1},
			PerDeviceNodeSelection: ptr(true),
			Devices: []resourceapi.Device{
				{Name: "on-node-2", NodeName: ptr(node2)},
				{Name: "on-node-1", NodeName: ptr(node1)},
				{Name: "everywhere", AllNodes: ptr(true)},
			},
		},
	}
	noPartitions := allocator.DefaultFeatures()
	noPartitions.DRAPartitionableDevices = false
	runAll(t, []scenario{{
		name: "devices are visible where their own node selection says", slices: []*resourceapi.ResourceSlice{perDevice},
		classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))},
		want:    [][]string{{"req=fabric/on-node-1", "req=fabric/everywhere"}},
	}, {
		name: "a device for all nodes gives a claim usable on all nodes", slices: []*resourceapi.ResourceSlice{perDevice},
		classes: []*resourceapi.DeviceClass{class("any", `device.driver == "`+driverA+`"`)},
		node:    node("node-3", nil),
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantResults: []resourceapi.AllocationResult{{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "req", Driver: driverA, Pool: "fabric", Device: "everywhere"}},
		}}},
	}, {
		name: "per-device node selection is ignored when DRAPartitionableDevices is off", features: &noPartitions,
		slices: []*resourceapi.ResourceSlice{perDevice}, classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}})
}

// A device the pool's counters cannot admit any more is no candidate: with a partition of each GPU in
// use, no whole GPU can be taken, and the claim fails before the search tries every combination of its
// small partitions (12 of them, none interchangeable: they draw on different counter sets and slices).
func TestFailFastCountsOnlyDevicesTheCountersAdmit(t *testing.T) {
	counters := withPool(nodeSlice("s-counters", node1, driverA, "pool-1"), 1, 2)
	var devs []resourceapi.Device
	for g := range 2 {
		set := fmt.Sprintf("gpu-%d", g)
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, resourceapi.CounterSet{
			Name: set, Counters: map[string]resourceapi.Counter{"memory": {Value: quantity("8Gi")}},
		})
		consume := func(d resourceapi.Device, memory string) resourceapi.Device {
			d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: map[string]resourceapi.Counter{"memory": {Value: quantity(memory)}}}}
			return d
		}
		for i := range 7 {
			devs = append(devs, consume(device(fmt.Sprintf("gpu-%d-small-%d", g, i), map[string]any{"size": "small"}), "1Gi"))
		}
		devs = append(devs, consume(device(fmt.Sprintf("gpu-%d-whole", g), map[string]any{"size": "whole"}), "8Gi"))
	}
	s := allocator.NewSnapshot(allocator.Options{StepBudget: 500})
	must(t, s.AddOrUpdateSlice(counters))
	must(t, s.AddOrUpdateSlice(withPool(nodeSlice("s-devices", node1, driverA, "pool-1", devs...), 1, 2)))
	must(t, s.AddOrUpdateClass(sizeClass("small")))
	must(t, s.AddOrUpdateClass(sizeClass("whole")))
	must(t, s.AddOrUpdateClaim(allocatedClaim("held",
		result(driverA, "pool-1", "gpu-0-small-6"), result(driverA, "pool-1", "gpu-1-small-6"))))

	c := claim("c", exact("small", "small", 4), exact("whole", "whole", 1))
	_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
	if !errors.Is(err, allocator.ErrUnsatisfiable) || !strings.Contains(err.Error(), `request "whole": needs 1 device, 0 match and are free`) {
		t.Fatalf("got %v, want does not fit, decided by counting", err)
	}
}

// A pool whose devices lie in more slices than a scan covers (scanSlices, 8) finds each device's
// counters by slice as well: twelve slices of one partition each draw on one set of 8Gi, two partitions
// of other slices already hold 6Gi, so one more 2Gi partition fits and a second does not.
func TestCountersOfPoolWithManySlices(t *testing.T) {
	const n = 12
	counters := withPool(nodeSlice("s-counters", node1, driverA, "pool-1"), 1, n+1)
	counters.Spec.SharedCounters = []resourceapi.CounterSet{{
		Name: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: quantity("8Gi")}},
	}}
	slices := []*resourceapi.ResourceSlice{counters}
	for i := range n {
		memory := "2Gi"
		if i == 3 || i == 9 {
			memory = "3Gi"
		}
		d := partition(fmt.Sprintf("p-%02d", i), "half", memory)
		slices = append(slices, withPool(nodeSlice(fmt.Sprintf("s-%02d", i), node1, driverA, "pool-1", d), 1, n+1))
	}
	held := allocatedClaim("held", result(driverA, "pool-1", "p-03"), result(driverA, "pool-1", "p-09"))
	classes := []*resourceapi.DeviceClass{anyClass, sizeClass("half")}
	runAll(t, []scenario{{
		name: "one more partition fits", slices: slices, classes: classes, allocated: []*resourceapi.ResourceClaim{held},
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "half", 1))},
		want:   [][]string{{"req=pool-1/p-00"}},
	}, {
		name: "two more do not", slices: slices, classes: classes, allocated: []*resourceapi.ResourceClaim{held},
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "half", 2))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "without the held claim four fit", slices: slices, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "half", 4))},
		want:   [][]string{{"req=pool-1/p-00", "req=pool-1/p-01", "req=pool-1/p-02", "req=pool-1/p-04"}},
	}})
}
