package inventory_test

import (
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/inventory"
)

// A node with one MIG-capable GPU, published as partitionable devices.
func ExampleSlices() {
	node := inventory.Node{
		DriverVersion:     "580.95.05",
		CUDADriverVersion: "13.0",
		GPUs: []inventory.GPU{{
			Minor: 0, UUID: "GPU-0", ProductName: "Example GPU", CUDAComputeCapability: "9.0",
			MemoryBytes: 20 << 30, MIGCapable: true,
			MIGProfiles: []inventory.MIGProfile{
				{Name: "1g.10gb", GIProfileID: 0, SliceCount: 1, InstanceCount: 2, Multiprocessors: 16, MemoryBytes: 10 << 30,
					Placements: []inventory.Placement{{Start: 0, Size: 1}, {Start: 1, Size: 1}}},
				{Name: "2g.20gb", GIProfileID: 1, SliceCount: 2, InstanceCount: 1, Multiprocessors: 32, MemoryBytes: 20 << 30,
					Placements: []inventory.Placement{{Start: 0, Size: 2}}},
			},
		}},
	}
	slices, err := inventory.Slices(node, inventory.Options{NodeName: "node-a", Mode: inventory.ModeDynamicMIG})
	if err != nil {
		panic(err)
	}
	for _, s := range slices {
		fmt.Printf("%s: pool %s, %d of %d\n", s.Name, s.Spec.Pool.Name, len(s.Spec.SharedCounters)+len(s.Spec.Devices), s.Spec.Pool.ResourceSliceCount)
		for _, cs := range s.Spec.SharedCounters {
			fmt.Printf("  counter set %s: %d counters\n", cs.Name, len(cs.Counters))
		}
		for _, d := range s.Spec.Devices {
			fmt.Printf("  device %s driverVersion=%s\n", d.Name, *d.Attributes["driverVersion"].VersionValue)
		}
	}
	// Output:
	// node-a-gpu-nvidia-com-0: pool node-a, 1 of 2
	//   counter set gpu-0-counter-set: 9 counters
	// node-a-gpu-nvidia-com-1: pool node-a, 4 of 2
	//   device gpu-0 driverVersion=580.95.5
	//   device gpu-0-mig-1g10gb-0-0 driverVersion=580.95.5
	//   device gpu-0-mig-1g10gb-0-1 driverVersion=580.95.5
	//   device gpu-0-mig-2g20gb-1-0 driverVersion=580.95.5
}

// ValidateSlice checks any driver's slice, not only those built here.
func ExampleValidateSlice() {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-a-gpu"}, Spec: resourceapi.ResourceSliceSpec{
		Driver:   "gpu.example.com",
		NodeName: ptr.To("node-a"),
		Pool:     resourceapi.ResourcePool{Name: "node-a", ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{
			Name:       "gpu-0-mig-1g.10gb",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"driverVersion": {VersionValue: ptr.To("580.95.05")}},
		}},
	}}
	for _, err := range inventory.ValidateSlice(s) {
		fmt.Println(err.Field)
	}
	// Output:
	// spec.devices[0].name
	// spec.devices[0].attributes[driverVersion].version
}

// ValidatePool checks what only the whole pool shows, such as a device
// consuming a counter set no slice of the pool defines.
func ExampleValidatePool() {
	s := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.example.com", NodeName: ptr.To("node-a"),
		Pool: resourceapi.ResourcePool{Name: "node-a", ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "gpu-0", ConsumesCounters: []resourceapi.DeviceCounterConsumption{{
			CounterSet: "gpu-0-counter-set", Counters: map[string]resourceapi.Counter{}}}}},
	}}
	fmt.Println(inventory.ValidatePool([]*resourceapi.ResourceSlice{s}).ToAggregate())
	// Output:
	// slices[0].spec.devices[0].consumesCounters[0].counterSet: Not found: "gpu-0-counter-set"
}

func ExampleValidateTaint() {
	t := resourceapi.DeviceTaint{Key: inventory.TaintKey(inventory.ConditionGPULost), Effect: "PreferNoSchedule"}
	fmt.Println(inventory.ValidateTaint(t, field.NewPath("taints").Index(0)).ToAggregate())
	// Output:
	// taints[0].effect: Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"
}

func ExampleNormalizeVersion() {
	for _, v := range []string{"580.95.05", "12.4", "1.2.3.4"} {
		fmt.Println(inventory.NormalizeVersion(v))
	}
	// Output:
	// 580.95.5 <nil>
	// 12.4.0 <nil>
	//  version "1.2.3.4" has more than three components
}

func ExampleGPUDeviceName() {
	fmt.Println(inventory.GPUDeviceName(3))
	// Output: gpu-3
}

