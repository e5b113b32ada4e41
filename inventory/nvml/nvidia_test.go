package nvml_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// This file is a reference model of what NVIDIA's DRA driver
// (sigs.k8s.io/dra-driver-nvidia-gpu, formerly github.com/NVIDIA/k8s-dra-driver-gpu,
// commit 95932046683719c43b6a0dd9613c2e5aad5d6703 of main, the newest in the
// mirror read, twelve days before v0.5.0 was tagged from main; go-nvlib
// v0.12.0) publishes for a node, written from reading cmd/gpu-kubelet-plugin
// (nvlib.go, deviceinfo.go, partitions.go, mig.go, consumable_shares.go,
// allocatable.go, driver.go, main.go) and go-nvlib's pkg/nvlib/device and
// pkg/nvpci. It reads NVML directly and shares no code with
// inventory's builder, so that the fixtures it records in testdata/nvidia are
// an independent statement of NVIDIA's output. testdata/nvidia/README.md
// says how each field is derived.

// nvidiaSlice is one slice as NVIDIA's driver hands it to the resourceslice
// controller: devices or shared counters. Names, pool and node are the
// controller's and are not modelled.
type nvidiaSlice struct {
	Devices        []resourceapi.Device     `json:"devices,omitempty"`
	SharedCounters []resourceapi.CounterSet `json:"sharedCounters,omitempty"`
}

// nvidiaConfig is the driver's configuration that changes what it publishes:
// feature gates, the --consumable-shares flag, and what nvpci reads from
// sysfs.
type nvidiaConfig struct {
	dynamic   bool   // DynamicMIG
	shares    string // --consumable-shares with the ConsumableShares gate; "" is "disabled"
	listAttrs bool   // DRAListTypeAttributes
	fm        bool   // FabricManagerPartitioning (no Fabric Manager on the mocks)
	// numa is numa_node of each PCI device in sysfs, by bus ID; a bus ID
	// that is missing has no sysfs entry.
	numa map[string]int
}

// nvidiaGPU is GpuInfo: what getGpuInfo and inspectMigProfilesAndPlacements learn.
type nvidiaGPU struct {
	uuid, name, brand, arch, cc, busID string
	minor                              int
	numaNode                           *int
	moduleID                           int
	archID                             gonvml.DeviceArchitecture
	migCapable, migEnabled             bool
	memory                             uint64
	maxCaps                            map[string]int64
	memSlices                          int
	specs                              []nvidiaMIGSpec
}

// nvidiaMIGSpec is MigSpec: one profile at one placement.
type nvidiaMIGSpec struct {
	profile   string
	id        int
	info      gonvml.GpuInstanceProfileInfo
	placement gonvml.GpuInstancePlacement
}

func nvMust[T any](v T, ret gonvml.Return) T {
	if ret != gonvml.SUCCESS {
		panic(fmt.Sprintf("nvml: %v", ret))
	}
	return v
}

