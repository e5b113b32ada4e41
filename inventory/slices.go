package inventory

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Mode says how a node's GPUs are published.
type Mode string

const (
	// ModeGPU publishes every GPU as one whole device. It is the default.
	ModeGPU Mode = "GPU"
	// ModeStaticMIG publishes the MIG devices that exist on MIG-enabled GPUs
	// and the other GPUs whole.
	ModeStaticMIG Mode = "StaticMIG"
	// ModeDynamicMIG publishes every MIG-capable GPU as partitionable
	// devices: one counter set per GPU, the whole GPU consuming all of it and
	// one device per profile placement consuming its engines and memory
	// slices, so that overlapping placements exclude each other. GPUs without
	// MIG, or without any profile placement, are published whole. MIG mode
	// need not be enabled yet: the driver creates the instance for the
	// placement it is asked to prepare.
	ModeDynamicMIG Mode = "DynamicMIG"
)

// Options say for whom and how slices are built. The zero value is usable
// once NodeName is set: driver gpu.nvidia.com, whole GPUs, generation 1.
type Options struct {
	// NodeName is the node the slices belong to; it is also the pool name.
	NodeName string
	// Driver is the driver name; empty means DefaultDriver.
	Driver string
	// Mode is how GPUs are published; empty means ModeGPU.
	Mode Mode
	// Generation is the pool generation; zero means 1. A driver increments it
	// whenever it republishes a changed pool.
	Generation int64
	// Taints are device taints keyed by the UUID of a GPU or of a MIG
	// device, for example from HealthPolicy. A GPU's taints go on every
	// device of that GPU: the whole GPU and all its MIG devices and
	// placements. A MIG device's taints go on that MIG device only, or, in
	// dynamic MIG mode, on the placement it occupies (same profile and
	// start), or, where its GPU is published whole, on the whole GPU. A UUID
	// that is not on the node is an error naming it: a taint must never be
	// dropped silently.
	Taints map[string][]resourceapi.DeviceTaint
	// ConsumableShares is NVIDIA's --consumable-shares flag with its
	// ConsumableShares feature gate on: "" or SharesDisabled (the default)
	// publish devices for one claim each; SharesMemory, SharesUnlimited or a
	// positive integer make whole GPUs and MIG devices shareable by
	// consumable capacity (see applyShares). Any other value is an error.
	ConsumableShares string
	// ListAttributes is NVIDIA's DRAListTypeAttributes feature gate (which
	// needs Kubernetes' gate of the same name): the numaNode attribute is
	// published as a one-element list instead of an int.
	ListAttributes bool
	// FabricManagerPartitioning is NVIDIA's FabricManagerPartitioning
	// feature gate: whole GPUs carry gpuModuleID and partition<size>
	// (GPU.ModuleID, GPU.FabricPartitions).
	FabricManagerPartitioning bool
	// HostManagedIMEX is, for ComputeDomainSlices only, NVIDIA's
	// hostManaged IMEX deployment mode: the daemon device is not published.
	HostManagedIMEX bool
}

// ErrInvalidNode is wrapped by errors for a Node or Options that cannot be
// published.
var ErrInvalidNode = errors.New("invalid node")

