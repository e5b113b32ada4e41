package nvml_test

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/inventory"
	"github.com/dralloc/dralloc/inventory/nvml"
	"github.com/dralloc/dralloc/inventory/nvml/nvmlmock"
)

// parityCase is one recorded fixture: a mock server in one of NVIDIA's
// driver configurations and the inventory mode that must publish the same.
type parityCase struct {
	file    string
	mock    string
	dynamic bool // NVIDIA's DynamicMIG feature gate
	mode    inventory.Mode
	// shares is NVIDIA's --consumable-shares (ConsumableShares gate on).
	shares string
	// numa gives the GPUs a sysfs numa_node (testNUMA); listAttrs is
	// NVIDIA's DRAListTypeAttributes gate.
	numa, listAttrs bool
	// fm is NVIDIA's FabricManagerPartitioning gate; the mock's GPUs get
	// module IDs 1..8 (no Fabric Manager runs, so no partitions).
	fm bool
	// migOn enables MIG on every GPU of the mock before discovery.
	migOn bool
	// staticMIG also creates two MIG devices on every GPU (withStaticMIG);
	// giWithoutCI adds a GPU instance with no compute instance, which is
	// no MIG device.
	staticMIG, giWithoutCI bool
}

func parityCases() []parityCase {
	var out []parityCase
	for _, m := range nvmlmock.Names() {
		out = append(out,
			parityCase{file: m + "-default.yaml", mock: m, mode: inventory.ModeStaticMIG},
			parityCase{file: m + "-dynamic-mig.yaml", mock: m, dynamic: true, mode: inventory.ModeDynamicMIG})
	}
	// Ampere cannot switch MIG mode without a reset: with MIG already on,
	// NVIDIA publishes the placements but not the whole GPU.
	out = append(out, parityCase{file: "dgxa100-dynamic-mig-enabled.yaml", mock: "dgxa100", dynamic: true, mode: inventory.ModeDynamicMIG, migOn: true})
	// Hopper switches MIG mode without a reset: with MIG on it still gives
	// itself whole and in placements.
	out = append(out, parityCase{file: "dgxh100-dynamic-mig-enabled.yaml", mock: "dgxh100", dynamic: true, mode: inventory.ModeDynamicMIG, migOn: true})
	// Static MIG: MIG-enabled GPUs give their MIG devices instead of
	// themselves.
	for _, m := range nvmlmock.Names() {
		out = append(out, parityCase{file: m + "-default-static-mig.yaml", mock: m, mode: inventory.ModeStaticMIG, staticMIG: true})
	}
	// What main 95932046 (v0.5.0's features) adds, in every mode: the NUMA
	// node (an int, a list under DRAListTypeAttributes), the module ID,
	// consumable shares with each kind of --consumable-shares.
	for _, m := range nvmlmock.Names() {
		out = append(out,
			parityCase{file: m + "-default-numa-fm.yaml", mock: m, mode: inventory.ModeStaticMIG, numa: true, fm: true},
			parityCase{file: m + "-default-static-mig-numa-list.yaml", mock: m, mode: inventory.ModeStaticMIG, staticMIG: true, numa: true, listAttrs: true},
			parityCase{file: m + "-dynamic-mig-numa-list-fm.yaml", mock: m, dynamic: true, mode: inventory.ModeDynamicMIG, numa: true, listAttrs: true, fm: true},
			parityCase{file: m + "-default-shares-memory.yaml", mock: m, mode: inventory.ModeStaticMIG, shares: "memory"},
			parityCase{file: m + "-default-shares-unlimited.yaml", mock: m, mode: inventory.ModeStaticMIG, shares: "unlimited"},
			parityCase{file: m + "-default-shares-4.yaml", mock: m, mode: inventory.ModeStaticMIG, shares: "4"},
			parityCase{file: m + "-default-static-mig-shares-4.yaml", mock: m, mode: inventory.ModeStaticMIG, staticMIG: true, shares: "4"},
			parityCase{file: m + "-dynamic-mig-shares-memory.yaml", mock: m, dynamic: true, mode: inventory.ModeDynamicMIG, shares: "memory"},
			// Shares N puts a capacity shares on the whole GPU, whose
			// capacity map NVIDIA's counter set is built from (see
			// nvidiaSlices).
			parityCase{file: m + "-dynamic-mig-shares-4.yaml", mock: m, dynamic: true, mode: inventory.ModeDynamicMIG, shares: "4"},
			// A GPU instance without a compute instance is no MIG device:
			// NVIDIA lists MIG device handles, which NVML has only for
			// compute instances.
			parityCase{file: m + "-default-static-mig-gi-without-ci.yaml", mock: m, mode: inventory.ModeStaticMIG, staticMIG: true, giWithoutCI: true})
	}
	return out
}

