package nvml_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/inventory"
	"github.com/dralloc/dralloc/inventory/nvml"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// sickDevice answers every health call with a problem: 3 uncorrectable ECC
// errors, pages pending retirement, a row remap pending, hardware thermal
// slowdown, and of links 0-3 link 1 down (link 4 and up: not supported).
func sickDevice() *mock.Device {
	return &mock.Device{
		GetTotalEccErrorsFunc: func(typ gonvml.MemoryErrorType, counter gonvml.EccCounterType) (uint64, gonvml.Return) {
			if typ != gonvml.MEMORY_ERROR_TYPE_UNCORRECTED || counter != gonvml.VOLATILE_ECC {
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			return 3, gonvml.SUCCESS
		},
		GetRetiredPagesPendingStatusFunc: func() (gonvml.EnableState, gonvml.Return) { return gonvml.FEATURE_ENABLED, gonvml.SUCCESS },
		GetRemappedRowsFunc:              func() (int, int, bool, bool, gonvml.Return) { return 0, 1, true, false, gonvml.SUCCESS },
		GetCurrentClocksEventReasonsFunc: func() (uint64, gonvml.Return) { return gonvml.ClocksThrottleReasonHwThermalSlowdown, gonvml.SUCCESS },
		GetNvLinkStateFunc: func(link int) (gonvml.EnableState, gonvml.Return) {
			switch {
			case link == 1:
				return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
			case link < 4:
				return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
			default:
				return 0, gonvml.ERROR_NOT_SUPPORTED
			}
		},
	}
}

func TestReadHealth(t *testing.T) {
	lost := func() (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_GPU_IS_LOST }
	for _, tc := range []struct {
		name    string
		dev     func() *mock.Device
		want    inventory.Observation
		unknown []string
	}{
		{"every signal read", sickDevice, inventory.Observation{Time: now, UncorrectableECCErrors: 3, RetiredPagesPending: true,
			RowRemapPending: true, ThermalSlowdown: true, NVLinksDown: 1}, nil},
		{"a GPU without these features is healthy", func() *mock.Device {
			ns := func() (uint64, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
			return &mock.Device{
				GetTotalEccErrorsFunc:            func(gonvml.MemoryErrorType, gonvml.EccCounterType) (uint64, gonvml.Return) { return ns() },
				GetRetiredPagesPendingStatusFunc: func() (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
				GetRemappedRowsFunc:              func() (int, int, bool, bool, gonvml.Return) { return 0, 0, false, false, gonvml.ERROR_NOT_SUPPORTED },
				GetCurrentClocksEventReasonsFunc: ns,
				GetNvLinkStateFunc:               func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
			}
		}, inventory.Observation{Time: now}, nil},
		{"a lost GPU is lost, not unknown", func() *mock.Device {
			d := sickDevice()
			d.GetRetiredPagesPendingStatusFunc = lost
			return d
		}, inventory.Observation{Time: now, UncorrectableECCErrors: 3, RowRemapPending: true, ThermalSlowdown: true, NVLinksDown: 1, Lost: true}, nil},
		{"calls the device does not implement are unknown and healthy", func() *mock.Device { return &mock.Device{} },
			inventory.Observation{Time: now}, []string{"uncorrectableECCErrors", "retiredPagesPending", "rowRemap", "thermalSlowdown", "nvlink[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, unknown := nvml.ReadHealth(tc.dev(), now)
			if !reflect.DeepEqual(obs, tc.want) {
				t.Errorf("observation %+v, want %+v", obs, tc.want)
			}
			if len(unknown) != len(tc.unknown) {
				t.Fatalf("unknown %v, want %v", unknown, tc.unknown)
			}
			for i, u := range unknown {
				if !strings.HasPrefix(u, tc.unknown[i]+": not implemented") {
					t.Errorf("unknown[%d] = %q, want %s", i, u, tc.unknown[i])
				}
			}
		})
	}
}

func TestReadHealthFeedsThePolicy(t *testing.T) {
	obs, _ := nvml.ReadHealth(sickDevice(), now)
	var p inventory.HealthPolicy
	var keys []string
	for _, tn := range p.Taints(p.Observe(inventory.HealthState{}, obs), now) {
		keys = append(keys, tn.Key+":"+string(tn.Effect))
	}
	want := []string{"gpu.nvidia.com/ecc-uncorrectable:NoSchedule", "gpu.nvidia.com/nvlink-degraded:NoSchedule",
		"gpu.nvidia.com/retired-pages-pending:NoSchedule", "gpu.nvidia.com/row-remap-pending:NoSchedule", "gpu.nvidia.com/thermal-slowdown:None"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("taints %v, want %v", keys, want)
	}
}

// xidServer is a mock with two GPUs whose event set delivers the given XIDs
// (on GPU 1), then times out.
func xidServer(xids ...uint64) (*mock.Interface, *[]uint64) {
	gpu := func(uuid string, registered *[]uint64) *mock.Device {
		return &mock.Device{
			GetUUIDFunc: func() (string, gonvml.Return) { return uuid, gonvml.SUCCESS },
			RegisterEventsFunc: func(types uint64, _ gonvml.EventSet) gonvml.Return {
				*registered = append(*registered, types)
				return gonvml.SUCCESS
			},
		}
	}
	var registered []uint64
	devs := []gonvml.Device{gpu("GPU-0", &registered), gpu("GPU-1", &registered)}
	queue := xids
	set := &mock.EventSet{WaitFunc: func(uint32) (gonvml.EventData, gonvml.Return) {
		if len(queue) == 0 {
			return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
		}
		x := queue[0]
		queue = queue[1:]
		return gonvml.EventData{Device: devs[1], EventType: gonvml.EventTypeXidCriticalError, EventData: x,
			GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF}, gonvml.SUCCESS
	}}
	return &mock.Interface{
		EventSetCreateFunc:         func() (gonvml.EventSet, gonvml.Return) { return set, gonvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, gonvml.Return) { return len(devs), gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (gonvml.Device, gonvml.Return) { return devs[i], gonvml.SUCCESS },
	}, &registered
}

func TestRegisterAndWaitXIDs(t *testing.T) {
	lib, registered := xidServer(48, 79)
	set, err := nvml.RegisterXIDs(lib)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*registered, []uint64{gonvml.EventTypeXidCriticalError, gonvml.EventTypeXidCriticalError}) {
		t.Errorf("registered %v, want XID events on both GPUs", *registered)
	}
	events, err := nvml.WaitXIDs(set, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []nvml.XIDEvent{{GPUUUID: "GPU-1", XID: 48, GPUInstanceID: 0xFFFFFFFF, ComputeInstanceID: 0xFFFFFFFF},
		{GPUUUID: "GPU-1", XID: 79, GPUInstanceID: 0xFFFFFFFF, ComputeInstanceID: 0xFFFFFFFF}}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events %+v, want %+v", events, want)
	}
	if events, err := nvml.WaitXIDs(set, time.Millisecond); err != nil || len(events) != 0 {
		t.Errorf("a quiet wait = %v, %v; want nothing", events, err)
	}
}

func TestRegisterXIDsWithoutEventSupportIsAnError(t *testing.T) {
	if _, err := nvml.RegisterXIDs(&mock.Interface{}); !errors.Is(err, nvml.ErrNVML) || !strings.Contains(err.Error(), "not implemented") {
		t.Errorf("err = %v", err)
	}
}

// migNode is a GPU with two MIG devices, on GPU instances 1 and 2, and a
// second GPU without MIG.
func migNode() inventory.Node {
	return inventory.Node{GPUs: []inventory.GPU{
		{Minor: 0, UUID: "GPU-a", MemoryBytes: 40 << 30, MIGCapable: true, MIGEnabled: true,
			MIGProfiles: []inventory.MIGProfile{{Name: "3g.20gb", GIProfileID: 2, SliceCount: 3, InstanceCount: 2, MemoryBytes: 20 << 30,
				Placements: []inventory.Placement{{Start: 0, Size: 4}, {Start: 4, Size: 4}}}},
			MIGDevices: []inventory.MIGDevice{
				{UUID: "MIG-a1", GIProfileID: 2, GPUInstanceID: 1, Placement: inventory.Placement{Start: 0, Size: 4}},
				{UUID: "MIG-a2", GIProfileID: 2, GPUInstanceID: 2, Placement: inventory.Placement{Start: 4, Size: 4}},
			}},
		{Minor: 1, UUID: "GPU-b", MemoryBytes: 40 << 30},
	}}
}

func TestXIDEventDeviceUUID(t *testing.T) {
	for _, tc := range []struct {
		name    string
		event   nvml.XIDEvent
		want    string
		wantErr string
	}{
		{"an XID outside any instance belongs to the GPU", nvml.XIDEvent{GPUUUID: "GPU-a", XID: 79, GPUInstanceID: nvml.WholeGPU, ComputeInstanceID: nvml.WholeGPU}, "GPU-a", ""},
		{"an XID in a GPU instance belongs to that MIG device", nvml.XIDEvent{GPUUUID: "GPU-a", XID: 94, GPUInstanceID: 2, ComputeInstanceID: 0}, "MIG-a2", ""},
		{"an XID on a GPU without MIG belongs to the GPU", nvml.XIDEvent{GPUUUID: "GPU-b", XID: 48, GPUInstanceID: nvml.WholeGPU}, "GPU-b", ""},
		{"an XID for a GPU the node does not have is an error naming it", nvml.XIDEvent{GPUUUID: "GPU-gone", XID: 48, GPUInstanceID: nvml.WholeGPU}, "",
			"unknown device: XID 48 on GPU GPU-gone: no GPU of the node has this UUID"},
		{"an XID in an instance the node does not know is an error naming it", nvml.XIDEvent{GPUUUID: "GPU-a", XID: 94, GPUInstanceID: 5}, "",
			"unknown device: XID 94 on GPU GPU-a, GPU instance 5: no MIG device of the node has this instance"},
		{"an XID without GPU UUID is an error", nvml.XIDEvent{XID: 31, GPUInstanceID: nvml.WholeGPU}, "", "unknown device: XID 31 from a GPU whose UUID is unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.event.DeviceUUID(migNode())
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, nvml.ErrUnknownDevice) {
					t.Fatalf("err = %v, want %q wrapping ErrUnknownDevice", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("DeviceUUID = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// From XID events to taints on the published devices: a GPU-level XID
// taints the GPU's every MIG device, an instance's XID that one only.
func TestXIDEventsTaintTheDevicesTheyHappenedOn(t *testing.T) {
	node := migNode()
	events := []nvml.XIDEvent{
		{GPUUUID: "GPU-a", XID: 94, GPUInstanceID: 1, ComputeInstanceID: 0},
		{GPUUUID: "GPU-b", XID: 48, GPUInstanceID: nvml.WholeGPU},
		{GPUUUID: "GPU-gone", XID: 79, GPUInstanceID: nvml.WholeGPU},
	}
	obs, err := nvml.Observations(node, events, now)
	if !errors.Is(err, nvml.ErrUnknownDevice) || !strings.Contains(err.Error(), "GPU-gone") {
		t.Errorf("err = %v, want the unknown GPU named", err)
	}
	var policy inventory.HealthPolicy
	taints := map[string][]resourceapi.DeviceTaint{}
	for uuid, o := range obs {
		taints[uuid] = policy.Taints(policy.Observe(inventory.HealthState{}, o), now)
	}
	sl, err := inventory.Slices(node, inventory.Options{NodeName: "n", Mode: inventory.ModeStaticMIG, Taints: taints})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, s := range sl {
		for _, d := range s.Spec.Devices {
			for _, t := range d.Taints {
				got[d.Name] = append(got[d.Name], t.Key+"="+t.Value+":"+string(t.Effect))
			}
		}
	}
	want := map[string][]string{
		"gpu-0-mig-3g20gb-2-0": {"gpu.nvidia.com/xid=94:NoSchedule"},
		"gpu-1":                {"gpu.nvidia.com/xid=48:NoSchedule"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("taints = %v\nwant %v", got, want)
	}
	// The same XID outside any instance taints both MIG devices.
	obs, _ = nvml.Observations(node, []nvml.XIDEvent{{GPUUUID: "GPU-a", XID: 94, GPUInstanceID: nvml.WholeGPU}}, now)
	ts := policy.Taints(policy.Observe(inventory.HealthState{}, obs["GPU-a"]), now)
	sl, _ = inventory.Slices(node, inventory.Options{NodeName: "n", Mode: inventory.ModeStaticMIG, Taints: map[string][]resourceapi.DeviceTaint{"GPU-a": ts}})
	for _, d := range sl[0].Spec.Devices {
		if strings.HasPrefix(d.Name, "gpu-0-") != (len(d.Taints) == 1) {
			t.Errorf("%s taints %v", d.Name, d.Taints)
		}
	}
}