// Slices builds the ResourceSlices that publish node. The output is sorted and
// byte-stable: the same input gives the same slices, whatever the order of
// GPUs, profiles or placements in it. It respects every limit of the API
// (devices per slice, counter sets per slice, counters per set, attributes per
// device), puts counter sets and devices in separate slices, names the pool
// after the node and sets the pool's generation and slice count.
//
// The node is not modified. Invalid input returns an error wrapping
// ErrInvalidNode that names the field.
func Slices(node Node, opts Options) ([]*resourceapi.ResourceSlice, error) {
	o, errs := opts.withDefaults()
	b := builder{opts: o}
	gpus := slices.Clone(node.GPUs)
	// NVIDIA's driver publishes GPUs in the order of their PCI bus IDs (its
	// per-GPU map is keyed by them and walked sorted); the minor number
	// orders GPUs without one, as in templates.
	slices.SortStableFunc(gpus, func(a, b GPU) int {
		if c := strings.Compare(a.PCIBusID, b.PCIBusID); c != 0 {
			return c
		}
		return a.Minor - b.Minor
	})
	var err error
	if b.common, err = commonVersions(node); err != nil {
		errs = append(errs, err.(*field.Error))
	}
	errs = append(errs, validateGPUs(node.GPUs)...)
	errs = append(errs, validateTaintKeys(node.GPUs, o.Taints)...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: node %q: %w", ErrInvalidNode, o.NodeName, errs.ToAggregate())
	}
	var groups [][]resourceapi.Device
	var sets []resourceapi.CounterSet
	for i := range gpus {
		g := &gpus[i]
		devs, set, err := b.gpu(g)
		if err != nil {
			return nil, fmt.Errorf("%w: node %q: %w", ErrInvalidNode, o.NodeName, err)
		}
		if set != nil {
			sets = append(sets, *set)
		}
		if len(devs) > 0 {
			groups = append(groups, devs)
		}
	}
	out := b.pack(sets, groups)
	// What the model cannot rule out by itself — a product name longer than
	// an attribute may be, a profile name too long for a device name, a
	// taint key that is not a label name — shows in the slices themselves.
	for _, s := range out {
		if errs := ValidateSlice(s); len(errs) > 0 {
			return nil, fmt.Errorf("%w: node %q: slice %s would be invalid: %w", ErrInvalidNode, o.NodeName, s.Name, errs.ToAggregate())
		}
	}
	if errs := ValidatePool(out); len(errs) > 0 {
		return nil, fmt.Errorf("%w: node %q: pool would be invalid: %w", ErrInvalidNode, o.NodeName, errs.ToAggregate())
	}
	return out, nil
}

func (o Options) withDefaults() (Options, field.ErrorList) {
	var errs field.ErrorList
	if o.Driver == "" {
		o.Driver = DefaultDriver
	}
	if o.Mode == "" {
		o.Mode = ModeGPU
	}
	if o.Generation == 0 {
		o.Generation = 1
	}
	if o.NodeName == "" {
		errs = append(errs, field.Required(field.NewPath("nodeName"), "the node name is also the pool name"))
	}
	switch o.Mode {
	case ModeGPU, ModeStaticMIG, ModeDynamicMIG:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("mode"), o.Mode, []Mode{ModeGPU, ModeStaticMIG, ModeDynamicMIG}))
	}
	if o.Generation < 0 {
		errs = append(errs, field.Invalid(field.NewPath("generation"), o.Generation, "must not be negative"))
	}
	if err := validShares(o.ConsumableShares); err != nil {
		errs = append(errs, err)
	}
	if o.HostManagedIMEX {
		errs = append(errs, field.Forbidden(field.NewPath("hostManagedIMEX"), "applies to ComputeDomainSlices only"))
	}
	return o, errs
}

// versions are the normalised node-wide version attributes.
type versions struct{ driver, cuda string }

func commonVersions(node Node) (versions, error) {
	var v versions
	var err error
	if node.DriverVersion != "" {
		if v.driver, err = NormalizeVersion(node.DriverVersion); err != nil {
			return v, field.Invalid(field.NewPath("driverVersion"), node.DriverVersion, err.Error())
		}
	}
	if node.CUDADriverVersion != "" {
		if v.cuda, err = NormalizeVersion(node.CUDADriverVersion); err != nil {
			return v, field.Invalid(field.NewPath("cudaDriverVersion"), node.CUDADriverVersion, err.Error())
		}
	}
	return v, nil
}