// testNUMA is the sysfs numa_node of the mock GPUs' PCI bus IDs
// (0000:00:00.0 to 0000:07:00.0): two sockets, except GPU 7, which has no
// NUMA affinity (-1), and GPU 6, which has no sysfs entry at all.
var testNUMA = map[string]int{
	"0000:00:00.0": 0, "0000:01:00.0": 0, "0000:02:00.0": 0, "0000:03:00.0": 0,
	"0000:04:00.0": 1, "0000:05:00.0": 1, "0000:07:00.0": -1,
}

// sysfs writes testNUMA as numa_node files under a new sysfs root, or
// returns an empty root when the case has no NUMA nodes.
func (c parityCase) sysfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if !c.numa {
		return root
	}
	for bus, n := range testNUMA {
		dir := filepath.Join(root, "bus", "pci", "devices", bus)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "numa_node"), []byte(fmt.Sprintf("%d\n", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		writePCIGPU(t, dir)
	}
	return root
}

// config is NVIDIA's configuration for the case.
func (c parityCase) config() nvidiaConfig {
	cfg := nvidiaConfig{dynamic: c.dynamic, shares: c.shares, listAttrs: c.listAttrs, fm: c.fm}
	if c.numa {
		cfg.numa = testNUMA
	}
	return cfg
}

func (c parityCase) server(t *testing.T) *server.Server {
	t.Helper()
	s, err := nvmlmock.New(c.mock)
	if err != nil {
		t.Fatal(err)
	}
	if c.migOn {
		for _, d := range s.Devices {
			d.SetMigMode(gonvml.DEVICE_MIG_ENABLE)
		}
	}
	if c.staticMIG {
		withStaticMIG(t, s, c.giWithoutCI)
	}
	if c.fm {
		// The mocks do not implement nvmlDeviceGetModuleId; an HGX board
		// numbers its modules from 1.
		for i, d := range s.Devices {
			d.(*server.Device).GetModuleIdFunc = func() (int, gonvml.Return) { return i + 1, gonvml.SUCCESS }
		}
	}
	return s
}

// withStaticMIG enables MIG on every GPU of s and creates a 1-slice GPU
// instance at placement 0 and a 3-slice one at placement 4, each with one
// compute instance of the same size. With giWithoutCI it also creates a
// 2-slice GPU instance at placement 2 and no compute instance in it: NVML
// has no MIG device for it (a MIG device is a GPU instance and compute
// instance pair). The MIG device handles are those of migDevices.
func withStaticMIG(t *testing.T, s *server.Server, giWithoutCI bool) {
	t.Helper()
	type instance struct{ profile, ciProfile, start int }
	want := []instance{
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE, gonvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, 0},
		{gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 4},
	}
	if giWithoutCI {
		want = append(want, instance{gonvml.GPU_INSTANCE_PROFILE_2_SLICE, -1, 2})
	}
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		dev.SetMigMode(gonvml.DEVICE_MIG_ENABLE)
		for _, w := range want {
			info, _ := dev.GetGpuInstanceProfileInfo(w.profile)
			pls, _ := dev.GetGpuInstancePossiblePlacements(&info)
			var pl *gonvml.GpuInstancePlacement
			for k := range pls {
				if int(pls[k].Start) == w.start {
					pl = &pls[k]
				}
			}
			if pl == nil {
				t.Fatalf("mock gpu %d: no placement at %d for profile %d", i, w.start, w.profile)
			}
			g, ret := dev.CreateGpuInstanceWithPlacement(&info, pl)
			if ret != gonvml.SUCCESS {
				t.Fatal(ret)
			}
			if w.ciProfile < 0 {
				continue
			}
			gi := g.(*server.GpuInstance)
			ciInfo, ret := gi.GetComputeInstanceProfileInfo(w.ciProfile, gonvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
			if ret != gonvml.SUCCESS {
				t.Fatal(ret)
			}
			if _, ret := gi.CreateComputeInstance(&ciInfo); ret != gonvml.SUCCESS {
				t.Fatal(ret)
			}
		}
		migDevices(i, dev)
	}
}