// nvidiaSlices is generateSplitResourceSlices (dynamic, Kubernetes 1.35+) or
// publishResources without DynamicMIG (one slice of every allocatable device).
func nvidiaSlices(lib gonvml.Interface, cfg nvidiaConfig) []nvidiaSlice {
	dynamic := cfg.dynamic
	driver := nvMust(lib.SystemGetDriverVersion())
	cuda := nvMust(lib.SystemGetCudaDriverVersion())
	versions := [2]string{semverString(driver), semverString(fmt.Sprintf("%d.%d", cuda/1000, cuda%1000/10))}
	type perGPU struct {
		busID   string
		gpu     *nvidiaGPU
		devices []resourceapi.Device
		counted bool
	}
	var gpus []perGPU
	for i := range nvMust(lib.DeviceGetCount()) {
		dev := nvMust(lib.DeviceGetHandleByIndex(i))
		g := nvidiaGPUInfo(dev)
		// discoverNumaNode: nvpci's numa_node of the PCI device; no entry
		// or a negative node, none.
		if n, ok := cfg.numa[g.busID]; ok && n >= 0 {
			g.numaNode = &n
		}
		// getGpuInfo reads the module ID only with the gate; no Fabric
		// Manager runs on the mocks, so no partitions are attached.
		if cfg.fm {
			g.moduleID = nvMust(dev.GetModuleId())
		}
		pg := perGPU{busID: g.busID, gpu: g}
		// isDynamicMIGCapable: MIG-capable, not a vGPU guest (the mocks
		// are bare metal), and either Hopper or later or MIG already on.
		if dynamic && g.migCapable && (g.archID >= gonvml.DEVICE_ARCH_HOPPER || g.migEnabled) {
			nvidiaInspectProfiles(dev, g)
			if !g.migEnabled || g.archID >= gonvml.DEVICE_ARCH_HOPPER {
				pg.devices = append(pg.devices, nvidiaFullGPU(g, versions, true, cfg))
			}
			for _, s := range g.specs {
				pg.devices = append(pg.devices, nvidiaDynamicMIG(g, s, versions, cfg))
			}
			pg.counted = true
		} else if !g.migEnabled {
			pg.devices = append(pg.devices, nvidiaFullGPU(g, versions, false, cfg))
		} else {
			pg.devices = append(pg.devices, nvidiaStaticMIG(dev, g, versions, cfg)...)
		}
		// AllocatableDevice.GetDevice and PartGetDevice apply the
		// consumable shares to every GPU and MIG device they return.
		for i := range pg.devices {
			nvidiaApplyShares(&pg.devices[i], cfg.shares)
			// GpuInfo.PartCapacities (partitions.go) returns the map
			// maxCapacities itself, not a copy, and applyConsumableShares
			// writes into the device's capacity map: with shares N the
			// whole GPU's capacity shares lands in maxCapacities, and
			// PartSharedCounterSets, called after the GPU's devices
			// (generateSplitResourceSlices), turns it into a counter
			// shares of N that no device consumes (the GPU's own
			// consumption was taken before). Not where the whole GPU is
			// not published (Ampere with MIG on) or has no MIG figures.
			if pg.counted && len(g.maxCaps) > 0 && pg.devices[i].Name == fmt.Sprintf("gpu-%d", g.minor) {
				for name, c := range pg.devices[i].Capacity {
					g.maxCaps[string(name)] = c.Value.Value()
				}
			}
		}
		slices.SortFunc(pg.devices, func(a, b resourceapi.Device) int { return strings.Compare(a.Name, b.Name) })
		gpus = append(gpus, pg)
	}
	slices.SortStableFunc(gpus, func(a, b perGPU) int { return strings.Compare(a.busID, b.busID) })
	if !dynamic {
		// One slice; NVIDIA walks a map, so its order is not defined. The
		// fixture lists the devices per GPU in bus-ID order, by name.
		var all nvidiaSlice
		for _, pg := range gpus {
			all.Devices = append(all.Devices, pg.devices...)
		}
		return []nvidiaSlice{all}
	}
	out := []nvidiaSlice{{}}
	for _, pg := range gpus {
		if pg.counted && len(pg.gpu.maxCaps) > 0 {
			out[0].SharedCounters = append(out[0].SharedCounters, resourceapi.CounterSet{
				Name: nvidiaCounterSetName(pg.gpu), Counters: nvidiaAllCounters(pg.gpu),
			})
		}
		out = append(out, nvidiaSlice{Devices: pg.devices})
	}
	return out
}

