package nvml_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/inventory"
	"github.com/dralloc/dralloc/inventory/nvml"
	"github.com/dralloc/dralloc/inventory/nvml/nvmlmock"
)

// profileFigures are a GPU-instance profile's figures as the mock publishes
// them in go-nvml v0.13.4-1 pkg/nvml/mock/gpus.
type profileFigures struct {
	name                        string
	placements                  int
	sm, ce, dec, enc, jpeg, ofa int64
	memMiB                      int64
}

// mockFigures are the published figures of one mock server.
type mockFigures struct {
	mock, product, arch, cc, driver, cuda string
	memMiB                                int64
	profiles                              map[int]profileFigures
	memorySlices                          int
	// counters are the engine counters of a GPU's counter set, reasoned in
	// the comments of TestDiscoverMockServers.
	counters map[string]int64
	// sample names a few devices that must exist in dynamic MIG mode.
	sample []string
}

var mocks = []mockFigures{
	{
		mock: "dgxa100", product: "Mock NVIDIA A100-SXM4-40GB", arch: "Ampere", cc: "8.0", driver: "550.54.15", cuda: "12.4", memMiB: 40960,
		profiles: map[int]profileFigures{
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE:      {"1g.5gb", 7, 14, 1, 0, 0, 0, 0, 4864},
			gonvml.GPU_INSTANCE_PROFILE_2_SLICE:      {"2g.10gb", 3, 28, 2, 1, 0, 0, 0, 9856},
			gonvml.GPU_INSTANCE_PROFILE_3_SLICE:      {"3g.20gb", 2, 42, 3, 2, 0, 0, 0, 19968},
			gonvml.GPU_INSTANCE_PROFILE_4_SLICE:      {"4g.20gb", 1, 56, 4, 2, 0, 0, 0, 19968},
			gonvml.GPU_INSTANCE_PROFILE_7_SLICE:      {"7g.40gb", 1, 98, 7, 5, 0, 1, 1, 40192},
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1: {"1g.5gb+me", 7, 14, 1, 1, 0, 1, 1, 4864},
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2: {"1g.10gb", 4, 14, 1, 1, 0, 0, 0, 9856},
		},
		// The A100 mock places in eighths: 7g covers slices 0-7.
		memorySlices: 8,
		// NVIDIA's rule, the largest figure of any profile: the 7g's 98
		// SMs, 7 copy engines, 5 decoders, 1 JPEG, 1 OFA and 40192 MiB;
		// no profile has encoders, so 0.
		counters: map[string]int64{"multiprocessors": 98, "copy-engines": 7, "decoders": 5, "encoders": 0, "jpeg-engines": 1, "ofa-engines": 1, "memory": 40192 << 20},
		sample:   []string{"gpu-0", "gpu-7-mig-7g40gb-4-0", "gpu-3-mig-1g5gb-me-7-6", "gpu-3-mig-1g10gb-9-6", "gpu-0-mig-3g20gb-2-4"},
	},
	{
		mock: "dgxh100", product: "NVIDIA H100 80GB HBM3", arch: "Hopper", cc: "9.0", driver: "550.54.15", cuda: "12.4", memMiB: 81920,
		profiles: map[int]profileFigures{
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE:      {"1g.10gb", 7, 16, 1, 1, 0, 0, 0, 10240},
			gonvml.GPU_INSTANCE_PROFILE_2_SLICE:      {"2g.20gb", 3, 32, 2, 1, 0, 0, 0, 20480},
			gonvml.GPU_INSTANCE_PROFILE_3_SLICE:      {"3g.40gb", 2, 48, 3, 2, 0, 0, 0, 40960},
			gonvml.GPU_INSTANCE_PROFILE_4_SLICE:      {"4g.40gb", 1, 64, 4, 2, 0, 0, 0, 40960},
			gonvml.GPU_INSTANCE_PROFILE_7_SLICE:      {"7g.80gb", 1, 112, 7, 5, 0, 0, 0, 81920},
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1: {"1g.10gb+me", 7, 16, 1, 1, 0, 1, 1, 10240},
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2: {"1g.20gb", 7, 16, 1, 1, 0, 0, 0, 20480},
		},
		memorySlices: 7,
		// The 7g's 112 SMs, 7 copy engines, 5 decoders (so at most five
		// 1g.10gb together, as on NVIDIA's driver) and 81920 MiB; JPEG and
		// OFA 1 (1g.10gb+me); no encoders.
		counters: map[string]int64{"multiprocessors": 112, "copy-engines": 7, "decoders": 5, "encoders": 0, "jpeg-engines": 1, "ofa-engines": 1, "memory": 81920 << 20},
		sample:   []string{"gpu-0", "gpu-7-mig-7g80gb-4-0", "gpu-3-mig-1g10gb-me-7-6", "gpu-3-mig-1g20gb-9-6", "gpu-0-mig-3g40gb-2-4"},
	},
	{
		mock: "dgxh200", product: "NVIDIA H200 141GB HBM3e", arch: "Hopper", cc: "9.0", driver: "550.54.15", cuda: "12.4", memMiB: 144384,
		profiles: map[int]profileFigures{
			// go-nvlib names by eighths of the GPU's 141 GiB, rounded: the
			// mock's 18432 MiB is more than an eighth, so two eighths, 35.
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE:      {"1g.35gb", 7, 16, 1, 1, 0, 0, 0, 18432},
			gonvml.GPU_INSTANCE_PROFILE_2_SLICE:      {"2g.35gb", 3, 32, 2, 1, 0, 0, 0, 35840},
			gonvml.GPU_INSTANCE_PROFILE_3_SLICE:      {"3g.88gb", 2, 48, 3, 2, 0, 0, 0, 72704}, // 5/8 of 141
			gonvml.GPU_INSTANCE_PROFILE_4_SLICE:      {"4g.88gb", 1, 64, 4, 2, 0, 0, 0, 72704},
			gonvml.GPU_INSTANCE_PROFILE_7_SLICE:      {"7g.141gb", 1, 112, 7, 5, 0, 0, 0, 144384},
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1: {"1g.35gb+me", 7, 16, 1, 1, 0, 1, 1, 18432},
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2: {"1g.35gb", 7, 16, 1, 1, 0, 0, 0, 35840},
		},
		memorySlices: 7,
		counters:     map[string]int64{"multiprocessors": 112, "copy-engines": 7, "decoders": 5, "encoders": 0, "jpeg-engines": 1, "ofa-engines": 1, "memory": 144384 << 20},
		sample:       []string{"gpu-0", "gpu-7-mig-7g141gb-4-0", "gpu-3-mig-1g35gb-me-7-6", "gpu-3-mig-1g35gb-9-6"},
	},
	{
		mock: "dgxb200", product: "NVIDIA B200 180GB HBM3e", arch: "Blackwell", cc: "10.0", driver: "560.28.03", cuda: "12.6", memMiB: 184320,
		profiles: map[int]profileFigures{
			// 23552 MiB is more than an eighth of 180 GiB: two eighths, 45.
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE:      {"1g.45gb", 7, 18, 1, 1, 0, 0, 0, 23552},
			gonvml.GPU_INSTANCE_PROFILE_2_SLICE:      {"2g.45gb", 3, 36, 2, 2, 1, 1, 1, 46080},
			gonvml.GPU_INSTANCE_PROFILE_3_SLICE:      {"3g.90gb", 2, 54, 3, 3, 2, 2, 2, 92160},
			gonvml.GPU_INSTANCE_PROFILE_4_SLICE:      {"4g.90gb", 1, 72, 4, 4, 2, 2, 2, 92160},
			gonvml.GPU_INSTANCE_PROFILE_7_SLICE:      {"7g.180gb", 1, 126, 7, 7, 4, 4, 4, 184320},
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1: {"1g.45gb+me", 7, 18, 1, 1, 1, 1, 1, 23552},
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2: {"1g.45gb", 7, 18, 1, 1, 0, 0, 0, 46080},
		},
		memorySlices: 7,
		// The 7g's figures: 126 SMs, 7 copy engines, 7 decoders, 4
		// encoders, 4 JPEG and 4 OFA (so two 3g and a 1g.45gb+me, needing
		// 5, do not fit, as on NVIDIA's driver), 184320 MiB.
		counters: map[string]int64{"multiprocessors": 126, "copy-engines": 7, "decoders": 7, "encoders": 4, "jpeg-engines": 4, "ofa-engines": 4, "memory": 184320 << 20},
		sample:   []string{"gpu-0", "gpu-7-mig-7g180gb-4-0", "gpu-3-mig-1g45gb-me-7-6", "gpu-3-mig-1g45gb-9-6"},
	},
}