// migDevices gives the mock GPU dev (of index i) what real NVML derives from
// its GPU and compute instances and the mock lacks: one MIG device handle per
// compute instance (nvmlDeviceGetMigDeviceHandleByIndex; a GPU instance
// without a compute instance has none), answering its GPU instance, compute
// instance and a UUID "MIG-<i>-<GPU instance>" (with "-<compute instance>"
// past the first), and lookups of instances by ID. Instances are taken in
// ID order.
func migDevices(i int, dev *server.Device) {
	gis := slices.SortedFunc(maps.Keys(dev.GpuInstances), func(a, b *server.GpuInstance) int { return cmp.Compare(a.Info.Id, b.Info.Id) })
	var handles []gonvml.Device
	for _, gi := range gis {
		cis := slices.SortedFunc(maps.Keys(gi.ComputeInstances), func(a, b *server.ComputeInstance) int { return cmp.Compare(a.Info.Id, b.Info.Id) })
		for _, ci := range cis {
			giID, ciID := int(gi.Info.Id), int(ci.Info.Id)
			uuid := fmt.Sprintf("MIG-%d-%d", i, giID)
			if ciID != 0 {
				uuid += fmt.Sprintf("-%d", ciID)
			}
			handles = append(handles, &mock.Device{
				GetGpuInstanceIdFunc:     func() (int, gonvml.Return) { return giID, gonvml.SUCCESS },
				GetComputeInstanceIdFunc: func() (int, gonvml.Return) { return ciID, gonvml.SUCCESS },
				GetUUIDFunc:              func() (string, gonvml.Return) { return uuid, gonvml.SUCCESS },
			})
		}
		gi.GetComputeInstanceByIdFunc = func(id int) (gonvml.ComputeInstance, gonvml.Return) {
			for _, ci := range cis {
				if int(ci.Info.Id) == id {
					return ci, gonvml.SUCCESS
				}
			}
			return nil, gonvml.ERROR_NOT_FOUND
		}
	}
	dev.GetGpuInstanceByIdFunc = func(id int) (gonvml.GpuInstance, gonvml.Return) {
		for _, gi := range gis {
			if int(gi.Info.Id) == id {
				return gi, gonvml.SUCCESS
			}
		}
		return nil, gonvml.ERROR_NOT_FOUND
	}
	dev.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
	dev.GetMigDeviceHandleByIndexFunc = func(k int) (gonvml.Device, gonvml.Return) {
		if k < len(handles) {
			return handles[k], gonvml.SUCCESS
		}
		return nil, gonvml.ERROR_NOT_FOUND
	}
}

// TestNVIDIAFixturesAreTheReference checks that the recorded fixtures are
// what the reference model of NVIDIA's driver computes from the mocks (and
// rewrites them with -update).
func TestNVIDIAFixturesAreTheReference(t *testing.T) {
	for _, c := range parityCases() {
		t.Run(c.file, func(t *testing.T) {
			want, err := yaml.Marshal(nvidiaSlices(c.server(t), c.config()))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", "nvidia", c.file)
			if *update {
				if err := os.WriteFile(file, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the reference model; rerun with -update if the model changed on purpose", file)
			}
		})
	}
}

// TestSlicesMatchNVIDIA compares, field by field, what inventory publishes
// for each mock with the recorded fixture of NVIDIA's driver: slice layout,
// device order and names, attributes (names, types, values), capacities,
// counter consumption, counter sets. Attributes NVIDIA does not publish are
// allowed only where doc.go says so (they cannot stop NVIDIA's classes from
// selecting the same devices); none occur on the mocks.
func TestSlicesMatchNVIDIA(t *testing.T) {
	for _, c := range parityCases() {
		t.Run(c.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "nvidia", c.file))
			if err != nil {
				t.Fatal(err)
			}
			var want []nvidiaSlice
			if err := yaml.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			d, err := nvml.Discover(c.server(t), nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil },
				SysfsRoot: c.sysfs(t), FabricManagerPartitioning: c.fm})
			if err != nil {
				t.Fatal(err)
			}
			sl, err := inventory.Slices(d.Node, inventory.Options{NodeName: "dgx", Mode: c.mode,
				ConsumableShares: c.shares, ListAttributes: c.listAttrs, FabricManagerPartitioning: c.fm})
			if err != nil {
				t.Fatal(err)
			}
			for _, diff := range compareSlices(sl, want) {
				t.Error(diff)
			}
		})
	}
}