func nvidiaGPUInfo(dev gonvml.Device) *nvidiaGPU {
	g := &nvidiaGPU{
		minor:  nvMust(dev.GetMinorNumber()),
		uuid:   nvMust(dev.GetUUID()),
		name:   nvMust(dev.GetName()),
		archID: nvMust(dev.GetArchitecture()),
		memory: nvMust(dev.GetMemoryInfo()).Total,
	}
	g.arch = map[gonvml.DeviceArchitecture]string{gonvml.DEVICE_ARCH_AMPERE: "Ampere", gonvml.DEVICE_ARCH_HOPPER: "Hopper",
		gonvml.DEVICE_ARCH_BLACKWELL: "Blackwell", gonvml.DEVICE_ARCH_ADA: "Ada Lovelace"}[g.archID]
	g.brand = map[gonvml.BrandType]string{gonvml.BRAND_NVIDIA: "Nvidia", gonvml.BRAND_TESLA: "Tesla"}[nvMust(dev.GetBrand())]
	major, minor, ret := dev.GetCudaComputeCapability()
	nvMust(0, ret)
	g.cc = fmt.Sprintf("%d.%d", major, minor)
	// go-nvlib GetPCIBusID: the NUL-terminated BusId, lower case, without
	// the first "0000" of NVML's eight-digit domain.
	var b []byte
	for _, c := range nvMust(dev.GetPciInfo()).BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	g.busID = strings.ToLower(string(b))
	// go-nvlib v0.12.0 trims only an eight-digit domain that starts with
	// "0000" (^0{4}[0-9a-f]{4}:).
	if len(g.busID) > 9 && g.busID[8] == ':' && strings.HasPrefix(g.busID, "0000") {
		g.busID = g.busID[4:]
	}
	mode, _, ret := dev.GetMigMode()
	g.migCapable = ret == gonvml.SUCCESS
	g.migEnabled = g.migCapable && mode == gonvml.DEVICE_MIG_ENABLE
	return g
}

// nvidiaInspectProfiles is inspectMigProfilesAndPlacements over go-nvlib's
// VisitMigProfiles: every GPU-instance profile NVML answers, with the one
// compute-instance profile of as many slices (not 1_SLICE_REV1), each
// possible placement a spec; the per-capacity maximum over all specs and the
// largest placement size are kept.
func nvidiaInspectProfiles(dev gonvml.Device, g *nvidiaGPU) {
	g.maxCaps = map[string]int64{}
	for id := range gonvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := dev.GetGpuInstanceProfileInfo(id)
		if ret != gonvml.SUCCESS {
			continue
		}
		pls, ret := dev.GetGpuInstancePossiblePlacements(&info)
		if ret != gonvml.SUCCESS {
			continue
		}
		name := nvidiaProfileName(id, info, g.memory)
		for _, pl := range pls {
			s := nvidiaMIGSpec{profile: name, id: id, info: info, placement: pl}
			g.specs = append(g.specs, s)
			g.memSlices = max(g.memSlices, int(pl.Size))
			for k, v := range nvidiaMIGCaps(info) {
				g.maxCaps[k] = max(g.maxCaps[k], v)
			}
		}
	}
}

// nvidiaProfileName is go-nvlib's MigProfileInfo.String with C == G.
func nvidiaProfileName(id int, info gonvml.GpuInstanceProfileInfo, total uint64) string {
	frac := float64(info.MemorySizeMB) * (1 << 20) / float64(total)
	frac = math.Ceil(frac*8) / 8
	gb := int(math.Round(frac * float64((total+(1<<30)-1)/(1<<30))))
	suffix := map[int]string{
		gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1: "+me", gonvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1: "+me",
		gonvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME: "+me.all", gonvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME: "+me.all",
		gonvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME: "-me", gonvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME: "-me",
		gonvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX: "+gfx", gonvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX: "+gfx",
		gonvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX: "+gfx",
	}[id]
	return fmt.Sprintf("%dg.%dgb%s", info.SliceCount, gb, suffix)
}

// nvidiaMIGCaps is CommonCapacitiesMig.
func nvidiaMIGCaps(p gonvml.GpuInstanceProfileInfo) map[string]int64 {
	return map[string]int64{
		"multiprocessors": int64(p.MultiprocessorCount), "copyEngines": int64(p.CopyEngineCount),
		"decoders": int64(p.DecoderCount), "encoders": int64(p.EncoderCount), "jpegEngines": int64(p.JpegCount),
		"ofaEngines": int64(p.OfaCount), "memory": int64(p.MemorySizeMB * 1024 * 1024),
	}
}