func validateGPUs(gpus []GPU) field.ErrorList {
	var errs field.ErrorList
	minors := map[int]bool{}
	for i, g := range gpus {
		p := field.NewPath("gpus").Index(i)
		if g.Minor < 0 {
			errs = append(errs, field.Invalid(p.Child("minor"), g.Minor, "must not be negative"))
		}
		if minors[g.Minor] {
			errs = append(errs, field.Duplicate(p.Child("minor"), g.Minor))
		}
		minors[g.Minor] = true
		if g.MemoryBytes < 0 {
			errs = append(errs, field.Invalid(p.Child("memoryBytes"), g.MemoryBytes, "must not be negative"))
		}
		if g.ModuleID < 0 {
			errs = append(errs, field.Invalid(p.Child("moduleID"), g.ModuleID, "must not be negative"))
		}
		for _, size := range sortedKeys(g.FabricPartitions) {
			if size < 1 {
				errs = append(errs, field.Invalid(p.Child("fabricPartitions").Key(strconv.Itoa(size)), size, "partition size must be at least 1"))
			}
			if id := g.FabricPartitions[size]; id < 0 {
				errs = append(errs, field.Invalid(p.Child("fabricPartitions").Key(strconv.Itoa(size)), id, "partition ID must not be negative"))
			}
		}
		if g.CUDAComputeCapability != "" {
			if _, err := NormalizeVersion(g.CUDAComputeCapability); err != nil {
				errs = append(errs, field.Invalid(p.Child("cudaComputeCapability"), g.CUDAComputeCapability, err.Error()))
			}
		}
		ids := map[int]bool{}
		for j, prof := range g.MIGProfiles {
			pp := p.Child("migProfiles").Index(j)
			if ids[prof.GIProfileID] {
				errs = append(errs, field.Duplicate(pp.Child("giProfileID"), prof.GIProfileID))
			}
			ids[prof.GIProfileID] = true
			if prof.Name == "" || labelPart(prof.Name) == "" {
				errs = append(errs, field.Invalid(pp.Child("name"), prof.Name, "must contain a letter or digit"))
			}
			for k, pl := range prof.Placements {
				if pl.Start < 0 || pl.Size < 1 || pl.Start > maxMemorySlices || pl.Size > maxMemorySlices-pl.Start {
					errs = append(errs, field.Invalid(pp.Child("placements").Index(k), pl,
						fmt.Sprintf("start must be >= 0, size >= 1 and start+size <= %d memory slices", maxMemorySlices)))
				}
			}
			for name, n := range map[string]int64{"multiprocessors": prof.Multiprocessors, "copyEngines": prof.CopyEngines,
				"decoders": prof.Decoders, "encoders": prof.Encoders, "jpegEngines": prof.JPEGEngines,
				"ofaEngines": prof.OFAEngines, "memoryBytes": prof.MemoryBytes} {
				if n < 0 {
					errs = append(errs, field.Invalid(pp.Child(name), n, "must not be negative"))
				}
			}
		}
		if n := g.memorySlices(); n > maxMemorySlices {
			errs = append(errs, field.TooMany(p.Child("migProfiles"), n, maxMemorySlices))
		}
		errs = append(errs, validateMIGDevices(p.Child("migDevices"), &g)...)
	}
	return errs
}

// validateMIGDevices checks the MIG devices that exist on a GPU (static MIG): each of a known profile, at a
// placement within the GPU's memory slices that the profile offers (when the profile lists its
// placements), and no two on the same memory slice, since a GPU instance owns its memory slices.
func validateMIGDevices(p *field.Path, g *GPU) field.ErrorList {
	var errs field.ErrorList
	owner := map[int]int{} // memory slice -> index of the MIG device on it
	for j, d := range g.MIGDevices {
		dp := p.Index(j)
		prof, ok := g.profile(d.GIProfileID)
		if !ok {
			errs = append(errs, field.NotFound(dp.Child("giProfileID"), d.GIProfileID))
			continue
		}
		pl := d.Placement
		switch {
		case pl.Start < 0 || pl.Size < 1 || pl.Start > maxMemorySlices || pl.Size > maxMemorySlices-pl.Start:
			errs = append(errs, field.Invalid(dp.Child("placement"), pl,
				fmt.Sprintf("start must be >= 0, size >= 1 and start+size <= %d memory slices", maxMemorySlices)))
			continue
		case len(prof.Placements) > 0 && !slices.Contains(prof.Placements, pl):
			errs = append(errs, field.Invalid(dp.Child("placement"), pl, fmt.Sprintf("not a placement of profile %s", prof.Name)))
			continue
		}
		for m := pl.Start; m < pl.Start+pl.Size; m++ {
			if k, taken := owner[m]; taken {
				errs = append(errs, field.Invalid(dp.Child("placement"), pl, fmt.Sprintf("overlaps %s on memory slice %d", p.Index(k), m)))
				break
			}
			owner[m] = j
		}
	}
	return errs
}