// The shares counter may be missing from inventory's counter set only while
// no device of NVIDIA's consumes it; any other missing counter is a
// difference.
func TestCompareSlicesOmitsOnlyUnconsumedShares(t *testing.T) {
	one := resourceapi.Counter{Value: resource.MustParse("1")}
	four := resourceapi.Counter{Value: resource.MustParse("4")}
	nvidia := func(consumes map[string]resourceapi.Counter) []nvidiaSlice {
		return []nvidiaSlice{
			{SharedCounters: []resourceapi.CounterSet{{Name: "gpu-0-counter-set", Counters: map[string]resourceapi.Counter{"memory-slice-0": one, "shares": four, "decoders": one}}}},
			{Devices: []resourceapi.Device{{Name: "gpu-0", ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0-counter-set", Counters: consumes}}}}},
		}
	}
	ours := []*resourceapi.ResourceSlice{
		{Spec: resourceapi.ResourceSliceSpec{SharedCounters: []resourceapi.CounterSet{{Name: "gpu-0-counter-set", Counters: map[string]resourceapi.Counter{"memory-slice-0": one}}}}},
		{Spec: resourceapi.ResourceSliceSpec{Devices: []resourceapi.Device{{Name: "gpu-0", ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0-counter-set", Counters: map[string]resourceapi.Counter{"memory-slice-0": one}}}}}}},
	}
	got := compareSlices(ours, nvidia(map[string]resourceapi.Counter{"memory-slice-0": one}))
	want := []string{"slices[0].sharedCounters[0].counters[decoders]: missing, NVIDIA 1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shares consumed by no device: diffs %q, want %q", got, want)
	}
	got = compareSlices(ours, nvidia(map[string]resourceapi.Counter{"memory-slice-0": one, "shares": four}))
	want = []string{
		"slices[0].sharedCounters[0].counters[decoders]: missing, NVIDIA 1",
		"slices[0].sharedCounters[0].counters[shares]: missing, NVIDIA 4",
		"slices[1].devices[0](gpu-0).consumesCounters[0].counters[shares]: missing, NVIDIA 4",
	}
	slices.Sort(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shares consumed by gpu-0: diffs %q, want %q", got, want)
	}
}

// compareSlices lists every difference between got and NVIDIA's want.
func compareSlices(got []*resourceapi.ResourceSlice, want []nvidiaSlice) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	if len(got) != len(want) {
		add("%d slices, NVIDIA publishes %d", len(got), len(want))
		return diffs
	}
	for i := range want {
		g, w := got[i].Spec, want[i]
		p := fmt.Sprintf("slices[%d]", i)
		if len(g.Devices) != len(w.Devices) {
			add("%s: %d devices, NVIDIA %d", p, len(g.Devices), len(w.Devices))
			continue
		}
		for j := range w.Devices {
			diffs = append(diffs, compareDevice(fmt.Sprintf("%s.devices[%d]", p, j), &g.Devices[j], &w.Devices[j])...)
		}
		if len(g.SharedCounters) != len(w.SharedCounters) {
			add("%s: %d counter sets, NVIDIA %d", p, len(g.SharedCounters), len(w.SharedCounters))
			continue
		}
		for j := range w.SharedCounters {
			sp := fmt.Sprintf("%s.sharedCounters[%d]", p, j)
			if g.SharedCounters[j].Name != w.SharedCounters[j].Name {
				add("%s.name: %q, NVIDIA %q", sp, g.SharedCounters[j].Name, w.SharedCounters[j].Name)
			}
			wc := withoutOmittedCounters(w.SharedCounters[j], want)
			diffs = append(diffs, compareCounters(sp+".counters", g.SharedCounters[j].Counters, wc)...)
		}
	}
	return diffs
}

// deliberateExtras are attributes inventory may publish that NVIDIA does
// not; since NVIDIA publishes the NUMA node there are none.
var deliberateExtras = map[resourceapi.QualifiedName]bool{}

// omittedCounters are counters of NVIDIA's counter sets that inventory
// leaves out, as doc.go says: with --consumable-shares=N, shares, which
// NVIDIA's driver puts in the counter set of every GPU published whole and
// partitioned (an alias in GpuInfo.PartCapacities, see nvidiaSlices) and no
// device consumes. A counter nothing consumes cannot change which devices a
// claim gets; where a device of NVIDIA's consumes it, it is compared.
var omittedCounters = map[string]bool{"shares": true}

// withoutOmittedCounters returns the counters of NVIDIA's set cs without the
// omittedCounters that no device of NVIDIA's slices consumes from it.
func withoutOmittedCounters(cs resourceapi.CounterSet, all []nvidiaSlice) map[string]resourceapi.Counter {
	out := map[string]resourceapi.Counter{}
	for name, c := range cs.Counters {
		if !omittedCounters[name] || consumed(cs.Name, name, all) {
			out[name] = c
		}
	}
	return out
}

// consumed says whether a device of all consumes counter name of set.
func consumed(set, name string, all []nvidiaSlice) bool {
	for _, s := range all {
		for _, d := range s.Devices {
			for _, cc := range d.ConsumesCounters {
				if _, ok := cc.Counters[name]; ok && cc.CounterSet == set {
					return true
				}
			}
		}
	}
	return false
}

// capString renders a capacity as it is written (the quantity's canonical
// string, which is what a YAML round trip keeps) with its request policy.
func capString(c resourceapi.DeviceCapacity) string {
	q := func(v *resource.Quantity) string {
		if v == nil {
			return "<nil>"
		}
		return v.String()
	}
	out := q(&c.Value)
	if p := c.RequestPolicy; p != nil {
		out += " default=" + q(p.Default)
		if r := p.ValidRange; r != nil {
			out += fmt.Sprintf(" range=[%s,%s] step %s", q(r.Min), q(r.Max), q(r.Step))
		}
		if p.ValidValues != nil {
			out += fmt.Sprintf(" values=%v", p.ValidValues)
		}
	}
	return out
}

func compareDevice(p string, g, w *resourceapi.Device) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	if g.Name != w.Name {
		add("%s.name: %q, NVIDIA %q", p, g.Name, w.Name)
		return diffs
	}
	p += "(" + w.Name + ")"
	for name, wa := range w.Attributes {
		ga, ok := g.Attributes[name]
		if !ok {
			add("%s.attributes[%s]: missing, NVIDIA %s", p, name, attrString(wa))
		} else if !reflect.DeepEqual(ga, wa) {
			add("%s.attributes[%s]: %s, NVIDIA %s", p, name, attrString(ga), attrString(wa))
		}
	}
	for name, ga := range g.Attributes {
		if _, ok := w.Attributes[name]; !ok && !deliberateExtras[name] {
			add("%s.attributes[%s]: %s, NVIDIA publishes none", p, name, attrString(ga))
		}
	}
	for name, wc := range w.Capacity {
		gc, ok := g.Capacity[name]
		if !ok {
			add("%s.capacity[%s]: missing, NVIDIA %s", p, name, wc.Value.String())
		} else if capString(gc) != capString(wc) {
			add("%s.capacity[%s]: %s, NVIDIA %s", p, name, capString(gc), capString(wc))
		}
	}
	if ptr.Deref(g.AllowMultipleAllocations, false) != ptr.Deref(w.AllowMultipleAllocations, false) {
		add("%s.allowMultipleAllocations: %v, NVIDIA %v", p, ptr.Deref(g.AllowMultipleAllocations, false), ptr.Deref(w.AllowMultipleAllocations, false))
	}
	for name, gc := range g.Capacity {
		if _, ok := w.Capacity[name]; !ok {
			add("%s.capacity[%s]: %s, NVIDIA publishes none", p, name, gc.Value.String())
		}
	}
	if len(g.ConsumesCounters) != len(w.ConsumesCounters) {
		add("%s.consumesCounters: %d entries, NVIDIA %d", p, len(g.ConsumesCounters), len(w.ConsumesCounters))
		return diffs
	}
	for k := range w.ConsumesCounters {
		cp := fmt.Sprintf("%s.consumesCounters[%d]", p, k)
		if g.ConsumesCounters[k].CounterSet != w.ConsumesCounters[k].CounterSet {
			add("%s.counterSet: %q, NVIDIA %q", cp, g.ConsumesCounters[k].CounterSet, w.ConsumesCounters[k].CounterSet)
		}
		diffs = append(diffs, compareCounters(cp+".counters", g.ConsumesCounters[k].Counters, w.ConsumesCounters[k].Counters)...)
	}
	if len(g.Taints) != 0 {
		add("%s.taints: %d, NVIDIA publishes none on a healthy node", p, len(g.Taints))
	}
	return diffs
}

func compareCounters(p string, g, w map[string]resourceapi.Counter) []string {
	var diffs []string
	for name, wc := range w {
		gc, ok := g[name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s[%s]: missing, NVIDIA %s", p, name, wc.Value.String()))
		} else if gc.Value.Cmp(wc.Value) != 0 {
			diffs = append(diffs, fmt.Sprintf("%s[%s]: %s, NVIDIA %s", p, name, gc.Value.String(), wc.Value.String()))
		}
	}
	for name, gc := range g {
		if _, ok := w[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s[%s]: %s, NVIDIA publishes none", p, name, gc.Value.String()))
		}
	}
	return diffs
}

func attrString(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return fmt.Sprintf("string %q", *a.StringValue)
	case a.VersionValue != nil:
		return fmt.Sprintf("version %q", *a.VersionValue)
	case a.IntValue != nil:
		return fmt.Sprintf("int %d", *a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprintf("bool %v", *a.BoolValue)
	}
	return fmt.Sprintf("list %v%v%v%v", a.IntValues, a.StringValues, a.VersionValues, a.BoolValues)
}
