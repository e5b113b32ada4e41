package nvml_test

import (
	"fmt"
	"strings"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/dralloc/dralloc/inventory"
	"github.com/dralloc/dralloc/inventory/nvml"
	"github.com/dralloc/dralloc/inventory/nvml/nvmlmock"
)

// Discover a DGX H100 mock and publish it with dynamic MIG. On a real node,
// pass gonvml.New() instead of the mock; either way the library is
// initialised first and shut down after.
func ExampleDiscover() {
	lib, _ := nvmlmock.New("dgxh100")
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		panic(ret)
	}
	defer lib.Shutdown()
	d, err := nvml.Discover(lib, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }})
	if err != nil {
		panic(err)
	}
	g := d.Node.GPUs[0]
	fmt.Println(len(d.Node.GPUs), "x", g.ProductName, g.Architecture, g.MemoryBytes>>30, "GiB")
	var names []string
	for _, p := range g.MIGProfiles {
		names = append(names, p.Name)
	}
	fmt.Println(strings.Join(names, " "))
	fmt.Println(len(d.Unknown), "values unknown") // the mock implements every call discovery makes
	slices, _ := inventory.Slices(d.Node, inventory.Options{NodeName: "dgx-1", Mode: inventory.ModeDynamicMIG})
	fmt.Println(len(slices), "slices")
	// Output:
	// 8 x NVIDIA H100 80GB HBM3 Hopper 80 GiB
	// 1g.10gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb 1g.10gb+me 1g.20gb
	// 0 values unknown
	// 9 slices
}

// ReadHealth polls one GPU; HealthPolicy turns the reading into taints.
func ExampleReadHealth() {
	dev := &mock.Device{
		GetTotalEccErrorsFunc: func(gonvml.MemoryErrorType, gonvml.EccCounterType) (uint64, gonvml.Return) {
			return 1, gonvml.SUCCESS
		},
		GetRetiredPagesPendingStatusFunc: func() (gonvml.EnableState, gonvml.Return) { return gonvml.FEATURE_DISABLED, gonvml.SUCCESS },
		GetRemappedRowsFunc:              func() (int, int, bool, bool, gonvml.Return) { return 0, 0, false, false, gonvml.SUCCESS },
		GetCurrentClocksEventReasonsFunc: func() (uint64, gonvml.Return) { return 0, gonvml.SUCCESS },
		GetNvLinkStateFunc:               func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	obs, unknown := nvml.ReadHealth(dev, now)
	var policy inventory.HealthPolicy
	for _, t := range policy.Taints(policy.Observe(inventory.HealthState{}, obs), now) {
		fmt.Println(t.Key, t.Effect)
	}
	fmt.Println(len(unknown), "unknown")
	// Output:
	// gpu.nvidia.com/ecc-uncorrectable NoSchedule
	// 0 unknown
}

// RegisterXIDs and WaitXIDs read XID events, here from a mock with one GPU
// that reports XID 79 once.
func ExampleWaitXIDs() {
	gpu := &mock.Device{
		GetUUIDFunc:        func() (string, gonvml.Return) { return "GPU-1234", gonvml.SUCCESS },
		RegisterEventsFunc: func(uint64, gonvml.EventSet) gonvml.Return { return gonvml.SUCCESS },
	}
	sent := false
	set := &mock.EventSet{WaitFunc: func(uint32) (gonvml.EventData, gonvml.Return) {
		if sent {
			return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
		}
		sent = true
		return gonvml.EventData{Device: gpu, EventType: gonvml.EventTypeXidCriticalError, EventData: 79}, gonvml.SUCCESS
	}}
	lib := &mock.Interface{
		EventSetCreateFunc:         func() (gonvml.EventSet, gonvml.Return) { return set, gonvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, gonvml.Return) { return 1, gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(int) (gonvml.Device, gonvml.Return) { return gpu, gonvml.SUCCESS },
	}
	events, err := nvml.RegisterXIDs(lib)
	if err != nil {
		panic(err)
	}
	xids, _ := nvml.WaitXIDs(events, time.Second)
	fmt.Printf("%+v\n", xids)
	// Output: [{GPUUUID:GPU-1234 XID:79 GPUInstanceID:0 ComputeInstanceID:0}]
}

func ExampleRegisterXIDs() {
	// Without event support the error says what failed.
	_, err := nvml.RegisterXIDs(&mock.Interface{})
	fmt.Println(err != nil)
	// Output: true
}

// An XID inside a MIG instance belongs to that MIG device; one outside any
// instance to the whole GPU, and so to all its devices.
func ExampleXIDEvent_DeviceUUID() {
	node := inventory.Node{GPUs: []inventory.GPU{{UUID: "GPU-a", MIGEnabled: true,
		MIGDevices: []inventory.MIGDevice{{UUID: "MIG-a1", GPUInstanceID: 1}}}}}
	for _, e := range []nvml.XIDEvent{
		{GPUUUID: "GPU-a", XID: 94, GPUInstanceID: 1},
		{GPUUUID: "GPU-a", XID: 79, GPUInstanceID: nvml.WholeGPU},
		{GPUUUID: "GPU-x", XID: 48, GPUInstanceID: nvml.WholeGPU},
	} {
		fmt.Println(e.DeviceUUID(node))
	}
	// Output:
	// MIG-a1 <nil>
	// GPU-a <nil>
	//  unknown device: XID 48 on GPU GPU-x: no GPU of the node has this UUID
}

// Events from WaitXIDs become one observation per device for HealthPolicy.
func ExampleObservations() {
	node := inventory.Node{GPUs: []inventory.GPU{{UUID: "GPU-a"}, {UUID: "GPU-b"}}}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	obs, err := nvml.Observations(node, []nvml.XIDEvent{
		{GPUUUID: "GPU-b", XID: 48, GPUInstanceID: nvml.WholeGPU},
		{GPUUUID: "GPU-b", XID: 63, GPUInstanceID: nvml.WholeGPU},
	}, now)
	fmt.Println(len(obs), obs["GPU-b"].XIDs, err)
	// Output: 1 [48 63] <nil>
}