func TestDiscoverMockServers(t *testing.T) {
	for _, m := range mocks {
		t.Run(m.mock, func(t *testing.T) {
			d := discoverMock(t, m.mock)
			if len(d.Node.GPUs) != 8 {
				t.Fatalf("%d GPUs, want 8", len(d.Node.GPUs))
			}
			if d.Node.DriverVersion != m.driver || d.Node.CUDADriverVersion != m.cuda {
				t.Errorf("versions %q %q, want %q %q", d.Node.DriverVersion, d.Node.CUDADriverVersion, m.driver, m.cuda)
			}
			// The mocks implement everything discovery reads; the NUMA node they do not model
			// is not supported, so absent rather than unknown.
			if len(d.Unknown) != 0 {
				t.Errorf("unknown = %v, want none", d.Unknown)
			}
			for i, g := range d.Node.GPUs {
				if g.Index != i || g.Minor != i || g.ProductName != m.product || g.Architecture != m.arch || g.Brand != "Nvidia" ||
					g.CUDAComputeCapability != m.cc || g.MemoryBytes != m.memMiB<<20 || !g.MIGCapable || g.MIGEnabled ||
					g.PCIBusID != fmt.Sprintf("0000:%02x:00.0", i) || !strings.HasPrefix(g.UUID, "GPU-") || g.NUMANode != nil {
					t.Errorf("gpu %d = %+v", i, g)
				}
				got := map[int]profileFigures{}
				for _, p := range g.MIGProfiles {
					got[p.GIProfileID] = profileFigures{p.Name, len(p.Placements), p.Multiprocessors, p.CopyEngines, p.Decoders,
						p.Encoders, p.JPEGEngines, p.OFAEngines, p.MemoryBytes >> 20}
				}
				if !reflect.DeepEqual(got, m.profiles) {
					t.Errorf("gpu %d profiles:\n got %v\nwant %v", i, got, m.profiles)
				}
			}
			perGPU := 1
			for _, p := range m.profiles {
				perGPU += p.placements
			}
			for _, mode := range []inventory.Mode{inventory.ModeGPU, inventory.ModeStaticMIG, inventory.ModeDynamicMIG} {
				sl, err := inventory.Slices(d.Node, inventory.Options{NodeName: "dgx-1", Mode: mode})
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				for _, s := range sl {
					if errs := inventory.ValidateSlice(s); len(errs) > 0 {
						t.Errorf("%s: %s: %v", mode, s.Name, errs)
					}
				}
				if errs := inventory.ValidatePool(sl); len(errs) > 0 {
					t.Errorf("%s: %v", mode, errs)
				}
				var devs []resourceapi.Device
				var sets []resourceapi.CounterSet
				for _, s := range sl {
					devs = append(devs, s.Spec.Devices...)
					sets = append(sets, s.Spec.SharedCounters...)
				}
				// An Ampere GPU with MIG off cannot switch it on without a
				// reset, so in dynamic MIG mode it is published whole.
				ampere := m.arch == "Ampere"
				want := 8
				if mode == inventory.ModeDynamicMIG && !ampere {
					want = 8 * perGPU
				}
				if len(devs) != want {
					t.Errorf("%s: %d devices, want %d", mode, len(devs), want)
				}
				if mode != inventory.ModeDynamicMIG || ampere {
					continue
				}
				if len(sets) != 8 {
					t.Fatalf("%d counter sets, want 8", len(sets))
				}
				wantCounters := map[string]int64{}
				for k, v := range m.counters {
					wantCounters[k] = v
				}
				for i := range m.memorySlices {
					wantCounters[inventory.MemorySliceCounter(i)] = 1
				}
				gotCounters := map[string]int64{}
				for k, v := range sets[5].Counters {
					gotCounters[k] = v.Value.Value()
				}
				if sets[5].Name != "gpu-5-counter-set" || !reflect.DeepEqual(gotCounters, wantCounters) {
					t.Errorf("counter set %s:\n got %v\nwant %v", sets[5].Name, gotCounters, wantCounters)
				}
				names := map[string]resourceapi.Device{}
				for _, dv := range devs {
					names[dv.Name] = dv
				}
				for _, n := range m.sample {
					if _, ok := names[n]; !ok {
						t.Errorf("no device %s", n)
					}
				}
				full := names["gpu-2"]
				if *full.Attributes["uuid"].StringValue != d.Node.GPUs[2].UUID || *full.Attributes["type"].StringValue != "gpu" {
					t.Errorf("gpu-2 attributes %v", full.Attributes)
				}
				mig := names[m.sample[1]]
				if *mig.Attributes["parentUUID"].StringValue != d.Node.GPUs[7].UUID || *mig.Attributes["type"].StringValue != "mig" ||
					*mig.Attributes["profile"].StringValue != m.profiles[gonvml.GPU_INSTANCE_PROFILE_7_SLICE].name {
					t.Errorf("%s attributes %v", mig.Name, mig.Attributes)
				}
			}
		})
	}
}

