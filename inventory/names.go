package inventory

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
)

// DefaultDriver is the driver name NVIDIA's DRA driver publishes under.
const DefaultDriver = "gpu.nvidia.com"

// Attribute and capacity names of the gpu.nvidia.com schema. Names without a
// domain belong to the driver's domain; the resource.kubernetes.io ones are the
// standard attributes Kubernetes defines for every driver.
const (
	AttrType                  = "type"
	AttrUUID                  = "uuid"
	AttrParentUUID            = "parentUUID"
	AttrProfile               = "profile"
	AttrProductName           = "productName"
	AttrBrand                 = "brand"
	AttrArchitecture          = "architecture"
	AttrCUDAComputeCapability = "cudaComputeCapability"
	AttrDriverVersion         = "driverVersion"
	AttrCUDADriverVersion     = "cudaDriverVersion"
	AttrPCIBusID              = "resource.kubernetes.io/pciBusID"
	AttrPCIeRoot              = "resource.kubernetes.io/pcieRoot"
	AttrNUMANode              = "resource.kubernetes.io/numaNode"
	AttrGPUModuleID           = "gpuModuleID"

	CapMemory          = "memory"
	CapShares          = "shares"
	CapMultiprocessors = "multiprocessors"
	CapCopyEngines     = "copyEngines"
	CapDecoders        = "decoders"
	CapEncoders        = "encoders"
	CapJPEGEngines     = "jpegEngines"
	CapOFAEngines      = "ofaEngines"
)

// PartitionAttribute is the attribute a whole GPU carries, with
// Options.FabricManagerPartitioning, for the Fabric Manager partition of size
// GPUs that contains it: "partition<size>", its value the partition ID.
// Claims constrain multi-GPU requests with matchAttribute on it.
func PartitionAttribute(size int) string { return fmt.Sprintf("partition%d", size) }

// Values of the type attribute.
const (
	TypeGPU = "gpu"
	TypeMIG = "mig"
)

// GPUDeviceName is the device name of a whole GPU: "gpu-<minor>".
func GPUDeviceName(minor int) string {
	return "gpu-" + strconv.Itoa(minor)
}

// MIGDeviceName is the device name of a MIG device or of a dynamic MIG
// placement: "gpu-<minor>-mig-<profile>-<giProfileID>-<placementStart>".
//
// A device name must be a DNS label, so the profile name is made one: lower
// case, dots dropped (as NVIDIA's driver does), every other character that is
// not a letter, digit or '-' replaced by '-': "1g.10gb" → "1g10gb",
// "1g.10gb+me" → "1g10gb-me". The GPU-instance profile ID keeps names unique
// when two profiles sanitise to the same text.
func MIGDeviceName(minor int, profile string, giProfileID, placementStart int) string {
	return fmt.Sprintf("gpu-%d-mig-%s-%d-%d", minor, labelPart(profile), giProfileID, placementStart)
}

// CounterSetName is the name of the counter set of one GPU in dynamic MIG mode.
func CounterSetName(minor int) string {
	return fmt.Sprintf("gpu-%d-counter-set", minor)
}

// MemorySliceCounter is the name of the counter of memory slice i.
func MemorySliceCounter(i int) string {
	return "memory-slice-" + strconv.Itoa(i)
}

// MemorySliceCapacity is the capacity name of memory slice i that a static
// MIG device carries for each memory slice its placement covers, as NVIDIA's
// driver announces it: "memorySlice<i>".
func MemorySliceCapacity(i int) string {
	return "memorySlice" + strconv.Itoa(i)
}

// Counter names in a GPU's counter set. NVIDIA's driver derives each from the
// capacity name by putting a dash before every inner capital and lowering the
// case ("copyEngines" → "copy-engines"), so that it is a DNS label.
const (
	CounterMultiprocessors = "multiprocessors"
	CounterCopyEngines     = "copy-engines"
	CounterDecoders        = "decoders"
	CounterEncoders        = "encoders"
	CounterJPEGEngines     = "jpeg-engines"
	CounterOFAEngines      = "ofa-engines"
	CounterMemory          = "memory"
)

func labelPart(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == '.':
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// NormalizeVersion turns a version as NVIDIA tools print it into strict
// semver 2.0.0, which version attributes require: numeric components lose
// their leading zeros and missing ones become 0 ("580.95.05" → "580.95.5",
// "12.4" → "12.4.0", "9" → "9.0.0"). More than three components, an empty
// component or a non-numeric one is an error.
func NormalizeVersion(v string) (string, error) {
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) > 3 {
		return "", fmt.Errorf("version %q has more than three components", v)
	}
	nums := [3]uint64{}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return "", fmt.Errorf("version %q: component %d (%q) is not a non-negative integer", v, i, p)
		}
		nums[i] = n
	}
	out := semver.Version{Major: nums[0], Minor: nums[1], Patch: nums[2]}.String()
	if _, err := semver.Parse(out); err != nil {
		return "", fmt.Errorf("version %q: %w", v, err)
	}
	return out, nil
}