// maxMemorySlices keeps a GPU's counter set within the API's counters per set.
const maxMemorySlices = resourceapi.ResourceSliceMaxCountersPerCounterSet - len(engineCapacities)

// validateTaintKeys checks that every key of taints is the UUID of a GPU or
// MIG device of the node.
func validateTaintKeys(gpus []GPU, taints map[string][]resourceapi.DeviceTaint) field.ErrorList {
	known := map[string]bool{}
	for _, g := range gpus {
		if g.UUID != "" {
			known[g.UUID] = true
		}
		for _, m := range g.MIGDevices {
			if m.UUID != "" {
				known[m.UUID] = true
			}
		}
	}
	var errs field.ErrorList
	for _, uuid := range sortedKeys(taints) {
		if !known[uuid] {
			errs = append(errs, field.NotFound(field.NewPath("taints").Key(uuid), "no GPU or MIG device of the node has this UUID"))
		}
	}
	return errs
}

// togglesMIG reports whether a GPU of this architecture can switch MIG mode
// without a reset. NVIDIA's driver asks NVML for the architecture and allows
// it from Hopper on (supportsMIGModeToggle: arch >= DEVICE_ARCH_HOPPER); the
// architectures before Hopper are named here, so that an unknown or empty
// name counts as Hopper or later, as NVML's DEVICE_ARCH_UNKNOWN does there.
func togglesMIG(architecture string) bool {
	switch architecture {
	case "Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace":
		return false
	}
	return true
}

// dynamicMIG reports whether a GPU is published as partitionable devices in
// dynamic MIG mode: it supports MIG, has profile placements, and either its
// MIG mode can be switched or MIG is already enabled (isDynamicMIGCapable in
// NVIDIA's driver). An Ampere GPU without MIG enabled is published whole.
func dynamicMIG(g *GPU) bool {
	return g.MIGCapable && g.memorySlices() > 0 && (g.MIGEnabled || togglesMIG(g.Architecture))
}

type builder struct {
	opts   Options
	common versions
}