func TestDiscoverTreatsNotSupportedAsAbsent(t *testing.T) {
	s, _ := nvmlmock.New("dgxh100")
	dev := s.Devices[0].(*server.Device)
	dev.GetMigModeFunc = func() (int, int, gonvml.Return) { return 0, 0, gonvml.ERROR_NOT_SUPPORTED }
	dev.GetBrandFunc = func() (gonvml.BrandType, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	g := d.Node.GPUs[0]
	if g.MIGCapable || g.MIGProfiles != nil || g.Brand != "" {
		t.Errorf("unsupported MIG and brand were not absent: %+v", g)
	}
	for _, u := range d.Unknown {
		if strings.HasPrefix(u, "gpus[0].") {
			t.Errorf("not supported was reported as unknown: %s", u)
		}
	}
	sl, err := inventory.Slices(d.Node, inventory.Options{NodeName: "n", Mode: inventory.ModeDynamicMIG})
	if err != nil {
		t.Fatal(err)
	}
	// One slice per GPU, as NVIDIA's driver publishes in dynamic MIG mode.
	if d0 := sl[1].Spec.Devices[0]; len(sl[1].Spec.Devices) != 1 || d0.Name != "gpu-0" || d0.ConsumesCounters != nil || sl[2].Spec.Devices[0].Name != "gpu-1" {
		t.Errorf("a GPU without MIG should be published whole in its own slice, got %d devices, %s then %s",
			len(sl[1].Spec.Devices), d0.Name, sl[2].Spec.Devices[0].Name)
	}
}

func TestDiscoverRecoversCallsTheMockDoesNotImplement(t *testing.T) {
	s, _ := nvmlmock.New("dgxb200")
	s.Devices[1].(*server.Device).GetNameFunc = nil
	s.Devices[1].(*server.Device).GetMemoryInfoFunc = nil
	s.SystemGetCudaDriverVersionFunc = nil
	d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Node.GPUs) != 8 || d.Node.GPUs[1].ProductName != "" || d.Node.GPUs[1].MemoryBytes != 0 || d.Node.CUDADriverVersion != "" {
		t.Errorf("GPU 1 = %+v", d.Node.GPUs[1])
	}
	for _, want := range []string{"gpus[1].productName: not implemented", "gpus[1].memoryBytes: not implemented", "cudaDriverVersion: not implemented"} {
		found := false
		for _, u := range d.Unknown {
			found = found || strings.HasPrefix(u, want)
		}
		if !found {
			t.Errorf("unknown %v lacks %q", d.Unknown, want)
		}
	}
	if _, err := inventory.Slices(d.Node, inventory.Options{NodeName: "n"}); err != nil {
		t.Errorf("a partly unknown node must still publish: %v", err)
	}
}

