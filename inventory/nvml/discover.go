package nvml

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/dralloc/dralloc/inventory"
)

// Options tune discovery. The zero value reads the PCIe root from /sys.
type Options struct {
	// PCIeRoot returns the PCIe root complex ("pci0000:00") of a PCI bus ID.
	// Nil reads it from sysfs under SysfsRoot.
	PCIeRoot func(pciBusID string) (string, error)
	// NUMANode returns the NUMA node of a PCI bus ID, -1 when the platform
	// has none. Nil reads numa_node of the PCI device in sysfs under
	// SysfsRoot, as NVIDIA's driver does through go-nvlib's nvpci
	// (discoverNumaNode in cmd/gpu-kubelet-plugin/nvlib.go); NVML's own
	// answer is not used, so that both publish the same node.
	NUMANode func(pciBusID string) (int, error)
	// SysfsRoot is where sysfs is mounted; empty means "/sys".
	SysfsRoot string
	// FabricManagerPartitioning reads each GPU's module ID
	// (nvmlDeviceGetModuleId), which NVIDIA's driver reads only with its
	// FabricManagerPartitioning feature gate.
	FabricManagerPartitioning bool
}

// Discovery is what Discover found.
type Discovery struct {
	// Node is the model of the node's GPUs.
	Node inventory.Node
	// Unknown lists, one per line, the values that could not be read and
	// why, e.g. "gpus[0].numaNode: not implemented: ...". Values a device
	// does not support (ERROR_NOT_SUPPORTED) are absent, not unknown.
	Unknown []string
}

// ErrNVML is wrapped by Discover errors that make discovery impossible: NVML
// not initialised or not installed, or the device count unreadable.
var ErrNVML = errors.New("nvml")

// Discover reads the node's GPUs from lib, which must be initialised (Init)
// by the caller. It fails only when the devices cannot be counted; a GPU
// whose handle or minor number cannot be read is skipped and reported in
// Unknown, every other missing value is left empty and reported there too.
func Discover(lib gonvml.Interface, opts Options) (Discovery, error) {
	var d Discovery
	var u unknowns
	if lib == nil {
		return d, fmt.Errorf("%w: no library", ErrNVML)
	}
	count, err := call(lib.DeviceGetCount)
	if err != nil {
		return d, fmt.Errorf("%w: counting devices: %w", ErrNVML, err)
	}
	if v, err := call(lib.SystemGetDriverVersion); err == nil {
		d.Node.DriverVersion = v
	} else {
		u.add("driverVersion", err)
	}
	if v, err := call(lib.SystemGetCudaDriverVersion); err == nil {
		// NVML encodes CUDA 12.4 as 12040.
		d.Node.CUDADriverVersion = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	} else {
		u.add("cudaDriverVersion", err)
	}
	for i := range count {
		what := fmt.Sprintf("gpus[%d]", i)
		dev, err := call(func() (gonvml.Device, gonvml.Return) { return lib.DeviceGetHandleByIndex(i) })
		if err != nil || dev == nil {
			u.add(what, fmt.Errorf("skipped, no handle: %w", orNil(err)))
			continue
		}
		g, ok := readGPU(dev, i, what, &u, opts)
		if ok {
			d.Node.GPUs = append(d.Node.GPUs, g)
		}
	}
	d.Unknown = u
	return d, nil
}

func orNil(err error) error {
	if err == nil {
		return errors.New("nil device")
	}
	return err
}