// gpu returns the devices of one GPU, sorted by name as NVIDIA's driver
// sorts them, and, in dynamic MIG mode, its counter set.
func (b *builder) gpu(g *GPU) ([]resourceapi.Device, *resourceapi.CounterSet, error) {
	gpuTaints := b.opts.Taints[g.UUID]
	var devs []resourceapi.Device
	var set *resourceapi.CounterSet
	switch {
	case b.opts.Mode == ModeStaticMIG && g.MIGEnabled:
		for _, m := range g.MIGDevices {
			prof, _ := g.profile(m.GIProfileID)
			d := b.migDevice(g, prof)
			if m.UUID != "" {
				d.Attributes[AttrUUID] = resourceapi.DeviceAttribute{StringValue: ptr.To(m.UUID)}
			}
			d.Name = MIGDeviceName(g.Minor, prof.Name, prof.GIProfileID, m.Placement.Start)
			// A static MIG device names the memory slices it holds as
			// capacities (NVIDIA's MigDeviceInfo.GetDevice).
			for i := m.Placement.Start; i < m.Placement.Start+m.Placement.Size; i++ {
				d.Capacity[resourceapi.QualifiedName(MemorySliceCapacity(i))] = resourceapi.DeviceCapacity{Value: binary(1)}
			}
			applyShares(&d, b.opts.ConsumableShares)
			if err := b.setTaints(&d, gpuTaints, b.opts.Taints[m.UUID]); err != nil {
				return nil, nil, err
			}
			devs = append(devs, d)
		}
	case b.opts.Mode == ModeDynamicMIG && dynamicMIG(g):
		cs := counterSet(g)
		set = &cs
		// Placements hold the taints of a MIG device that occupies them.
		occupant := map[string][]resourceapi.DeviceTaint{}
		for _, m := range g.MIGDevices {
			if prof, ok := g.profile(m.GIProfileID); ok && m.UUID != "" {
				name := MIGDeviceName(g.Minor, prof.Name, prof.GIProfileID, m.Placement.Start)
				occupant[name] = append(occupant[name], b.opts.Taints[m.UUID]...)
			}
		}
		// An Ampere GPU with MIG enabled cannot give itself whole: turning
		// MIG off needs a reset, which the driver does not do. Its
		// placements are still published, against its counter set.
		if !g.MIGEnabled || togglesMIG(g.Architecture) {
			full := b.gpuDevice(g)
			full.Capacity = engineCapacity(maxEngines(g))
			full.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: cs.Name, Counters: copyCounters(cs.Counters)}}
			applyShares(&full, b.opts.ConsumableShares)
			if err := b.setTaints(&full, gpuTaints, b.migTaints(g)); err != nil {
				return nil, nil, err
			}
			devs = append(devs, full)
		}
		for i := range g.MIGProfiles {
			prof := &g.MIGProfiles[i]
			pls := slices.Clone(prof.Placements)
			slices.SortFunc(pls, func(x, y Placement) int { return x.Start - y.Start })
			for _, pl := range slices.Compact(pls) {
				d := b.migDevice(g, prof)
				d.Name = MIGDeviceName(g.Minor, prof.Name, prof.GIProfileID, pl.Start)
				d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: cs.Name, Counters: placementCounters(prof, pl)}}
				applyShares(&d, b.opts.ConsumableShares)
				if err := b.setTaints(&d, gpuTaints, occupant[d.Name]); err != nil {
					return nil, nil, err
				}
				devs = append(devs, d)
			}
		}
	default:
		d := b.gpuDevice(g)
		applyShares(&d, b.opts.ConsumableShares)
		if err := b.setTaints(&d, gpuTaints, b.migTaints(g)); err != nil {
			return nil, nil, err
		}
		devs = append(devs, d)
	}
	slices.SortFunc(devs, func(x, y resourceapi.Device) int { return strings.Compare(x.Name, y.Name) })
	return devs, set, nil
}

// migTaints are the taints of all MIG devices of g, for a device that
// contains them all.
func (b *builder) migTaints(g *GPU) []resourceapi.DeviceTaint {
	var out []resourceapi.DeviceTaint
	for _, m := range g.MIGDevices {
		if m.UUID != "" {
			out = append(out, b.opts.Taints[m.UUID]...)
		}
	}
	return out
}