func TestDiscoverSkipsGPUsWithoutMinorNumber(t *testing.T) {
	s, _ := nvmlmock.New("dgxh200")
	s.Devices[3].(*server.Device).GetMinorNumberFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_GPU_IS_LOST }
	d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Node.GPUs) != 7 {
		t.Errorf("%d GPUs, want 7", len(d.Node.GPUs))
	}
	if !strings.Contains(strings.Join(d.Unknown, "\n"), "gpus[3]: skipped, no minor number: ERROR_GPU_IS_LOST") {
		t.Errorf("unknown = %v", d.Unknown)
	}
}

func TestDiscoverFailsWhenDevicesCannotBeCounted(t *testing.T) {
	s, _ := nvmlmock.New("dgxh100")
	s.DeviceGetCountFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_UNINITIALIZED }
	if _, err := nvml.Discover(s, nvml.Options{}); !errors.Is(err, nvml.ErrNVML) || !strings.Contains(err.Error(), "ERROR_UNINITIALIZED") {
		t.Errorf("err = %v", err)
	}
	if _, err := nvml.Discover(nil, nvml.Options{}); !errors.Is(err, nvml.ErrNVML) {
		t.Errorf("nil library: err = %v", err)
	}
}

func TestDiscoverNamesFullProfilesAfterTheGPUMemory(t *testing.T) {
	// The 80 GB A100's full profile has 80384 MiB, 78.5 GiB; NVIDIA calls it 7g.80gb.
	s := dgxa100.NewWithGPUs(gpus.A100_SXM4_80GB)
	d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range d.Node.GPUs[0].MIGProfiles {
		names = append(names, p.Name)
	}
	want := []string{"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.10gb+me", "1g.20gb"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
}

func TestDiscoverStaticMIGDevices(t *testing.T) {
	s, _ := nvmlmock.New("dgxa100")
	dev := s.Devices[0].(*server.Device)
	dev.SetMigMode(gonvml.DEVICE_MIG_ENABLE)
	create := func(id, ciID int, start, size uint32) {
		info, _ := dev.GetGpuInstanceProfileInfo(id)
		gi, ret := dev.CreateGpuInstanceWithPlacement(&info, &gonvml.GpuInstancePlacement{Start: start, Size: size})
		if ret != gonvml.SUCCESS {
			t.Fatal(ret)
		}
		ci, _ := gi.GetComputeInstanceProfileInfo(ciID, gonvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if _, ret := gi.CreateComputeInstance(&ci); ret != gonvml.SUCCESS {
			t.Fatal(ret)
		}
	}
	create(gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 4, 4) // GPU instance 0, MIG-0-0
	create(gonvml.GPU_INSTANCE_PROFILE_1_SLICE, gonvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, 0, 1) // GPU instance 1, MIG-0-1
	migDevices(0, dev)
	d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	g := d.Node.GPUs[0]
	want := []inventory.MIGDevice{
		{UUID: "MIG-0-1", GIProfileID: gonvml.GPU_INSTANCE_PROFILE_1_SLICE, GPUInstanceID: 1, Placement: inventory.Placement{Start: 0, Size: 1}},
		{UUID: "MIG-0-0", GIProfileID: gonvml.GPU_INSTANCE_PROFILE_3_SLICE, GPUInstanceID: 0, Placement: inventory.Placement{Start: 4, Size: 4}},
	}
	if !g.MIGEnabled || !reflect.DeepEqual(g.MIGDevices, want) {
		t.Fatalf("MIG devices %+v, want %+v", g.MIGDevices, want)
	}
	sl, err := inventory.Slices(d.Node, inventory.Options{NodeName: "n", Mode: inventory.ModeStaticMIG})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, dv := range sl[0].Spec.Devices {
		names = append(names, dv.Name+"/"+*dv.Attributes["uuid"].StringValue)
	}
	if names[0] != "gpu-0-mig-1g5gb-0-0/MIG-0-1" || names[1] != "gpu-0-mig-3g20gb-2-4/MIG-0-0" || len(names) != 9 {
		t.Errorf("devices %v: want the two MIG devices of GPU 0, then the 7 other GPUs whole", names)
	}
}

// A GPU instance without a compute instance has no MIG device handle in
// NVML, and NVIDIA's driver, which lists MIG devices by handle, publishes
// nothing for it: neither does inventory, so no claim is allocated a MIG
// device that cannot be prepared. Its memory slices stay taken.
func TestDiscoverListsNoMIGDeviceForAGPUInstanceWithoutComputeInstance(t *testing.T) {
	s, _ := nvmlmock.New("dgxh100")
	withStaticMIG(t, s, true) // 1g at 0 and 3g at 4 with compute instances, 2g at 2 without
	d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Unknown) != 0 {
		t.Errorf("unknown = %v", d.Unknown)
	}
	// GPU instances are numbered in creation order: 1g is 0, 3g is 1, 2g is
	// 2. The H100 mock's 3g placement at 4 is 3 memory slices wide.
	want := []inventory.MIGDevice{
		{UUID: "MIG-0-0", GIProfileID: gonvml.GPU_INSTANCE_PROFILE_1_SLICE, GPUInstanceID: 0, Placement: inventory.Placement{Start: 0, Size: 1}},
		{UUID: "MIG-0-1", GIProfileID: gonvml.GPU_INSTANCE_PROFILE_3_SLICE, GPUInstanceID: 1, Placement: inventory.Placement{Start: 4, Size: 3}},
	}
	if got := d.Node.GPUs[0].MIGDevices; !reflect.DeepEqual(got, want) {
		t.Fatalf("MIG devices %+v, want %+v", got, want)
	}
	sl, err := inventory.Slices(d.Node, inventory.Options{NodeName: "n", Mode: inventory.ModeStaticMIG})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, dv := range sl[0].Spec.Devices {
		if strings.HasPrefix(dv.Name, "gpu-0-") {
			names = append(names, dv.Name)
		}
	}
	if want := []string{"gpu-0-mig-1g10gb-0-0", "gpu-0-mig-3g40gb-2-4"}; !reflect.DeepEqual(names, want) {
		t.Errorf("GPU 0 publishes %v, want %v", names, want)
	}
}

func TestDiscoverReadsPCIeRootFromSysfs(t *testing.T) {
	sys := t.TempDir()
	dev := filepath.Join(sys, "devices", "pci0000:3a", "0000:3a:00.0", "0000:00:00.0")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	links := filepath.Join(sys, "bus", "pci", "devices")
	if err := os.MkdirAll(links, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dev, filepath.Join(links, "0000:00:00.0")); err != nil {
		t.Fatal(err)
	}
	s, _ := nvmlmock.New("dgxh100")
	// NVML prints an eight-digit PCI domain; it is shortened to four.
	s.Devices[0].(*server.Device).GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		var p gonvml.PciInfo
		for i, c := range "00000000:00:00.0" {
			p.BusId[i] = int8(c)
		}
		return p, gonvml.SUCCESS
	}
	d, err := nvml.Discover(s, nvml.Options{SysfsRoot: sys})
	if err != nil {
		t.Fatal(err)
	}
	if g := d.Node.GPUs[0]; g.PCIBusID != "0000:00:00.0" || g.PCIeRoot != "pci0000:3a" {
		t.Errorf("bus %q root %q", g.PCIBusID, g.PCIeRoot)
	}
	if g := d.Node.GPUs[1]; g.PCIeRoot != "" || !strings.Contains(strings.Join(d.Unknown, "\n"), "gpus[1].pcieRoot: resolving PCIe root") {
		t.Errorf("GPU 1 has no sysfs entry: root %q, unknown %v", g.PCIeRoot, d.Unknown)
	}
}