func readGPU(dev gonvml.Device, index int, what string, u *unknowns, opts Options) (inventory.GPU, bool) {
	g := inventory.GPU{Index: index}
	minor, err := call(dev.GetMinorNumber)
	if err != nil {
		u.add(what, fmt.Errorf("skipped, no minor number: %w", err))
		return g, false
	}
	g.Minor = minor
	str := func(name string, f func() (string, gonvml.Return)) string {
		v, err := call(f)
		u.add(what+"."+name, err)
		return v
	}
	g.UUID = str("uuid", dev.GetUUID)
	g.ProductName = str("productName", dev.GetName)
	if b, err := call(dev.GetBrand); err == nil {
		g.Brand = brandName(b)
	} else {
		u.add(what+".brand", err)
	}
	if a, err := call(dev.GetArchitecture); err == nil {
		g.Architecture = architectureName(a)
	} else {
		u.add(what+".architecture", err)
	}
	if major, minor, err := call2(dev.GetCudaComputeCapability); err == nil {
		g.CUDAComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	} else {
		u.add(what+".cudaComputeCapability", err)
	}
	if m, err := call(dev.GetMemoryInfo); err == nil {
		g.MemoryBytes = clampInt64(m.Total)
	} else {
		u.add(what+".memoryBytes", err)
	}
	if p, err := call(dev.GetPciInfo); err == nil {
		g.PCIBusID = busID(p)
	} else {
		u.add(what+".pciBusID", err)
	}
	if g.PCIBusID != "" {
		root, err := opts.pcieRoot(g.PCIBusID)
		g.PCIeRoot = root
		u.add(what+".pcieRoot", err)
	}
	if g.PCIBusID != "" {
		// -1 means no NUMA affinity: published without the attribute, as
		// NVIDIA's driver does, and not an unknown value.
		if n, err := opts.numaNode(g.PCIBusID); err == nil && n >= 0 {
			g.NUMANode = &n
		} else {
			u.add(what+".numaNode", err)
		}
	}
	if opts.FabricManagerPartitioning {
		if id, err := call(dev.GetModuleId); err == nil {
			g.ModuleID = id
		} else {
			u.add(what+".moduleID", err)
		}
	}
	current, _, err := call2(dev.GetMigMode)
	switch {
	case err == nil:
		g.MIGCapable = true
		g.MIGEnabled = current == gonvml.DEVICE_MIG_ENABLE
	case errors.Is(err, errNotSupported):
	default:
		u.add(what+".migCapable", err)
	}
	if g.MIGCapable {
		g.MIGProfiles = readProfiles(dev, g.MemoryBytes, what, u)
		if g.MIGEnabled {
			g.MIGDevices = readMIGDevices(dev, g.MIGProfiles, what, u)
		}
	}
	return g, true
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// busID returns the PCI bus ID in the canonical lower-case
// "dddd:bb:dd.f" form; NVML prints an eight-digit domain.
func busID(p gonvml.PciInfo) string {
	var b strings.Builder
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	id := strings.ToLower(b.String())
	if len(id) == len("00000000:07:00.0") && strings.HasPrefix(id, "0000") {
		id = id[4:]
	}
	return id
}

func (o Options) pcieRoot(busID string) (string, error) {
	if o.PCIeRoot != nil {
		return o.PCIeRoot(busID)
	}
	root := o.SysfsRoot
	if root == "" {
		root = "/sys"
	}
	// /sys/bus/pci/devices/<bdf> links to /sys/devices/pci<domain>:<bus>/...;
	// the first element below /sys/devices is the root complex.
	target, err := filepath.EvalSymlinks(filepath.Join(root, "bus", "pci", "devices", busID))
	if err != nil {
		return "", fmt.Errorf("resolving PCIe root: %w", err)
	}
	for _, part := range strings.Split(filepath.ToSlash(target), "/") {
		if strings.HasPrefix(part, "pci") && strings.Contains(part, ":") {
			return part, nil
		}
	}
	return "", fmt.Errorf("no PCIe root in %s", target)
}

func (o Options) numaNode(busID string) (int, error) {
	if o.NUMANode != nil {
		return o.NUMANode(busID)
	}
	root := o.SysfsRoot
	if root == "" {
		root = "/sys"
	}
	dev := filepath.Join(root, "bus", "pci", "devices", busID)
	// nvpci's GetGPUByPciBusID answers nothing for a PCI function that is
	// not an NVIDIA GPU (vendor 0x10de, class VGA or 3D controller), and
	// the driver then publishes no NUMA node.
	vendor, err := readHex(filepath.Join(dev, "vendor"))
	if err != nil {
		return -1, fmt.Errorf("reading NUMA node: %w", err)
	}
	class, err := readHex(filepath.Join(dev, "class"))
	if err != nil {
		return -1, fmt.Errorf("reading NUMA node: %w", err)
	}
	if vendor != 0x10de || (class>>8 != 0x0300 && class>>8 != 0x0302) {
		return -1, nil
	}
	b, err := os.ReadFile(filepath.Join(dev, "numa_node"))
	if err != nil {
		return -1, fmt.Errorf("reading NUMA node: %w", err)
	}
	// Signed: the kernel writes -1 for "no NUMA affinity"; nvpci parses it
	// with base 0, so a hexadecimal or octal spelling is read the same.
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 0, 32)
	if err != nil {
		return -1, fmt.Errorf("parsing NUMA node: %w", err)
	}
	return int(n), nil
}

// readHex reads a sysfs PCI field such as vendor ("0x10de").
func readHex(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 0, 32)
}

func brandName(b gonvml.BrandType) string {
	switch b {
	case gonvml.BRAND_QUADRO:
		return "Quadro"
	case gonvml.BRAND_TESLA:
		return "Tesla"
	case gonvml.BRAND_NVS:
		return "NVS"
	case gonvml.BRAND_GRID:
		return "Grid"
	case gonvml.BRAND_GEFORCE:
		return "GeForce"
	case gonvml.BRAND_TITAN:
		return "Titan"
	case gonvml.BRAND_NVIDIA_VAPPS:
		return "NvidiaVApps"
	case gonvml.BRAND_NVIDIA_VPC:
		return "NvidiaVPC"
	case gonvml.BRAND_NVIDIA_VCS:
		return "NvidiaVCS"
	case gonvml.BRAND_NVIDIA_VWS:
		return "NvidiaVWS"
	case gonvml.BRAND_NVIDIA_CLOUD_GAMING:
		return "NvidiaCloudGaming"
	case gonvml.BRAND_QUADRO_RTX:
		return "QuadroRTX"
	case gonvml.BRAND_NVIDIA_RTX:
		return "NvidiaRTX"
	case gonvml.BRAND_NVIDIA:
		return "Nvidia"
	case gonvml.BRAND_GEFORCE_RTX:
		return "GeForceRTX"
	case gonvml.BRAND_TITAN_RTX:
		return "TitanRTX"
	default:
		return "Unknown"
	}
}

func architectureName(a gonvml.DeviceArchitecture) string {
	switch a {
	case gonvml.DEVICE_ARCH_KEPLER:
		return "Kepler"
	case gonvml.DEVICE_ARCH_MAXWELL:
		return "Maxwell"
	case gonvml.DEVICE_ARCH_PASCAL:
		return "Pascal"
	case gonvml.DEVICE_ARCH_VOLTA:
		return "Volta"
	case gonvml.DEVICE_ARCH_TURING:
		return "Turing"
	case gonvml.DEVICE_ARCH_AMPERE:
		return "Ampere"
	case gonvml.DEVICE_ARCH_ADA:
		return "Ada Lovelace" // as go-nvlib's GetArchitectureAsString
	case gonvml.DEVICE_ARCH_HOPPER:
		return "Hopper"
	case gonvml.DEVICE_ARCH_BLACKWELL:
		return "Blackwell"
	case gonvml.DEVICE_ARCH_RUBIN:
		return "Rubin"
	default:
		return "Unknown"
	}
}
