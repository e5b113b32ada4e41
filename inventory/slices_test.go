package inventory_test

import (
	"errors"
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
	// Reasoned from toyGPU: 4x1g or 2x2g or the 4g use 40 SMs and 4 copy
	// engines; 2 decoders (2x2g or 4g); 1 JPEG and 1 OFA (the 4g, or the
	// single allowed 1g+me); no encoders anywhere, so no encoder counter.
	want := map[string]int64{"multiprocessors": 40, "copyengines": 4, "decoders": 2, "jpegengines": 1, "ofaengines": 1,
		"memory-slice-0": 1, "memory-slice-1": 1, "memory-slice-2": 1, "memory-slice-3": 1}
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
	wantNames := []string{"gpu-0",
		"gpu-0-mig-1g5gb-0-0", "gpu-0-mig-1g5gb-0-1", "gpu-0-mig-1g5gb-0-2", "gpu-0-mig-1g5gb-0-3",
		"gpu-0-mig-2g10gb-1-0", "gpu-0-mig-2g10gb-1-2", "gpu-0-mig-4g20gb-4-0",
		"gpu-0-mig-1g5gb-me-7-0", "gpu-0-mig-1g5gb-me-7-1", "gpu-0-mig-1g5gb-me-7-2", "gpu-0-mig-1g5gb-me-7-3"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("names = %v\nwant %v", names, wantNames)
	}
	full := devs[0]
	if !reflect.DeepEqual(consumed(full), want) {
		t.Errorf("the whole GPU consumes %v, want everything %v", consumed(full), want)
	}
	mig := devs[5] // 2g.10gb at 0
	if w := map[string]int64{"multiprocessors": 20, "copyengines": 2, "decoders": 1, "memory-slice-0": 1, "memory-slice-1": 1}; !reflect.DeepEqual(consumed(mig), w) {
		t.Errorf("2g.10gb at 0 consumes %v, want %v", consumed(mig), w)
	}
	if str(mig, "type") != "mig" || str(mig, "profile") != "2g.10gb" || str(mig, "parentUUID") != "GPU-toy-a" ||
		str(mig, "uuid") != "<absent>" || str(mig, "resource.kubernetes.io/pciBusID") != "<absent>" ||
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
}

func TestMIGDevicesInheritTheirParentsTaints(t *testing.T) {
	taint := resourceapi.DeviceTaint{Key: "gpu.nvidia.com/gpu-lost", Effect: resourceapi.DeviceTaintEffectNoExecute,
		TimeAdded: &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	opts := inventory.Options{NodeName: "n", Mode: inventory.ModeDynamicMIG, Taints: map[int][]resourceapi.DeviceTaint{1: {taint}}}
	for _, d := range devices(mustSlices(t, toyNode(2), opts)) {
		onGPU1 := strings.HasPrefix(d.Name, "gpu-1")
		if onGPU1 != (len(d.Taints) == 1) {
			t.Errorf("%s has taints %v", d.Name, d.Taints)
		}
		if onGPU1 && !reflect.DeepEqual(d.Taints[0], taint) {
			t.Errorf("%s taint = %v, want %v", d.Name, d.Taints[0], taint)
		}
	}
	if d := devices(mustSlices(t, toyNode(2), inventory.Options{NodeName: "n", Taints: map[int][]resourceapi.DeviceTaint{0: {taint}}})); d[0].Taints[0].TimeAdded == taint.TimeAdded {
		t.Error("taints are shared with the caller's options, not copied")
	}
}

func TestSlicesStayWithinAPILimits(t *testing.T) {
	many := func(n int) inventory.Node {
		node := inventory.Node{DriverVersion: "580.95.05"}
		for i := range n {
			g := toyGPU(0)
			g.Minor, g.Index = i, i
			node.GPUs = append(node.GPUs, g)
		}
		return node
	}
	taintAll := func(n int) map[int][]resourceapi.DeviceTaint {
		m := map[int][]resourceapi.DeviceTaint{}
		for i := range n {
			m[i] = []resourceapi.DeviceTaint{{Key: "k", Effect: resourceapi.DeviceTaintEffectNone}}
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
		{"9 dynamic MIG GPUs need 2 counter slices (8 sets each) and keep a GPU's 12 devices together",
			many(9), inventory.Options{Mode: inventory.ModeDynamicMIG}, 2, []int{60, 48}},
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
			o.Taints = map[int][]resourceapi.DeviceTaint{0: make([]resourceapi.DeviceTaint, 17)}
		}, "taints[0]: Too many: 17"},
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