// setTaints gives d the union of the taint lists, deep-copied, without
// duplicates and sorted, within the API's limit per device.
func (b *builder) setTaints(d *resourceapi.Device, lists ...[]resourceapi.DeviceTaint) error {
	var out []resourceapi.DeviceTaint
	for _, ts := range lists {
		for _, t := range ts {
			out = append(out, *t.DeepCopy())
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortStableFunc(out, compareTaints)
	out = slices.CompactFunc(out, func(x, y resourceapi.DeviceTaint) bool { return compareTaints(x, y) == 0 })
	if len(out) > resourceapi.DeviceTaintsMaxLength {
		return field.TooMany(field.NewPath("devices").Key(d.Name).Child("taints"), len(out), resourceapi.DeviceTaintsMaxLength)
	}
	d.Taints = out
	return nil
}

func compareTaints(x, y resourceapi.DeviceTaint) int {
	if c := strings.Compare(x.Key, y.Key); c != 0 {
		return c
	}
	if c := strings.Compare(string(x.Effect), string(y.Effect)); c != 0 {
		return c
	}
	return strings.Compare(x.Value, y.Value)
}

// attrs are the attributes every device of a GPU carries: NVIDIA's common
// attributes (GpuInfo.Attributes, CommonAttributesMig), the NUMA node
// included.
func (b *builder) attrs(g *GPU, typ string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	a := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		AttrType: {StringValue: ptr.To(typ)},
	}
	str := func(name, v string) {
		if v != "" {
			a[resourceapi.QualifiedName(name)] = resourceapi.DeviceAttribute{StringValue: ptr.To(v)}
		}
	}
	ver := func(name, v string) {
		if v != "" {
			a[resourceapi.QualifiedName(name)] = resourceapi.DeviceAttribute{VersionValue: ptr.To(v)}
		}
	}
	str(AttrProductName, g.ProductName)
	str(AttrBrand, g.Brand)
	str(AttrArchitecture, g.Architecture)
	if g.CUDAComputeCapability != "" {
		cc, _ := NormalizeVersion(g.CUDAComputeCapability) // validated before
		ver(AttrCUDAComputeCapability, cc)
	}
	ver(AttrDriverVersion, b.common.driver)
	ver(AttrCUDADriverVersion, b.common.cuda)
	// MIG devices carry their parent's PCI bus ID and PCIe root, as in
	// NVIDIA's driver: they live on that PCI function.
	str(AttrPCIBusID, g.PCIBusID)
	str(AttrPCIeRoot, g.PCIeRoot)
	// addNumaNodeAttribute in cmd/gpu-kubelet-plugin/deviceinfo.go: the
	// KEP-6072 attribute, left out when the node is unknown (sysfs says -1),
	// a one-element list under DRAListTypeAttributes (the driver does not
	// yet compute the other nodes at the same distance).
	if g.NUMANode != nil && *g.NUMANode >= 0 {
		n := int64(*g.NUMANode)
		if b.opts.ListAttributes {
			a[AttrNUMANode] = resourceapi.DeviceAttribute{IntValues: []int64{n}}
		} else {
			a[AttrNUMANode] = resourceapi.DeviceAttribute{IntValue: ptr.To(n)}
		}
	}
	return a
}

// fabricAttrs adds the Fabric Manager attributes of a whole GPU
// (addFabricManagerAttributes in cmd/gpu-kubelet-plugin/deviceinfo.go, only
// from GpuInfo.Attributes, so MIG devices do not carry them): gpuModuleID
// when known and partition<size> for each partition holding the GPU.
func (b *builder) fabricAttrs(g *GPU, a map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) {
	if !b.opts.FabricManagerPartitioning {
		return
	}
	if g.ModuleID != 0 {
		a[AttrGPUModuleID] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.ModuleID))}
	}
	for size, id := range g.FabricPartitions {
		a[resourceapi.QualifiedName(PartitionAttribute(size))] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(id))}
	}
}

// gpuDevice is the whole GPU with its memory as capacity.
func (b *builder) gpuDevice(g *GPU) resourceapi.Device {
	a := b.attrs(g, TypeGPU)
	if g.UUID != "" {
		a[AttrUUID] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.UUID)}
	}
	b.fabricAttrs(g, a)
	return resourceapi.Device{
		Name:       GPUDeviceName(g.Minor),
		Attributes: a,
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			CapMemory: {Value: binary(g.MemoryBytes)},
		},
	}
}

// migDevice is a MIG device of profile prof, without name: its parent's
// identity (parentUUID, PCI bus ID, PCIe root, NUMA node) and the profile's
// figures as capacities.
func (b *builder) migDevice(g *GPU, prof *MIGProfile) resourceapi.Device {
	a := b.attrs(g, TypeMIG)
	if g.UUID != "" {
		a[AttrParentUUID] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.UUID)}
	}
	a[AttrProfile] = resourceapi.DeviceAttribute{StringValue: ptr.To(prof.Name)}
	return resourceapi.Device{Attributes: a, Capacity: engineCapacity(engines(prof))}
}

