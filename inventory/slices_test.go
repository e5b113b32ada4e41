package inventory_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/inventory"
)

func mustSlices(t *testing.T, n inventory.Node, o inventory.Options) []*resourceapi.ResourceSlice {
	t.Helper()
	out, err := inventory.Slices(n, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range out {
		if errs := inventory.ValidateSlice(s); len(errs) > 0 {
			t.Fatalf("slice %s: %v", s.Name, errs)
		}
	}
	if errs := inventory.ValidatePool(out); len(errs) > 0 {
		t.Fatalf("pool: %v", errs)
	}
	return out
}

func devices(sl []*resourceapi.ResourceSlice) []resourceapi.Device {
	var out []resourceapi.Device
	for _, s := range sl {
		out = append(out, s.Spec.Devices...)
	}
	return out
}

func counterSets(sl []*resourceapi.ResourceSlice) []resourceapi.CounterSet {
	var out []resourceapi.CounterSet
	for _, s := range sl {
		out = append(out, s.Spec.SharedCounters...)
	}
	return out
}

func str(d resourceapi.Device, name string) string {
	a, ok := d.Attributes[resourceapi.QualifiedName(name)]
	switch {
	case !ok:
		return "<absent>"
	case a.StringValue != nil:
		return *a.StringValue
	case a.VersionValue != nil:
		return "v" + *a.VersionValue
	default:
		return "<not a string>"
	}
}

func capValue(d resourceapi.Device, name string) int64 {
	c, ok := d.Capacity[resourceapi.QualifiedName(name)]
	if !ok {
		return -1
	}
	return c.Value.Value()
}

func TestWholeGPUsPublishTheNVIDIASchema(t *testing.T) {
	sl := mustSlices(t, toyNode(2), inventory.Options{NodeName: "node-a"})
	if len(sl) != 1 {
		t.Fatalf("got %d slices, want 1", len(sl))
	}
	s := sl[0]
	if s.Spec.Driver != "gpu.nvidia.com" || *s.Spec.NodeName != "node-a" || s.Spec.Pool.Name != "node-a" ||
		s.Spec.Pool.Generation != 1 || s.Spec.Pool.ResourceSliceCount != 1 {
		t.Errorf("spec = driver %q node %q pool %+v", s.Spec.Driver, *s.Spec.NodeName, s.Spec.Pool)
	}
	d := s.Spec.Devices[1]
	want := map[string]string{
		"name": "gpu-1", "type": "gpu", "uuid": "GPU-toy-b", "productName": "Toy GPU 20GB", "brand": "Nvidia",
		"architecture": "Hopper", "cudaComputeCapability": "v9.0.0", "driverVersion": "v580.95.5",
		"cudaDriverVersion": "v13.0.0", "resource.kubernetes.io/pciBusID": "0000:01:00.0",
		"resource.kubernetes.io/pcieRoot": "pci0000:00", "parentUUID": "<absent>", "profile": "<absent>",
	}
	for k, v := range want {
		got := d.Name
		if k != "name" {
			got = str(d, k)
		}
		if got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if got := capValue(d, "memory"); got != 20*gib {
		t.Errorf("memory = %d, want %d", got, 20*gib)
	}
	if len(d.Capacity) != 1 || d.ConsumesCounters != nil || d.Taints != nil {
		t.Errorf("whole GPU has extra capacity, counters or taints: %+v", d)
	}
}

func TestDynamicMIGCountersFollowTheProfiles(t *testing.T) {
	sl := mustSlices(t, toyNode(1), inventory.Options{NodeName: "n", Mode: inventory.ModeDynamicMIG})
	if len(sl) != 2 || len(sl[0].Spec.SharedCounters) != 1 || len(sl[1].Spec.Devices) != 12 {
		t.Fatalf("want a counter slice with 1 set and a device slice with 1+4+2+1+4 = 12 devices, got %d slices", len(sl))
	}
	set := sl[0].Spec.SharedCounters[0]
	if set.Name != "gpu-0-counter-set" {
		t.Errorf("counter set name %q", set.Name)
	}
	// Reasoned from toyGPU with NVIDIA's rule, the largest figure of any
	// profile per capacity: 40 SMs, 4 copy engines, 2 decoders and 20 GiB
	// (the 4g), 1 JPEG (the 4g or the 1g+me), 1 OFA (the 1g+me), and an
	// encoder counter of 0 although no profile has one.
	want := map[string]int64{"multiprocessors": 40, "copy-engines": 4, "decoders": 2, "encoders": 0, "jpeg-engines": 1, "ofa-engines": 1,
		"memory": 20 * gib, "memory-slice-0": 1, "memory-slice-1": 1, "memory-slice-2": 1, "memory-slice-3": 1}
	got := map[string]int64{}
	for k, v := range set.Counters {
		got[k] = v.Value.Value()
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counters = %v, want %v", got, want)
	}
	devs := sl[1].Spec.Devices
	names := []string{}
	for _, d := range devs {
		names = append(names, d.Name)
	}
	// Sorted by name, as NVIDIA's driver sorts a GPU's devices, so that
	// FirstFit picks what it would pick on a cluster running that driver.
	wantNames := []string{"gpu-0",
		"gpu-0-mig-1g5gb-0-0", "gpu-0-mig-1g5gb-0-1", "gpu-0-mig-1g5gb-0-2", "gpu-0-mig-1g5gb-0-3",
		"gpu-0-mig-1g5gb-me-7-0", "gpu-0-mig-1g5gb-me-7-1", "gpu-0-mig-1g5gb-me-7-2", "gpu-0-mig-1g5gb-me-7-3",
		"gpu-0-mig-2g10gb-1-0", "gpu-0-mig-2g10gb-1-2", "gpu-0-mig-4g20gb-4-0"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("names = %v\nwant %v", names, wantNames)
	}
	full := devs[0]
	if !reflect.DeepEqual(consumed(full), want) {
		t.Errorf("the whole GPU consumes %v, want everything %v", consumed(full), want)
	}
	// The whole GPU's capacities are the counters' engine figures.
	for c, v := range map[string]int64{"multiprocessors": 40, "copyEngines": 4, "decoders": 2, "encoders": 0, "jpegEngines": 1, "ofaEngines": 1, "memory": 20 * gib} {
		if got := capValue(full, c); got != v {
			t.Errorf("whole GPU capacity %s = %d, want %d", c, got, v)
		}
	}
	mig := devs[9] // 2g.10gb at 0
	if w := map[string]int64{"multiprocessors": 20, "copy-engines": 2, "decoders": 1, "encoders": 0, "jpeg-engines": 0, "ofa-engines": 0,
		"memory": 10 * gib, "memory-slice-0": 1, "memory-slice-1": 1}; !reflect.DeepEqual(consumed(mig), w) {
		t.Errorf("2g.10gb at 0 consumes %v, want %v", consumed(mig), w)
	}
	if str(mig, "type") != "mig" || str(mig, "profile") != "2g.10gb" || str(mig, "parentUUID") != "GPU-toy-a" ||
		str(mig, "uuid") != "<absent>" || str(mig, "resource.kubernetes.io/pciBusID") != "0000:00:00.0" ||
		str(mig, "resource.kubernetes.io/pcieRoot") != "pci0000:00" {
		t.Errorf("2g.10gb attributes: %v", mig.Attributes)
	}
	for c, v := range map[string]int64{"multiprocessors": 20, "copyEngines": 2, "decoders": 1, "encoders": 0, "jpegEngines": 0, "ofaEngines": 0, "memory": 10 * gib} {
		if got := capValue(mig, c); got != v {
			t.Errorf("2g.10gb capacity %s = %d, want %d", c, got, v)
		}
	}
}

func consumed(d resourceapi.Device) map[string]int64 {
	out := map[string]int64{}
	for _, c := range d.ConsumesCounters {
		for k, v := range c.Counters {
			out[k] += v.Value.Value()
		}
	}
	return out
}

// fits reports whether the devices can be allocated together under the
// counter sets, as the scheduler checks partitionable devices.
func fits(sets []resourceapi.CounterSet, devs ...resourceapi.Device) bool {
	left := map[string]map[string]int64{}
	for _, s := range sets {
		left[s.Name] = map[string]int64{}
		for k, v := range s.Counters {
			left[s.Name][k] = v.Value.Value()
		}
	}
	for _, d := range devs {
		for _, c := range d.ConsumesCounters {
			for k, v := range c.Counters {
				left[c.CounterSet][k] -= v.Value.Value()
				if left[c.CounterSet][k] < 0 {
					return false
				}
			}
		}
	}
	return true
}

func TestDynamicMIGPlacementsExcludeEachOtherThroughCounters(t *testing.T) {
	sl := mustSlices(t, toyNode(1), inventory.Options{NodeName: "n", Mode: inventory.ModeDynamicMIG})
	sets := counterSets(sl)
	by := map[string]resourceapi.Device{}
	for _, d := range devices(sl) {
		by[d.Name] = d
	}
	for _, tc := range []struct {
		name    string
		devices []string
		fit     bool
	}{
		{"two 2g.10gb side by side fit", []string{"gpu-0-mig-2g10gb-1-0", "gpu-0-mig-2g10gb-1-2"}, true},
		{"2g.10gb at 0 and 1g.5gb at 1 overlap", []string{"gpu-0-mig-2g10gb-1-0", "gpu-0-mig-1g5gb-0-1"}, false},
		{"2g.10gb at 0 and two 1g.5gb at 2 and 3 fit", []string{"gpu-0-mig-2g10gb-1-0", "gpu-0-mig-1g5gb-0-2", "gpu-0-mig-1g5gb-0-3"}, true},
		{"the whole GPU and any placement exclude each other", []string{"gpu-0", "gpu-0-mig-1g5gb-0-3"}, false},
		{"the whole GPU alone fits", []string{"gpu-0"}, true},
		{"the profile allowed once cannot be placed twice", []string{"gpu-0-mig-1g5gb-me-7-0", "gpu-0-mig-1g5gb-me-7-2"}, false},
		{"1g.5gb+me next to three 1g.5gb fits", []string{"gpu-0-mig-1g5gb-me-7-0", "gpu-0-mig-1g5gb-0-1", "gpu-0-mig-1g5gb-0-2", "gpu-0-mig-1g5gb-0-3"}, true},
		{"4g.20gb and 1g.5gb+me overlap", []string{"gpu-0-mig-4g20gb-4-0", "gpu-0-mig-1g5gb-me-7-3"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ds []resourceapi.Device
			for _, n := range tc.devices {
				d, ok := by[n]
				if !ok {
					t.Fatalf("no device %s", n)
				}
				ds = append(ds, d)
			}
			if got := fits(sets, ds...); got != tc.fit {
				t.Errorf("fits = %v, want %v", got, tc.fit)
			}
		})
	}
}

func TestStaticMIGPublishesExistingMIGDevicesOnly(t *testing.T) {
	n := toyNode(2)
	n.GPUs[0].MIGEnabled = true
	n.GPUs[0].MIGDevices = []inventory.MIGDevice{
		{UUID: "MIG-b", GIProfileID: 1, Placement: inventory.Placement{Start: 2, Size: 2}},
		{UUID: "MIG-a", GIProfileID: 0, Placement: inventory.Placement{Start: 0, Size: 1}},
	}
	devs := devices(mustSlices(t, n, inventory.Options{NodeName: "n", Mode: inventory.ModeStaticMIG}))
	var got []string
	for _, d := range devs {
		got = append(got, d.Name+"="+str(d, "uuid")+"/"+str(d, "parentUUID")+"/"+str(d, "type"))
	}
	want := []string{"gpu-0-mig-1g5gb-0-0=MIG-a/GPU-toy-a/mig", "gpu-0-mig-2g10gb-1-2=MIG-b/GPU-toy-a/mig", "gpu-1=GPU-toy-b/<absent>/gpu"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("devices = %v\nwant %v", got, want)
	}
	for _, d := range devs {
		if d.ConsumesCounters != nil {
			t.Errorf("%s consumes counters in static mode", d.Name)
		}
	}
	// As NVIDIA's MigDeviceInfo.GetDevice: the parent's PCI bus ID, the
	// profile's figures, and one memorySlice<i> capacity per slice held.
	b := devs[1]
	if str(b, "resource.kubernetes.io/pciBusID") != "0000:00:00.0" {
		t.Errorf("static MIG device lacks its parent's PCI bus ID: %v", b.Attributes)
	}
	for c, v := range map[string]int64{"multiprocessors": 20, "copyEngines": 2, "decoders": 1, "encoders": 0, "jpegEngines": 0,
		"ofaEngines": 0, "memory": 10 * gib, "memorySlice2": 1, "memorySlice3": 1} {
		if got := capValue(b, c); got != v {
			t.Errorf("2g.10gb at 2 capacity %s = %d, want %d", c, got, v)
		}
	}
	if len(b.Capacity) != 9 {
		t.Errorf("2g.10gb at 2 has %d capacities, want 7 figures and 2 memory slices: %v", len(b.Capacity), b.Capacity)
	}
}

func TestDynamicMIGFollowsWhetherTheArchitectureSwitchesMIGMode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		arch       string
		migEnabled bool
		whole      bool // the whole GPU is published
		partitions bool // the placements are published
	}{
		{"Hopper with MIG off gives itself whole and in placements", "Hopper", false, true, true},
		{"Hopper with MIG on gives itself whole and in placements", "Hopper", true, true, true},
		{"Blackwell with MIG off gives itself whole and in placements", "Blackwell", false, true, true},
		{"Ampere with MIG off cannot switch MIG on without a reset: whole only", "Ampere", false, true, false},
		{"Ampere with MIG on cannot switch MIG off without a reset: placements only", "Ampere", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := toyNode(1)
			n.GPUs[0].Architecture, n.GPUs[0].MIGEnabled = tc.arch, tc.migEnabled
			sl := mustSlices(t, n, inventory.Options{NodeName: "n", Mode: inventory.ModeDynamicMIG})
			whole, partitions := false, false
			for _, d := range devices(sl) {
				whole = whole || d.Name == "gpu-0"
				partitions = partitions || strings.HasPrefix(d.Name, "gpu-0-mig-")
			}
			if whole != tc.whole || partitions != tc.partitions {
				t.Errorf("whole GPU %v, placements %v; want %v, %v", whole, partitions, tc.whole, tc.partitions)
			}
			if got := len(counterSets(sl)); got != map[bool]int{true: 1, false: 0}[tc.partitions] {
				t.Errorf("%d counter sets", got)
			}
		})
	}
}