func ExampleMIGDeviceName() {
	fmt.Println(inventory.MIGDeviceName(3, "1g.10gb", 19, 6))
	fmt.Println(inventory.MIGDeviceName(3, "1g.10gb+me", 20, 6))
	// Output:
	// gpu-3-mig-1g10gb-19-6
	// gpu-3-mig-1g10gb-me-20-6
}

func ExampleCounterSetName() {
	fmt.Println(inventory.CounterSetName(3), inventory.MemorySliceCounter(0))
	// Output: gpu-3-counter-set memory-slice-0
}

func ExampleMemorySliceCounter() {
	fmt.Println(inventory.MemorySliceCounter(7))
	// Output: memory-slice-7
}

// A static MIG device names the memory slices it holds as capacities.
func ExampleMemorySliceCapacity() {
	fmt.Println(inventory.MemorySliceCapacity(7))
	// Output: memorySlice7
}

func ExampleTaintKey() {
	fmt.Println(inventory.TaintKey(inventory.ConditionECCUncorrectable))
	// Output: gpu.nvidia.com/ecc-uncorrectable
}

// A GPU reports XID 48 (double-bit ECC) once while it runs hot. The
// thermal taint, informational, clears 10 minutes (the default clear time)
// after the slowdown ends; the XID taint stops scheduling until the GPU is
// reset and reported recovered.
func ExampleHealthPolicy() {
	var policy inventory.HealthPolicy
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var state inventory.HealthState
	state = policy.Observe(state, inventory.Observation{Time: start, XIDs: []int{48}, ThermalSlowdown: true})
	state = policy.Observe(state, inventory.Observation{Time: start.Add(5 * time.Minute), ThermalSlowdown: true})
	show := func(at time.Duration) {
		fmt.Printf("after %v:", at)
		for _, t := range policy.Taints(state, start.Add(at)) {
			fmt.Printf(" %s=%s:%s", t.Key, t.Value, t.Effect)
		}
		fmt.Println()
	}
	show(5 * time.Minute)
	show(15 * time.Minute)
	state = policy.Observe(state, inventory.Observation{Time: start.Add(time.Hour), Recovered: true})
	show(time.Hour)
	// Output:
	// after 5m0s: gpu.nvidia.com/thermal-slowdown=:None gpu.nvidia.com/xid=48:NoSchedule
	// after 15m0s: gpu.nvidia.com/xid=48:NoSchedule
	// after 1h0m0s:
}

func ExampleHealthPolicy_Effect() {
	var p inventory.HealthPolicy
	fmt.Println(p.Effect(inventory.ConditionXID, "13"), p.Effect(inventory.ConditionXID, "48"), p.Effect(inventory.ConditionXID, "79"))
	// Output: None NoSchedule NoSchedule
}

func ExampleHealthPolicy_Observe() {
	var p inventory.HealthPolicy
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := p.Observe(inventory.HealthState{}, inventory.Observation{Time: t0, Lost: true})
	s = p.Observe(s, inventory.Observation{Time: t0.Add(time.Minute), Lost: true})
	a := s.Active[0]
	fmt.Println(a.Condition, a.Since.Format(time.Kitchen), a.LastSeen.Format(time.Kitchen))
	// Output: gpu-lost 12:00PM 12:01PM
}

// Taints go into Options.Taints by GPU UUID; every device of that GPU, its
// MIG devices included, carries them.
func ExampleHealthPolicy_Taints() {
	var p inventory.HealthPolicy
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := p.Observe(inventory.HealthState{}, inventory.Observation{Time: t0, RowRemapFailed: true})
	node := inventory.Node{GPUs: []inventory.GPU{{Minor: 0, UUID: "GPU-0", MemoryBytes: 1 << 30}}}
	slices, _ := inventory.Slices(node, inventory.Options{NodeName: "n", Taints: map[string][]resourceapi.DeviceTaint{"GPU-0": p.Taints(s, t0)}})
	t := slices[0].Spec.Devices[0].Taints[0]
	fmt.Println(t.Key, t.Effect, t.TimeAdded.UTC().Format(time.RFC3339))
	// Output: gpu.nvidia.com/row-remap-failed NoSchedule 2026-11-29T12:00:00Z
}

func ExampleNewTemplate() {
	node := inventory.Node{GPUs: []inventory.GPU{{Minor: 0, UUID: "GPU-1234", ProductName: "Example GPU", MemoryBytes: 1 << 30}}}
	t := inventory.NewTemplate("example", "1x Example GPU", inventory.ModeGPU, node)
	fmt.Printf("%q %q\n", t.Node.GPUs[0].UUID, t.Node.GPUs[0].ProductName)
	// Output: "" "Example GPU"
}