// nvidiaCounterName is camelToDNSName for the capacity names that occur.
func nvidiaCounterName(capacity string) string {
	var b strings.Builder
	for i, r := range capacity {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func nvidiaCounters(caps map[string]int64, start, size int) map[string]resourceapi.Counter {
	out := map[string]resourceapi.Counter{}
	for k, v := range caps {
		out[nvidiaCounterName(k)] = resourceapi.Counter{Value: *resource.NewQuantity(v, resource.BinarySI)}
	}
	for i := start; i < start+size; i++ {
		out[fmt.Sprintf("memory-slice-%d", i)] = resourceapi.Counter{Value: *resource.NewQuantity(1, resource.BinarySI)}
	}
	return out
}

func nvidiaAllCounters(g *nvidiaGPU) map[string]resourceapi.Counter {
	return nvidiaCounters(g.maxCaps, 0, g.memSlices)
}

func nvidiaCounterSetName(g *nvidiaGPU) string { return fmt.Sprintf("gpu-%d-counter-set", g.minor) }

func nvidiaCapacity(caps map[string]int64) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	out := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	for k, v := range caps {
		out[resourceapi.QualifiedName(k)] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(v, resource.BinarySI)}
	}
	return out
}

// nvidiaCommonAttrs are the attributes GpuInfo.Attributes and
// CommonAttributesMig share; no PCIe root (the mocks' bus IDs have no sysfs
// links) and no addressing mode (the mocks do not support it). The NUMA node
// is addNumaNodeAttribute: an int, or a one-element list under
// DRAListTypeAttributes.
func nvidiaCommonAttrs(g *nvidiaGPU, typ string, versions [2]string, cfg nvidiaConfig) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	s := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: ptr.To(v)} }
	v := func(v string) resourceapi.DeviceAttribute {
		return resourceapi.DeviceAttribute{VersionValue: ptr.To(v)}
	}
	a := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"type": s(typ), "productName": s(g.name), "brand": s(g.brand), "architecture": s(g.arch),
		"cudaComputeCapability": v(semverString(g.cc)), "driverVersion": v(versions[0]), "cudaDriverVersion": v(versions[1]),
		"resource.kubernetes.io/pciBusID": s(g.busID),
	}
	if g.numaNode != nil {
		if cfg.listAttrs {
			a["resource.kubernetes.io/numaNode"] = resourceapi.DeviceAttribute{IntValues: []int64{int64(*g.numaNode)}}
		} else {
			a["resource.kubernetes.io/numaNode"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(*g.numaNode))}
		}
	}
	return a
}

// nvidiaApplyShares is applyConsumableShares for the option opt.
func nvidiaApplyShares(d *resourceapi.Device, opt string) {
	if opt == "" || opt == "disabled" {
		return
	}
	d.AllowMultipleAllocations = ptr.To(true)
	mem, ok := d.Capacity["memory"]
	if !ok {
		return
	}
	const mi = 1 << 20
	top := *resource.NewQuantity(mem.Value.Value()/mi*mi, resource.BinarySI)
	mem.Value = top
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	rng := func(def, lo *resource.Quantity) *resourceapi.CapacityRequestPolicy {
		return &resourceapi.CapacityRequestPolicy{Default: def,
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: lo, Max: ptr.To(top.DeepCopy()), Step: q("1Mi")}}
	}
	switch opt {
	case "memory":
		mem.RequestPolicy = rng(ptr.To(top.DeepCopy()), q("1Mi"))
	case "unlimited":
		mem.RequestPolicy = rng(q("0"), q("0"))
	default:
		n, err := strconv.Atoi(opt)
		if err != nil || n <= 0 {
			return // the driver refuses such a flag at start
		}
		mem.RequestPolicy = rng(q("0"), q("0"))
		sh := resource.NewQuantity(int64(n), resource.DecimalSI)
		one := func() *resource.Quantity { return resource.NewQuantity(1, resource.DecimalSI) }
		d.Capacity["shares"] = resourceapi.DeviceCapacity{Value: *sh, RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default: one(), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: one(), Max: ptr.To(sh.DeepCopy()), Step: one()}}}
	}
	d.Capacity["memory"] = mem
}