func TestTaintsOfAMIGDeviceStayOnIt(t *testing.T) {
	xid := resourceapi.DeviceTaint{Key: "gpu.nvidia.com/xid", Value: "94", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	lost := resourceapi.DeviceTaint{Key: "gpu.nvidia.com/gpu-lost", Effect: resourceapi.DeviceTaintEffectNoExecute}
	n := toyNode(1)
	n.GPUs[0].MIGEnabled = true
	n.GPUs[0].MIGDevices = []inventory.MIGDevice{
		{UUID: "MIG-a", GIProfileID: 0, GPUInstanceID: 7, Placement: inventory.Placement{Start: 0, Size: 1}},
		{UUID: "MIG-b", GIProfileID: 1, GPUInstanceID: 3, Placement: inventory.Placement{Start: 2, Size: 2}},
	}
	taintsOf := func(mode inventory.Mode, taints map[string][]resourceapi.DeviceTaint) map[string][]string {
		out := map[string][]string{}
		for _, d := range devices(mustSlices(t, n, inventory.Options{NodeName: "n", Mode: mode, Taints: taints})) {
			for _, t := range d.Taints {
				out[d.Name] = append(out[d.Name], t.Key+"="+t.Value)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		mode   inventory.Mode
		taints map[string][]resourceapi.DeviceTaint
		want   map[string][]string
	}{
		{"static: a MIG device's XID taints that MIG device only", inventory.ModeStaticMIG,
			map[string][]resourceapi.DeviceTaint{"MIG-b": {xid}},
			map[string][]string{"gpu-0-mig-2g10gb-1-2": {"gpu.nvidia.com/xid=94"}}},
		{"static: a GPU's taint goes on all its MIG devices", inventory.ModeStaticMIG,
			map[string][]resourceapi.DeviceTaint{"GPU-toy-a": {lost}, "MIG-b": {xid}},
			map[string][]string{"gpu-0-mig-1g5gb-0-0": {"gpu.nvidia.com/gpu-lost="}, "gpu-0-mig-2g10gb-1-2": {"gpu.nvidia.com/gpu-lost=", "gpu.nvidia.com/xid=94"}}},
		{"dynamic: a MIG device's taint goes on the placement it occupies, and the whole GPU", inventory.ModeDynamicMIG,
			map[string][]resourceapi.DeviceTaint{"MIG-b": {xid}},
			map[string][]string{"gpu-0": {"gpu.nvidia.com/xid=94"}, "gpu-0-mig-2g10gb-1-2": {"gpu.nvidia.com/xid=94"}}},
		{"whole GPUs: a MIG device's taint goes on its GPU", inventory.ModeGPU,
			map[string][]resourceapi.DeviceTaint{"MIG-a": {xid}},
			map[string][]string{"gpu-0": {"gpu.nvidia.com/xid=94"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := taintsOf(tc.mode, tc.taints); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("taints = %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestMIGDevicesInheritTheirParentsTaints(t *testing.T) {
	taint := resourceapi.DeviceTaint{Key: "gpu.nvidia.com/gpu-lost", Effect: resourceapi.DeviceTaintEffectNoExecute,
		TimeAdded: &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	opts := inventory.Options{NodeName: "n", Mode: inventory.ModeDynamicMIG, Taints: map[string][]resourceapi.DeviceTaint{"GPU-toy-b": {taint}}}
	for _, d := range devices(mustSlices(t, toyNode(2), opts)) {
		onGPU1 := strings.HasPrefix(d.Name, "gpu-1")
		if onGPU1 != (len(d.Taints) == 1) {
			t.Errorf("%s has taints %v", d.Name, d.Taints)
		}
		if onGPU1 && !reflect.DeepEqual(d.Taints[0], taint) {
			t.Errorf("%s taint = %v, want %v", d.Name, d.Taints[0], taint)
		}
	}
	if d := devices(mustSlices(t, toyNode(2), inventory.Options{NodeName: "n", Taints: map[string][]resourceapi.DeviceTaint{"GPU-toy-a": {taint}}})); d[0].Taints[0].TimeAdded == taint.TimeAdded {
		t.Error("taints are shared with the caller's options, not copied")
	}
}

func TestSlicesStayWithinAPILimits(t *testing.T) {
	many := func(n int) inventory.Node {
		node := inventory.Node{DriverVersion: "580.95.05"}
		for i := range n {
			g := toyGPU(0)
			g.Minor, g.Index, g.UUID = i, i, fmt.Sprintf("GPU-%d", i)
			node.GPUs = append(node.GPUs, g)
		}
		return node
	}
	taintAll := func(n int) map[string][]resourceapi.DeviceTaint {
		m := map[string][]resourceapi.DeviceTaint{}
		for i := range n {
			m[fmt.Sprintf("GPU-%d", i)] = []resourceapi.DeviceTaint{{Key: "k", Effect: resourceapi.DeviceTaintEffectNone}}
		}
		return m
	}
	for _, tc := range []struct {
		name           string
		node           inventory.Node
		opts           inventory.Options
		counterSlices  int
		devicesPerSlic []int
	}{
		{"130 whole GPUs fill 128 then 2", many(130), inventory.Options{}, 0, []int{128, 2}},
		{"130 tainted whole GPUs fill 64, 64, 2", many(130), inventory.Options{Taints: taintAll(130)}, 0, []int{64, 64, 2}},
		{"9 dynamic MIG GPUs need 2 counter slices (8 sets each) and, as NVIDIA's driver, one slice per GPU",
			many(9), inventory.Options{Mode: inventory.ModeDynamicMIG}, 2, []int{12, 12, 12, 12, 12, 12, 12, 12, 12}},
		{"a node without GPUs publishes one empty slice", inventory.Node{}, inventory.Options{}, 0, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.NodeName = "n"
			sl := mustSlices(t, tc.node, tc.opts)
			counters := 0
			var per []int
			for _, s := range sl {
				if len(s.Spec.SharedCounters) > 0 {
					counters++
					continue
				}
				per = append(per, len(s.Spec.Devices))
			}
			if counters != tc.counterSlices || !reflect.DeepEqual(per, tc.devicesPerSlic) {
				t.Errorf("counter slices %d, devices per slice %v; want %d, %v", counters, per, tc.counterSlices, tc.devicesPerSlic)
			}
			for _, s := range sl {
				if s.Spec.Pool.ResourceSliceCount != int64(len(sl)) {
					t.Errorf("%s: resourceSliceCount %d, want %d", s.Name, s.Spec.Pool.ResourceSliceCount, len(sl))
				}
			}
		})
	}
}

func TestSlicesAreByteStableWhateverTheInputOrder(t *testing.T) {
	base := toyNode(4)
	want := marshal(t, mustSlices(t, base, inventory.Options{NodeName: "n", Mode: inventory.ModeDynamicMIG}))
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		n := toyNode(4)
		r.Shuffle(len(n.GPUs), func(i, j int) { n.GPUs[i], n.GPUs[j] = n.GPUs[j], n.GPUs[i] })
		for i := range n.GPUs {
			ps := n.GPUs[i].MIGProfiles
			r.Shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
			for k := range ps {
				pl := ps[k].Placements
				r.Shuffle(len(pl), func(a, b int) { pl[a], pl[b] = pl[b], pl[a] })
			}
		}
		if got := marshal(t, mustSlices(t, n, inventory.Options{NodeName: "n", Mode: inventory.ModeDynamicMIG})); got != want {
			t.Fatal("shuffled input gave different output")
		}
	}
}

func TestSlicesDoNotModifyTheNode(t *testing.T) {
	n := toyNode(3)
	n.GPUs[0], n.GPUs[2] = n.GPUs[2], n.GPUs[0]
	n.GPUs[1].MIGProfiles[0].Placements[0], n.GPUs[1].MIGProfiles[0].Placements[3] = n.GPUs[1].MIGProfiles[0].Placements[3], n.GPUs[1].MIGProfiles[0].Placements[0]
	before := marshal(t, n)
	mustSlices(t, n, inventory.Options{NodeName: "n", Mode: inventory.ModeDynamicMIG})
	if marshal(t, n) != before {
		t.Error("Slices modified its input")
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInvalidNodesAreErrorsNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*inventory.Node, *inventory.Options)
		want string
	}{
		{"missing node name", func(n *inventory.Node, o *inventory.Options) { o.NodeName = "" }, "nodeName: Required"},
		{"unknown mode", func(n *inventory.Node, o *inventory.Options) { o.Mode = "Shared" }, `mode: Unsupported value: "Shared"`},
		{"driver version with four components", func(n *inventory.Node, o *inventory.Options) { n.DriverVersion = "1.2.3.4" }, "driverVersion: Invalid value"},
		{"non-numeric compute capability", func(n *inventory.Node, o *inventory.Options) { n.GPUs[1].CUDAComputeCapability = "9.x" }, "gpus[1].cudaComputeCapability"},
		{"duplicate minor", func(n *inventory.Node, o *inventory.Options) { n.GPUs[1].Minor = 0 }, "gpus[1].minor: Duplicate value: 0"},
		{"negative placement", func(n *inventory.Node, o *inventory.Options) { n.GPUs[0].MIGProfiles[1].Placements[0].Start = -1 }, "gpus[0].migProfiles[1].placements[0]"},
		{"MIG device of an unknown profile", func(n *inventory.Node, o *inventory.Options) {
			n.GPUs[0].MIGDevices = []inventory.MIGDevice{{GIProfileID: 42}}
		}, "gpus[0].migDevices[0].giProfileID: Not found: 42"},
		{"static MIG device at an impossible placement", func(n *inventory.Node, o *inventory.Options) {
			o.Mode = inventory.ModeStaticMIG
			n.GPUs[0].MIGEnabled = true
			n.GPUs[0].MIGDevices = []inventory.MIGDevice{{GIProfileID: 0, Placement: inventory.Placement{Start: 1000, Size: -5}}}
		}, "gpus[0].migDevices[0].placement: Invalid value"},
		{"static MIG device at a placement its profile does not offer", func(n *inventory.Node, o *inventory.Options) {
			o.Mode = inventory.ModeStaticMIG
			n.GPUs[0].MIGEnabled = true
			n.GPUs[0].MIGDevices = []inventory.MIGDevice{{GIProfileID: 1, Placement: inventory.Placement{Start: 1, Size: 2}}}
		}, "gpus[0].migDevices[0].placement: Invalid value: {\"start\":1,\"size\":2}: not a placement of profile 2g.10gb"},
		{"static MIG devices on the same memory slice", func(n *inventory.Node, o *inventory.Options) {
			o.Mode = inventory.ModeStaticMIG
			n.GPUs[0].MIGEnabled = true
			n.GPUs[0].MIGDevices = []inventory.MIGDevice{
				{GIProfileID: 1, Placement: inventory.Placement{Start: 0, Size: 2}},
				{GIProfileID: 0, Placement: inventory.Placement{Start: 1, Size: 1}},
			}
		}, "gpus[0].migDevices[1].placement: Invalid value: {\"start\":1,\"size\":1}: overlaps gpus[0].migDevices[0] on memory slice 1"},
		{"more than 16 taints", func(n *inventory.Node, o *inventory.Options) {
			ts := make([]resourceapi.DeviceTaint, 17)
			for i := range ts {
				ts[i] = resourceapi.DeviceTaint{Key: fmt.Sprintf("k%d", i), Effect: resourceapi.DeviceTaintEffectNone}
			}
			o.Taints = map[string][]resourceapi.DeviceTaint{"GPU-toy-a": ts}
		}, "devices[gpu-0].taints: Too many: 17"},
		{"taint for a UUID not on the node", func(n *inventory.Node, o *inventory.Options) {
			o.Taints = map[string][]resourceapi.DeviceTaint{"GPU-gone": {{Key: "k", Effect: resourceapi.DeviceTaintEffectNone}}}
		}, `taints[GPU-gone]: Not found: "no GPU or MIG device of the node has this UUID"`},
		{"placement beyond the memory slices a counter set holds", func(n *inventory.Node, o *inventory.Options) {
			n.GPUs[0].MIGProfiles[0].Placements[0] = inventory.Placement{Start: 1 << 62, Size: 1 << 62}
		}, "gpus[0].migProfiles[0].placements[0]: Invalid value"},
		{"product name longer than an attribute may be", func(n *inventory.Node, o *inventory.Options) {
			n.GPUs[1].ProductName = strings.Repeat("x", 65)
		}, "spec.devices[1].attributes[productName].string: Too long"},
		{"profile name without letters", func(n *inventory.Node, o *inventory.Options) { n.GPUs[0].MIGProfiles[0].Name = "+." }, "gpus[0].migProfiles[0].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, o := toyNode(2), inventory.Options{NodeName: "node-a"}
			tc.edit(&n, &o)
			_, err := inventory.Slices(n, o)
			if err == nil || !errors.Is(err, inventory.ErrInvalidNode) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrInvalidNode mentioning %q", err, tc.want)
			}
		})
	}
}

func TestLongNodeNamesGiveValidSliceNames(t *testing.T) {
	node := strings.Repeat("a", 250)
	sl := mustSlices(t, toyNode(1), inventory.Options{NodeName: node})
	if len(sl[0].Name) > 253 || sl[0].Spec.Pool.Name != node {
		t.Errorf("name %d chars, pool %q", len(sl[0].Name), sl[0].Spec.Pool.Name)
	}
}
