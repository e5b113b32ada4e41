// Command discover prints, as YAML, the ResourceSlices this machine's NVIDIA
// GPUs would publish in the gpu.nvidia.com schema — read from the real NVML
// library, or from one of go-nvml's mock DGX servers with --mock, which needs
// no NVIDIA library at all:
//
//	go run ./examples/discover --mock dgxh100 --mode dynamic-mig
//
// The flags --consumable-shares, --list-attributes and
// --fabric-manager-partitioning publish what NVIDIA's driver publishes with
// its --consumable-shares flag and its DRAListTypeAttributes and
// FabricManagerPartitioning feature gates (main 95932046, v0.5.0's features).
//
// Values that could not be read are listed on stderr. Without --mock on a
// machine without NVML it says so and exits with status 1.
//
// Imports: of dralloc only its public packages (inventory, inventory/nvml and its mocks); nothing imports an example.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/inventory"
	"github.com/dralloc/dralloc/inventory/nvml"
	"github.com/dralloc/dralloc/inventory/nvml/nvmlmock"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "discover:", err)
		os.Exit(1)
	}
}

var modes = map[string]inventory.Mode{
	"gpu":         inventory.ModeGPU,
	"static-mig":  inventory.ModeStaticMIG,
	"dynamic-mig": inventory.ModeDynamicMIG,
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("discover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mock := fs.String("mock", "", "read a go-nvml mock server instead of the real NVML: "+strings.Join(nvmlmock.Names(), ", "))
	node := fs.String("node", "", "node name, also the pool name (default: $NODE_NAME, else the host name)")
	mode := fs.String("mode", "gpu", "how to publish the GPUs: gpu, static-mig or dynamic-mig")
	shares := fs.String("consumable-shares", inventory.SharesDisabled, "share devices by consumable capacity as NVIDIA's --consumable-shares: disabled, memory, unlimited or a positive integer")
	listAttrs := fs.Bool("list-attributes", false, "publish numaNode as a list, as NVIDIA's DRAListTypeAttributes gate")
	fm := fs.Bool("fabric-manager-partitioning", false, "read module IDs and publish gpuModuleID, as NVIDIA's FabricManagerPartitioning gate")
	sysfs := fs.String("sysfs", "/sys", "where sysfs is mounted (PCIe roots, NUMA nodes)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed; asking for it is no failure
	} else if err != nil {
		return err
	}
	m, ok := modes[*mode]
	if !ok {
		return fmt.Errorf("unknown --mode %q: use gpu, static-mig or dynamic-mig", *mode)
	}
	name := *node
	if name == "" {
		name = os.Getenv("NODE_NAME")
	}
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("no --node given and no host name: %w", err)
		}
		name = strings.ToLower(h)
	}

	var lib gonvml.Interface
	if *mock != "" {
		s, err := nvmlmock.New(*mock)
		if err != nil {
			return err
		}
		lib = s
	} else {
		lib = gonvml.New()
	}
	if err := initNVML(lib); err != nil {
		if *mock == "" {
			return fmt.Errorf("NVML is not available on this machine (%w); run where the NVIDIA driver is installed, or try --mock %s", err, nvmlmock.Names()[0])
		}
		return err
	}
	defer lib.Shutdown()

	opts := nvml.Options{SysfsRoot: *sysfs, FabricManagerPartitioning: *fm}
	if *mock != "" {
		// A mock has no sysfs entries to find PCIe roots or NUMA nodes in.
		opts.PCIeRoot = func(string) (string, error) { return "", nil }
		opts.NUMANode = func(string) (int, error) { return -1, nil }
	}
	d, err := nvml.Discover(lib, opts)
	if err != nil {
		return err
	}
	for _, u := range d.Unknown {
		fmt.Fprintln(stderr, "unknown:", u)
	}
	slices, err := inventory.Slices(d.Node, inventory.Options{NodeName: name, Mode: m,
		ConsumableShares: *shares, ListAttributes: *listAttrs, FabricManagerPartitioning: *fm})
	if err != nil {
		return err
	}
	for i, s := range slices {
		out, err := yaml.Marshal(s)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(stdout, "---")
		}
		stdout.Write(out)
	}
	return nil
}

// initNVML initialises lib, turning a failure or a panic into an error.
func initNVML(lib gonvml.Interface) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("initialising NVML: %v", r)
		}
	}()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return errors.New(ret.Error())
	}
	return nil
}
