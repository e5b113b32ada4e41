// Command driver walks through what a DRA driver for NVIDIA GPUs does with
// dralloc, on one of go-nvml's mock DGX servers (no NVIDIA library needed):
//
//	go run ./examples/driver --mock dgxh100
//
// It publishes (discovers the GPUs, builds the ResourceSlices NVIDIA's driver
// would publish in dynamic MIG mode and validates them), turns an XID event
// into taints on the devices of the GPU it happened on and republishes, and
// for an allocated claim lists the devices to prepare with their
// configurations, reports the device ready in status.devices and sees the
// scheduler's binding decision change from Wait to Bind. With
// --consumable-shares (NVIDIA's flag of that name, main 95932046 / v0.5.0)
// the devices are published shareable and the prepare step checks the
// configuration as NVIDIA's driver does under consumable shares.
//
// Imports: of dralloc only its public packages (inventory, inventory/claim, inventory/nvml and its mocks); nothing imports an example.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dralloc/dralloc/inventory"
	"github.com/dralloc/dralloc/inventory/claim"
	"github.com/dralloc/dralloc/inventory/nvml"
	"github.com/dralloc/dralloc/inventory/nvml/nvmlmock"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("driver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mock := fs.String("mock", "dgxh100", "the go-nvml mock server to drive: "+strings.Join(nvmlmock.Names(), ", "))
	node := fs.String("node", "dgx-1", "node name, also the pool name")
	shares := fs.String("consumable-shares", inventory.SharesDisabled, "NVIDIA's --consumable-shares: disabled, memory, unlimited or a positive integer")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed; asking for it is no failure
	} else if err != nil {
		return err
	}
	lib, err := nvmlmock.New(*mock)
	if err != nil {
		return err
	}
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return fmt.Errorf("initialising NVML: %w", ret)
	}
	defer lib.Shutdown()
	d, err := nvml.Discover(lib, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }})
	if err != nil {
		return err
	}

	// 1. Publish.
	opts := inventory.Options{NodeName: *node, Mode: inventory.ModeDynamicMIG, ConsumableShares: *shares}
	slices, err := publish(d.Node, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "publish: %d slices, %d devices, %d counter sets\n", len(slices), count(slices, false), countSets(slices))
	if d := slices[1].Spec.Devices[0]; d.AllowMultipleAllocations != nil {
		mem := d.Capacity[inventory.CapMemory]
		fmt.Fprintf(stdout, "publish: %s shareable, memory %s in steps of %s", d.Name, mem.Value.String(), mem.RequestPolicy.ValidRange.Step.String())
		if sh, ok := d.Capacity[inventory.CapShares]; ok {
			fmt.Fprintf(stdout, ", %s shares", sh.Value.String())
		}
		fmt.Fprintln(stdout)
	}

	// 2. Health: an XID 48 (double-bit ECC) outside any MIG instance of the
	// fourth GPU, and one for a GPU this node does not have.
	gpu := d.Node.GPUs[3]
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	obs, err := nvml.Observations(d.Node, []nvml.XIDEvent{
		{GPUUUID: gpu.UUID, XID: 48, GPUInstanceID: nvml.WholeGPU, ComputeInstanceID: nvml.WholeGPU},
		{GPUUUID: "GPU-00000000-0000-0000-0000-000000000000", XID: 79, GPUInstanceID: nvml.WholeGPU},
	}, now)
	if err != nil {
		fmt.Fprintln(stdout, "health: ignored:", err)
	}
	var policy inventory.HealthPolicy
	states := map[string]inventory.HealthState{}
	opts.Taints = map[string][]resourceapi.DeviceTaint{}
	for uuid, o := range obs {
		states[uuid] = policy.Observe(states[uuid], o)
		opts.Taints[uuid] = policy.Taints(states[uuid], now)
	}
	opts.Generation = 2
	if slices, err = publish(d.Node, opts); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "health: %d devices of %s tainted %s\n", count(slices, true), inventory.GPUDeviceName(gpu.Minor), firstTaint(slices))

	// 3. Prepare a claim the scheduler allocated: a 1g.10gb of the first
	// GPU whose pod binds once the driver reports it ready.
	c := allocatedClaim(*node, inventory.MIGDeviceName(0, "1g.10gb", gonvml.GPU_INSTANCE_PROFILE_1_SLICE, 0), now)
	devs, err := claim.Prepare(c, inventory.DefaultDriver)
	if err != nil {
		return err
	}
	for _, dev := range devs {
		var cfgs []string
		for _, cfg := range dev.Configs {
			cfgs = append(cfgs, string(cfg.Source)+" "+string(cfg.Opaque.Parameters.Raw))
		}
		fmt.Fprintf(stdout, "prepare: %s with %s\n", dev.Result.Device, strings.Join(cfgs, ", then "))
		sel, err := claim.SelectConfig(dev, inventory.TypeMIG, claim.SelectOptions{ConsumableShares: opts.ConsumableShares != "" && opts.ConsumableShares != inventory.SharesDisabled})
		if err != nil {
			return err
		}
		applied := "no sharing"
		if sel.Sharing != nil {
			applied = sel.Sharing.Strategy
		}
		fmt.Fprintf(stdout, "prepare: NVIDIA's driver applies %s %s from %s\n", sel.Kind, applied, sel.Source.Source)
	}
	v, err := claim.CheckBinding([]*resourceapi.ResourceClaim{c}, now.Add(time.Second), claim.BindingOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "binding: %s (%s)\n", v.Decision, v.Reason)
	st := claim.DeviceStatus(devs[0].Result)
	apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "MIGDeviceCreated",
		LastTransitionTime: metav1.Time{Time: now}})
	if c, err = claim.SetDeviceStatus(c, st); err != nil {
		return err
	}
	v, err = claim.CheckBinding([]*resourceapi.ResourceClaim{c}, now.Add(2*time.Second), claim.BindingOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "binding: %s\n", v.Decision)
	return nil
}