func copyCounters(m map[string]resourceapi.Counter) map[string]resourceapi.Counter {
	out := make(map[string]resourceapi.Counter, len(m))
	for k, v := range m {
		out[k] = resourceapi.Counter{Value: v.Value.DeepCopy()}
	}
	return out
}

// pack puts counter sets and device groups into slices within the API limits.
//
// In dynamic MIG mode the layout is NVIDIA's for Kubernetes 1.35 and later
// (generateSplitResourceSlices): first the counter sets of all GPUs, then one
// slice per GPU with its devices. Otherwise NVIDIA's driver publishes all
// devices in one slice; here GPUs are added to a slice while they fit and a
// GPU's devices stay in one slice when they fit, which is one slice up to the
// API's limit of devices.
func (b *builder) pack(sets []resourceapi.CounterSet, groups [][]resourceapi.Device) []*resourceapi.ResourceSlice {
	var specs []resourceapi.ResourceSliceSpec
	for start := 0; start < len(sets); start += resourceapi.ResourceSliceMaxCounterSets {
		end := min(start+resourceapi.ResourceSliceMaxCounterSets, len(sets))
		specs = append(specs, resourceapi.ResourceSliceSpec{SharedCounters: sets[start:end]})
	}
	if b.opts.Mode == ModeDynamicMIG && len(sets) == 0 {
		// NVIDIA's driver publishes its counter slice even when no GPU has
		// a counter set (all of them published whole).
		specs = append(specs, resourceapi.ResourceSliceSpec{})
	}
	var cur []resourceapi.Device
	flush := func() {
		if len(cur) > 0 {
			specs = append(specs, resourceapi.ResourceSliceSpec{Devices: cur})
			cur = nil
		}
	}
	for _, g := range groups {
		limit := deviceLimit(g)
		if len(cur) > 0 && (b.opts.Mode == ModeDynamicMIG || len(cur)+len(g) > min(limit, deviceLimit(cur))) {
			flush()
		}
		for len(g) > limit {
			flush()
			cur, g = g[:limit:limit], g[limit:]
			flush()
		}
		cur = append(cur, g...)
	}
	flush()
	if len(specs) == 0 {
		// An empty pool is still published, so that consumers see the node
		// has no devices rather than an incomplete pool.
		specs = append(specs, resourceapi.ResourceSliceSpec{})
	}
	out := make([]*resourceapi.ResourceSlice, len(specs))
	for i, spec := range specs {
		spec.Driver = b.opts.Driver
		spec.NodeName = ptr.To(b.opts.NodeName)
		spec.Pool = resourceapi.ResourcePool{
			Name:               b.opts.NodeName,
			Generation:         b.opts.Generation,
			ResourceSliceCount: int64(len(specs)),
		}
		out[i] = &resourceapi.ResourceSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: sliceName(b.opts.NodeName, b.opts.Driver, i)},
			Spec:       spec,
		}
	}
	return out
}

// deviceLimit is the most devices a slice holding devs may have.
func deviceLimit(devs []resourceapi.Device) int {
	for i := range devs {
		if advanced(&devs[i]) {
			return resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
		}
	}
	return resourceapi.ResourceSliceMaxDevices
}

// advanced reports whether a device uses a feature that lowers the per-slice
// device limit: taints, counters or list attributes.
func advanced(d *resourceapi.Device) bool {
	if len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 {
		return true
	}
	for _, a := range d.Attributes {
		if a.IntValues != nil || a.BoolValues != nil || a.StringValues != nil || a.VersionValues != nil {
			return true
		}
	}
	return false
}

// sliceName is "<node>-<driver with dots as dashes>-<i>", with the node part
// shortened when the whole would exceed the 253 characters of an object name.
func sliceName(node, driver string, i int) string {
	suffix := fmt.Sprintf("-%s-%d", strings.ReplaceAll(driver, ".", "-"), i)
	if len(node)+len(suffix) > 253 {
		node = strings.TrimRight(node[:253-len(suffix)], "-.")
	}
	return node + suffix
}