func ExampleTemplate_MarshalYAML() {
	t := inventory.NewTemplate("example", "", inventory.ModeGPU, inventory.Node{GPUs: []inventory.GPU{{Minor: 1, MemoryBytes: 1 << 30}}})
	y, _ := t.MarshalYAML()
	fmt.Print(string(y))
	// Output:
	// mode: GPU
	// name: example
	// node:
	//   cudaDriverVersion: ""
	//   driverVersion: ""
	//   gpus:
	//   - architecture: ""
	//     brand: ""
	//     cudaComputeCapability: ""
	//     index: 0
	//     memoryBytes: 1073741824
	//     minor: 1
	//     productName: ""
}

func ExampleParseTemplate() {
	t, err := inventory.ParseTemplate([]byte(`
name: small
mode: GPU
node:
  driverVersion: 580.95.05
  gpus:
  - {minor: 0, productName: Example GPU, memoryBytes: 1073741824}
  - {minor: 1, productName: Example GPU, memoryBytes: 1073741824}
`))
	fmt.Println(t.Name, len(t.Node.GPUs), err)
	// Output: small 2 <nil>
}

// The slices of a node that does not exist yet, for scale-from-zero.
func ExampleTemplate_Slices() {
	t, _ := inventory.Profile("dgxh100")
	slices, _ := t.Slices("future-node-1", 0)
	devices := 0
	for _, s := range slices {
		devices += len(s.Spec.Devices)
	}
	fmt.Println(t.Mode, len(slices), "slices,", devices, "devices")
	// Output: DynamicMIG 9 slices, 232 devices
}

func ExampleProfileNames() {
	fmt.Println(inventory.ProfileNames())
	// Output: [dgxa100 dgxb200 dgxh100 dgxh200]
}

func ExampleProfile() {
	t, _ := inventory.Profile("dgxb200")
	g := t.Node.GPUs[0]
	fmt.Println(len(t.Node.GPUs), g.ProductName, g.MemoryBytes>>30, "GiB,", len(g.MIGProfiles), "MIG profiles")
	// Output: 8 NVIDIA B200 180GB HBM3e 180 GiB, 7 MIG profiles
}

// The IMEX channel and daemon devices of NVIDIA's compute-domain plugin.
func ExampleComputeDomainSlices() {
	slices, _ := inventory.ComputeDomainSlices(inventory.Options{NodeName: "gb200-1"})
	for _, d := range slices[0].Spec.Devices {
		fmt.Println(slices[0].Spec.Driver, d.Name, *d.Attributes["type"].StringValue)
	}
	// Output:
	// compute-domain.nvidia.com channel-0 channel
	// compute-domain.nvidia.com daemon-0 daemon
}

// A node that does not exist yet, with the identities and labels a real one
// of its type would have.
func ExampleTemplate_Instantiate() {
	t, _ := inventory.Profile("dgxa100")
	in, _ := t.Instantiate("a100-1")
	fmt.Println(in.Node.Labels["nvidia.com/gpu.product"], in.Node.Labels["nvidia.com/gpu.count"])
	d := in.Slices[1].Spec.Devices[0]
	fmt.Println(d.Name, *d.Attributes["productName"].StringValue, *d.Attributes["resource.kubernetes.io/pciBusID"].StringValue)
	fmt.Println(len(*d.Attributes["parentUUID"].StringValue))
	// Output:
	// NVIDIA-A100-SXM4-40GB 8
	// gpu-0-mig-1g10gb-9-0 NVIDIA A100-SXM4-40GB 0000:00:00.0
	// 40
}

// A user's own instance type, recorded from `kubectl get resourceslices -o
// yaml` of one node.
func ExampleRecordTemplate() {
	live, _ := inventory.ComputeDomainSlices(inventory.Options{NodeName: "gb200-1"})
	t, err := inventory.RecordTemplate("gb200", nil, live)
	if err != nil {
		panic(err)
	}
	in, _ := t.Instantiate("gb200-new")
	fmt.Println(in.Slices[0].Name, in.Slices[0].Spec.Pool.Name, *in.Slices[0].Spec.NodeName)
	// Output: gb200-new-compute-domain-nvidia-com-0 gb200-new gb200-new
}

func ExampleParseResourceSlices() {
	sl, err := inventory.ParseResourceSlices([]byte(`apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {name: node-1-gpu.nvidia.com-x7k2p}
  spec: {driver: gpu.nvidia.com, nodeName: node-1, pool: {name: node-1, generation: 3, resourceSliceCount: 1}}
`))
	fmt.Println(len(sl), sl[0].Name, err)
	// Output: 1 node-1-gpu.nvidia.com-x7k2p <nil>
}
