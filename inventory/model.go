package inventory

// Node is what one node has: its GPUs and the driver versions they run under.
type Node struct {
	// DriverVersion is the NVIDIA kernel driver version as NVML reports it,
	// e.g. "580.95.05". It is published normalised to strict semver.
	DriverVersion string `json:"driverVersion"`
	// CUDADriverVersion is the CUDA version the driver supports, e.g. "12.4".
	CUDADriverVersion string `json:"cudaDriverVersion"`
	// GPUs are the node's physical GPUs, in any order.
	GPUs []GPU `json:"gpus"`
}

// GPU describes one physical GPU.
type GPU struct {
	// Index is the NVML index of the GPU.
	Index int `json:"index"`
	// Minor is the minor number of /dev/nvidia<minor>; it names the device.
	Minor int `json:"minor"`
	// UUID is the GPU UUID ("GPU-..."); empty in templates of nodes that do
	// not exist yet, in which case no uuid attribute is published.
	UUID string `json:"uuid,omitempty"`
	// ProductName is the marketing name, e.g. "NVIDIA H100 80GB HBM3".
	ProductName string `json:"productName"`
	// Brand is the brand, e.g. "Nvidia" or "Tesla".
	Brand string `json:"brand"`
	// Architecture is the architecture name, e.g. "Hopper".
	Architecture string `json:"architecture"`
	// CUDAComputeCapability is "<major>.<minor>", e.g. "9.0".
	CUDAComputeCapability string `json:"cudaComputeCapability"`
	// MemoryBytes is the total device memory in bytes.
	MemoryBytes int64 `json:"memoryBytes"`
	// PCIBusID is the PCI address in domain:bus:device.function form,
	// e.g. "0000:07:00.0"; empty when unknown.
	PCIBusID string `json:"pciBusID,omitempty"`
	// PCIeRoot is the PCIe root complex, e.g. "pci0000:00"; empty when unknown.
	PCIeRoot string `json:"pcieRoot,omitempty"`
	// NUMANode is the NUMA node of the GPU's PCI function (sysfs numa_node);
	// nil or negative when unknown, in which case no numaNode attribute is
	// published.
	NUMANode *int `json:"numaNode,omitempty"`
	// ModuleID is the GPU's module ID on an NVSwitch system as NVML reports
	// it (nvmlDeviceGetModuleId); 0 when unknown. Published as gpuModuleID
	// with Options.FabricManagerPartitioning.
	ModuleID int `json:"moduleID,omitempty"`
	// FabricPartitions maps the size (number of GPUs) of each Fabric Manager
	// partition that contains this GPU to that partition's ID. Fabric
	// Manager, not NVML, knows them; published as partition<size> with
	// Options.FabricManagerPartitioning.
	FabricPartitions map[int]int `json:"fabricPartitions,omitempty"`
	// MIGCapable says whether the GPU supports MIG at all.
	MIGCapable bool `json:"migCapable,omitempty"`
	// MIGEnabled says whether MIG mode is currently enabled.
	MIGEnabled bool `json:"migEnabled,omitempty"`
	// MIGProfiles are the GPU-instance profiles the GPU supports.
	MIGProfiles []MIGProfile `json:"migProfiles,omitempty"`
	// MIGDevices are the MIG devices that exist now (static MIG).
	MIGDevices []MIGDevice `json:"migDevices,omitempty"`
}

// MIGProfile is one GPU-instance profile with its engines, memory and the
// placements where an instance of it may be created.
type MIGProfile struct {
	// Name is the canonical profile name, e.g. "1g.10gb" or "1g.10gb+me".
	Name string `json:"name"`
	// GIProfileID is the NVML GPU-instance profile ID (GPU_INSTANCE_PROFILE_*).
	GIProfileID int `json:"giProfileID"`
	// SliceCount is the number of compute slices ("1g" = 1).
	SliceCount int `json:"sliceCount"`
	// InstanceCount is how many instances of this profile fit on the GPU.
	InstanceCount int `json:"instanceCount"`
	// Multiprocessors is the number of streaming multiprocessors.
	Multiprocessors int64 `json:"multiprocessors"`
	// CopyEngines is the number of copy engines.
	CopyEngines int64 `json:"copyEngines"`
	// Decoders is the number of video decoders.
	Decoders int64 `json:"decoders"`
	// Encoders is the number of video encoders.
	Encoders int64 `json:"encoders"`
	// JPEGEngines is the number of JPEG engines.
	JPEGEngines int64 `json:"jpegEngines"`
	// OFAEngines is the number of optical-flow accelerators.
	OFAEngines int64 `json:"ofaEngines"`
	// MemoryBytes is the memory of one instance in bytes.
	MemoryBytes int64 `json:"memoryBytes"`
	// Placements are the possible placements, in memory slices.
	Placements []Placement `json:"placements"`
}

// Placement is a range of memory slices [Start, Start+Size).
type Placement struct {
	// Start is the first memory slice.
	Start int `json:"start"`
	// Size is the number of memory slices.
	Size int `json:"size"`
}

// MIGDevice is a MIG device that exists on the GPU (static MIG).
type MIGDevice struct {
	// UUID is the MIG device UUID ("MIG-..."); empty when unknown.
	UUID string `json:"uuid,omitempty"`
	// GIProfileID names the profile in the parent's MIGProfiles.
	GIProfileID int `json:"giProfileID"`
	// GPUInstanceID is the NVML GPU-instance ID; NVML reports it in XID
	// events that happen inside the instance, so it attributes them to this
	// MIG device.
	GPUInstanceID int `json:"gpuInstanceID"`
	// Placement is where the GPU instance sits.
	Placement Placement `json:"placement"`
}

// profile returns the profile with the given GPU-instance profile ID.
func (g *GPU) profile(id int) (*MIGProfile, bool) {
	for i := range g.MIGProfiles {
		if g.MIGProfiles[i].GIProfileID == id {
			return &g.MIGProfiles[i], true
		}
	}
	return nil, false
}

// memorySlices is the number of memory slices: the end of the furthest placement.
func (g *GPU) memorySlices() int {
	n := 0
	for _, p := range g.MIGProfiles {
		for _, pl := range p.Placements {
			n = max(n, pl.Start+pl.Size)
		}
	}
	return n
}