// The NUMA node comes from sysfs numa_node, as NVIDIA's driver reads it
// through nvpci, not from NVML: -1 (no affinity) and a missing file leave it
// out, the second reported as unknown.
func TestDiscoverReadsTheNUMANodeFromSysfs(t *testing.T) {
	sys := t.TempDir()
	for bus, node := range map[string]string{"0000:05:00.0": "1\n", "0000:04:00.0": "-1\n"} {
		dir := filepath.Join(sys, "bus", "pci", "devices", bus)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "numa_node"), []byte(node), 0o644); err != nil {
			t.Fatal(err)
		}
		writePCIGPU(t, dir)
	}
	s, _ := nvmlmock.New("dgxh100")
	// NVML's own answer must not be used.
	s.Devices[6].(*server.Device).GetNumaNodeIdFunc = func() (int, gonvml.Return) { return 1, gonvml.SUCCESS }
	d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, SysfsRoot: sys})
	if err != nil {
		t.Fatal(err)
	}
	if n := d.Node.GPUs[5].NUMANode; n == nil || *n != 1 {
		t.Errorf("GPU 5 NUMA node = %v, want 1", n)
	}
	if d.Node.GPUs[4].NUMANode != nil || d.Node.GPUs[6].NUMANode != nil {
		t.Errorf("GPU 4 (-1) NUMA node = %v, GPU 6 (no sysfs) %v: want absent", d.Node.GPUs[4].NUMANode, d.Node.GPUs[6].NUMANode)
	}
	u := strings.Join(d.Unknown, "\n")
	if strings.Contains(u, "gpus[4].numaNode") || !strings.Contains(u, "gpus[6].numaNode: reading NUMA node") {
		t.Errorf("unknown = %v, want gpus[6].numaNode only", d.Unknown)
	}
}