// nvidiaFullGPU is GpuInfo.GetDevice or, with DynamicMIG, PartGetDevice.
func nvidiaFullGPU(g *nvidiaGPU, versions [2]string, dynamic bool, cfg nvidiaConfig) resourceapi.Device {
	d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g.minor), Attributes: nvidiaCommonAttrs(g, "gpu", versions, cfg)}
	d.Attributes["uuid"] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.uuid)}
	// addFabricManagerAttributes (GpuInfo.Attributes only): the module ID
	// when not 0; no partitions without a Fabric Manager.
	if cfg.fm && g.moduleID != 0 {
		d.Attributes["gpuModuleID"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.moduleID))}
	}
	if dynamic && len(g.maxCaps) > 0 {
		d.Capacity = nvidiaCapacity(g.maxCaps)
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: nvidiaCounterSetName(g), Counters: nvidiaAllCounters(g)}}
	} else {
		d.Capacity = nvidiaCapacity(map[string]int64{"memory": int64(g.memory)})
	}
	return d
}

// nvidiaDynamicMIG is MigSpec.PartGetDevice.
func nvidiaDynamicMIG(g *nvidiaGPU, s nvidiaMIGSpec, versions [2]string, cfg nvidiaConfig) resourceapi.Device {
	a := nvidiaCommonAttrs(g, "mig", versions, cfg)
	a["parentUUID"] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.uuid)}
	a["profile"] = resourceapi.DeviceAttribute{StringValue: ptr.To(s.profile)}
	caps := nvidiaMIGCaps(s.info)
	// MigSpecTuple.ToCanonicalName: dots dropped, then toRFC1123Compliant.
	p := strings.ToLower(strings.ReplaceAll(s.profile, ".", ""))
	p = strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, p), "-")
	return resourceapi.Device{
		Name:       fmt.Sprintf("gpu-%d-mig-%s-%d-%d", g.minor, p, s.id, s.placement.Start),
		Attributes: a,
		Capacity:   nvidiaCapacity(caps),
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{
			CounterSet: nvidiaCounterSetName(g),
			Counters:   nvidiaCounters(caps, int(s.placement.Start), int(s.placement.Size)),
		}},
	}
}

// nvidiaStaticMIG is getMigDevices with MigDeviceInfo.GetDevice: every MIG
// device handle of the GPU, its GPU instance (profile, placement) found by
// ID; the profile named as in VisitMigProfiles; the common MIG attributes and
// uuid; the profile's capacities and memorySlice<i> of 1 for each memory
// slice of the placement. A GPU with MIG enabled does not give itself whole.
func nvidiaStaticMIG(dev gonvml.Device, g *nvidiaGPU, versions [2]string, cfg nvidiaConfig) []resourceapi.Device {
	var out []resourceapi.Device
	for i := range nvMust(dev.GetMaxMigDeviceCount()) {
		mig, ret := dev.GetMigDeviceHandleByIndex(i)
		if ret == gonvml.ERROR_NOT_FOUND || ret == gonvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		nvMust(mig, ret)
		gi := nvMust(dev.GetGpuInstanceById(nvMust(mig.GetGpuInstanceId())))
		giInfo := nvMust(gi.GetInfo())
		info := nvMust(dev.GetGpuInstanceProfileInfo(int(giInfo.ProfileId)))
		spec := nvidiaMIGSpec{profile: nvidiaProfileName(int(giInfo.ProfileId), info, g.memory), id: int(giInfo.ProfileId), info: info, placement: giInfo.Placement}
		d := nvidiaDynamicMIG(g, spec, versions, cfg)
		d.ConsumesCounters = nil
		d.Attributes["uuid"] = resourceapi.DeviceAttribute{StringValue: ptr.To(nvMust(mig.GetUUID()))}
		for k := giInfo.Placement.Start; k < giInfo.Placement.Start+giInfo.Placement.Size; k++ {
			d.Capacity[resourceapi.QualifiedName(fmt.Sprintf("memorySlice%d", k))] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(1, resource.BinarySI)}
		}
		out = append(out, d)
	}
	return out
}

// semverString is Masterminds semver's MustParse(v).String() for the plain
// numeric versions NVML gives: missing components are 0, leading zeros go.
func semverString(v string) string {
	var n [3]uint64
	for i, part := range strings.SplitN(v, ".", 3) {
		n[i], _ = strconv.ParseUint(part, 10, 64)
	}
	return fmt.Sprintf("%d.%d.%d", n[0], n[1], n[2])
}