// publish builds the slices and checks them as a whole pool.
func publish(node inventory.Node, opts inventory.Options) ([]*resourceapi.ResourceSlice, error) {
	slices, err := inventory.Slices(node, opts)
	if err != nil {
		return nil, err
	}
	if errs := inventory.ValidatePool(slices); len(errs) > 0 {
		return nil, errors.Join(errs.ToAggregate().Errors()...)
	}
	return slices, nil
}

func count(slices []*resourceapi.ResourceSlice, tainted bool) int {
	n := 0
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			if !tainted || len(d.Taints) > 0 {
				n++
			}
		}
	}
	return n
}

func countSets(slices []*resourceapi.ResourceSlice) int {
	n := 0
	for _, s := range slices {
		n += len(s.Spec.SharedCounters)
	}
	return n
}

func firstTaint(slices []*resourceapi.ResourceSlice) string {
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			if len(d.Taints) > 0 {
				t := d.Taints[0]
				return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
			}
		}
	}
	return "(none)"
}

// allocatedClaim is a claim as the scheduler leaves it: one device with a
// Ready binding condition, the class's configuration and the claim's.
func allocatedClaim(node, device string, at time.Time) *resourceapi.ResourceClaim {
	cfg := func(src resourceapi.AllocationConfigSource, params string) resourceapi.DeviceAllocationConfiguration {
		return resourceapi.DeviceAllocationConfiguration{Source: src, DeviceConfiguration: resourceapi.DeviceConfiguration{
			Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: inventory.DefaultDriver, Parameters: runtime.RawExtension{Raw: []byte(params)}}}}
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "inference"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			AllocationTimestamp: &metav1.Time{Time: at},
			Devices: resourceapi.DeviceAllocationResult{
				Results: []resourceapi.DeviceRequestAllocationResult{{Request: "mig", Driver: inventory.DefaultDriver, Pool: node, Device: device,
					BindingConditions: []string{"Ready"}, BindingFailureConditions: []string{"Failed"}}},
				Config: []resourceapi.DeviceAllocationConfiguration{
					cfg(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"TimeSlicing"}}`),
					cfg(resourceapi.AllocationConfigSourceClass, `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig"}`),
				},
			},
		}},
	}
}