// The module ID is read only when asked for, as NVIDIA reads it only with
// its FabricManagerPartitioning gate.
func TestDiscoverReadsTheModuleIDForFabricManagerPartitioning(t *testing.T) {
	s, _ := nvmlmock.New("dgxh100")
	for i, dev := range s.Devices {
		dev.(*server.Device).GetModuleIdFunc = func() (int, gonvml.Return) { return i + 1, gonvml.SUCCESS }
	}
	opts := nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }}
	d, err := nvml.Discover(s, opts)
	if err != nil || d.Node.GPUs[3].ModuleID != 0 {
		t.Fatalf("without the gate: module ID %d, err %v", d.Node.GPUs[3].ModuleID, err)
	}
	opts.FabricManagerPartitioning = true
	d, err = nvml.Discover(s, opts)
	if err != nil || d.Node.GPUs[3].ModuleID != 4 {
		t.Fatalf("with the gate: module ID %d, err %v", d.Node.GPUs[3].ModuleID, err)
	}
}

// writePCIGPU makes the sysfs PCI device dir an NVIDIA 3D controller, as
// nvpci requires before it reads the NUMA node.
func writePCIGPU(t *testing.T, dir string) {
	t.Helper()
	for f, v := range map[string]string{"vendor": "0x10de\n", "class": "0x030200\n"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A PCI function that is not an NVIDIA GPU has no NUMA node to publish and
// is not unknown either: nvpci answers nothing for it.
func TestDiscoverPublishesNoNUMANodeForAFunctionThatIsNotAnNVIDIAGPU(t *testing.T) {
	sys := t.TempDir()
	dir := filepath.Join(sys, "bus", "pci", "devices", "0000:00:00.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"vendor": "0x8086\n", "class": "0x060000\n", "numa_node": "0\n"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := nvmlmock.New("dgxh100")
	d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, SysfsRoot: sys})
	if err != nil {
		t.Fatal(err)
	}
	if d.Node.GPUs[0].NUMANode != nil || strings.Contains(strings.Join(d.Unknown, "\n"), "gpus[0].numaNode") {
		t.Errorf("NUMA node %v, unknown %v: want none, not unknown", d.Node.GPUs[0].NUMANode, d.Unknown)
	}
}
