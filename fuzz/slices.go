package fuzz

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
)

func nodeName(i int) string { return fmt.Sprintf("node-%d", i) }

func qty(s string) resource.Quantity { return resource.MustParse(s) }

// drawSlices draws the ResourceSlices of the cluster: per node a GPU pool (optionally with partitions), and
// optionally a network-attached NIC pool and a pool with per-device node selection.
func drawSlices(t *rapid.T, opts Options, nodes []*v1.Node) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	for _, node := range nodes {
		pool := node.Name + "-gpu"
		var devices []resourceapi.Device
		n := rapid.IntRange(0, opts.MaxDevices).Draw(t, "gpus")
		for j := 0; j < n; j++ {
			devices = append(devices, drawGPU(t, opts, fmt.Sprintf("gpu-%d", j)))
		}
		var parts []resourceapi.Device
		var counters []resourceapi.CounterSet
		if opts.Partitionable && rapid.Bool().Draw(t, "partitionable") {
			parts, counters = drawPartitions(t, opts)
		}
		if opts.MIG && rapid.Bool().Draw(t, "mig") {
			migs, sets := drawMIG(t, opts)
			parts, counters = append(parts, migs...), append(counters, sets...)
		}
		nodeSel := func(s *resourceapi.ResourceSlice) { s.Spec.NodeName = ptr.To(node.Name) }
		out = append(out, buildPool(t, opts, GPUDriver, pool, devices, parts, counters, nodeSel)...)
		if opts.ResultLimit && rapid.Bool().Draw(t, "vfs") {
			n := rapid.IntRange(15, 36).Draw(t, "vfCount")
			vfs := make([]resourceapi.Device, n)
			for j := range vfs {
				vfs[j] = resourceapi.Device{Name: fmt.Sprintf("vf-%d", j), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"speed": {IntValue: ptr.To(int64(10))},
					"zone":  {StringValue: ptr.To(node.Labels[ZoneLabel])},
				}}
			}
			out = append(out, buildPool(t, opts, NICDriver, node.Name+"-vfs", vfs, nil, nil, nodeSel)...)
		}
	}
	if opts.NetworkAttached && rapid.Bool().Draw(t, "network") {
		n := rapid.IntRange(1, opts.MaxDevices).Draw(t, "nics")
		var devices []resourceapi.Device
		for j := 0; j < n; j++ {
			devices = append(devices, drawNIC(t, opts, fmt.Sprintf("nic-%d", j)))
		}
		var sel func(s *resourceapi.ResourceSlice)
		if rapid.Bool().Draw(t, "allNodes") {
			sel = func(s *resourceapi.ResourceSlice) { s.Spec.AllNodes = ptr.To(true) }
		} else {
			zone := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "fabricZone")
			sel = func(s *resourceapi.ResourceSlice) { s.Spec.NodeSelector = zoneSelector(zone) }
		}
		out = append(out, buildPool(t, opts, NICDriver, "fabric", devices, nil, nil, sel)...)
	}
	if opts.PerDeviceNodeSelection && rapid.Bool().Draw(t, "perDevice") {
		n := rapid.IntRange(1, opts.MaxDevices).Draw(t, "rackDevices")
		var devices []resourceapi.Device
		for j := 0; j < n; j++ {
			d := drawGPU(t, opts, fmt.Sprintf("accel-%d", j))
			switch rapid.IntRange(0, 2).Draw(t, "deviceNodes") {
			case 0:
				d.NodeName = ptr.To(nodeName(rapid.IntRange(0, len(nodes)-1).Draw(t, "deviceNode")))
			case 1:
				d.AllNodes = ptr.To(true)
			default:
				d.NodeSelector = zoneSelector(rapid.SampledFrom([]string{"a", "b"}).Draw(t, "deviceZone"))
			}
			devices = append(devices, d)
		}
		sel := func(s *resourceapi.ResourceSlice) { s.Spec.PerDeviceNodeSelection = ptr.To(true) }
		out = append(out, buildPool(t, opts, GPUDriver, "rack", devices, nil, nil, sel)...)
	}
	return out
}

func zoneSelector(zone string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: ZoneLabel, Operator: v1.NodeSelectorOpIn, Values: []string{zone}}},
	}}}
}

// buildPool spreads devices over one or more slices of one pool, adds a slice with the shared counters and the
// partitions when there are any, and, with IncompletePools, leaves the pool incomplete or adds an obsolete slice.
func buildPool(t *rapid.T, opts Options, driver, pool string, devices, parts []resourceapi.Device, counters []resourceapi.CounterSet, nodeSel func(*resourceapi.ResourceSlice)) []*resourceapi.ResourceSlice {
	var groups [][]resourceapi.Device
	nSlices := 1
	if opts.MultiSlicePools && len(devices) > 1 {
		nSlices = rapid.IntRange(1, 2).Draw(t, "slicesPerPool")
	}
	for s := 0; s < nSlices; s++ {
		groups = append(groups, nil)
	}
	for i, d := range devices {
		groups[i%nSlices] = append(groups[i%nSlices], d)
	}
	if len(parts) > 0 {
		groups = append(groups, parts)
	}
	generation := int64(rapid.IntRange(2, 3).Draw(t, "generation"))
	var skip []resourceapi.SkipNodeOperation
	if opts.NodeOperations && rapid.IntRange(0, 2).Draw(t, "skipNodeOperations") == 0 {
		skip = []resourceapi.SkipNodeOperation{rapid.SampledFrom([]resourceapi.SkipNodeOperation{"*", resourceapi.SkipNodeOperationNodeUnprepareResources}).Draw(t, "skip")}
	}
	var out []*resourceapi.ResourceSlice
	mk := func(name string) *resourceapi.ResourceSlice {
		s := &resourceapi.ResourceSlice{}
		s.Name = name
		s.Spec.Driver = driver
		s.Spec.Pool = resourceapi.ResourcePool{Name: pool, Generation: generation}
		s.Spec.SkipNodeOperations = skip
		nodeSel(s)
		return s
	}
	for i, g := range groups {
		s := mk(fmt.Sprintf("%s-%s-%d", pool, driverShort(driver), i))
		s.Spec.Devices = g
		out = append(out, s)
	}
	if len(counters) > 0 {
		s := mk(fmt.Sprintf("%s-%s-counters", pool, driverShort(driver)))
		s.Spec.SharedCounters = counters
		out = append(out, s)
	}
	count := int64(len(out))
	var stale *resourceapi.ResourceSlice
	if opts.IncompletePools {
		switch rapid.IntRange(0, 7).Draw(t, "poolState") {
		case 0:
			// A slice is still missing: the pool is incomplete.
			count++
		case 1:
			// A leftover slice of an older generation: ignored.
			stale = mk(fmt.Sprintf("%s-%s-old", pool, driverShort(driver)))
			stale.Spec.Pool.Generation = generation - 1
			stale.Spec.Pool.ResourceSliceCount = 1
			stale.Spec.Devices = []resourceapi.Device{{Name: "stale"}}
			if ptr.Deref(stale.Spec.PerDeviceNodeSelection, false) {
				// A device of a pool with per-device node selection names its nodes, as every device
				// of such a slice must: a node that left the cluster, so that no node sees the old
				// generation without the newer one (Kubernetes would then take the old one as complete).
				stale.Spec.Devices[0].NodeName = ptr.To("retired-node")
			}
		}
	}
	for _, s := range out {
		s.Spec.Pool.ResourceSliceCount = count
	}
	if stale != nil {
		out = append(out, stale)
	}
	return out
}

func driverShort(driver string) string {
	if driver == NICDriver {
		return "nic"
	}
	return "gpu"
}

func drawGPU(t *rapid.T, opts Options, name string) resourceapi.Device {
	d := resourceapi.Device{Name: name}
	d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"model":         {StringValue: ptr.To(rapid.SampledFrom([]string{"a100", "h100"}).Draw(t, "model"))},
		"numa":          {IntValue: ptr.To(int64(rapid.IntRange(0, 1).Draw(t, "numa")))},
		"healthy":       {BoolValue: ptr.To(rapid.Bool().Draw(t, "healthy"))},
		"driverVersion": {VersionValue: ptr.To(rapid.SampledFrom([]string{"1.2.0", "1.3.0"}).Draw(t, "version"))},
	}
	if opts.ListAttributes {
		d.Attributes["links"] = resourceapi.DeviceAttribute{IntValues: drawLinks(t)}
	}
	d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"memory": {Value: qty(rapid.SampledFrom([]string{"40Gi", "80Gi"}).Draw(t, "memory"))},
	}
	drawDeviceExtras(t, opts, &d)
	return d
}

func drawLinks(t *rapid.T) []int64 {
	var links []int64
	for l := int64(0); l < 3; l++ {
		if rapid.Bool().Draw(t, "link") {
			links = append(links, l)
		}
	}
	if len(links) == 0 {
		links = []int64{3}
	}
	return links
}

// drawDeviceExtras adds taints and binding conditions.
func drawDeviceExtras(t *rapid.T, opts Options, d *resourceapi.Device) {
	if opts.Taints && rapid.IntRange(0, 4).Draw(t, "tainted") == 0 {
		d.Taints = []resourceapi.DeviceTaint{drawTaint(t)}
	}
	if opts.BindingConditions && rapid.IntRange(0, 3).Draw(t, "binding") == 0 {
		d.BindingConditions = []string{"example.com/attached"}
		d.BindingFailureConditions = []string{"example.com/attach-failed"}
		d.BindsToNode = ptr.To(rapid.Bool().Draw(t, "bindsToNode"))
	}
}

var taintKeys = []string{"example.com/unhealthy", "example.com/maintenance"}

func drawTaint(t *rapid.T) resourceapi.DeviceTaint {
	return resourceapi.DeviceTaint{
		Key:    rapid.SampledFrom(taintKeys).Draw(t, "taintKey"),
		Value:  rapid.SampledFrom([]string{"", "true"}).Draw(t, "taintValue"),
		Effect: rapid.SampledFrom([]resourceapi.DeviceTaintEffect{resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute, resourceapi.DeviceTaintEffectNone}).Draw(t, "taintEffect"),
	}
}

func drawNIC(t *rapid.T, opts Options, name string) resourceapi.Device {
	d := resourceapi.Device{Name: name}
	d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"speed": {IntValue: ptr.To(int64(rapid.SampledFrom([]int{10, 100}).Draw(t, "speed")))},
		"zone":  {StringValue: ptr.To(rapid.SampledFrom([]string{"a", "b"}).Draw(t, "nicZone"))},
	}
	bw := resourceapi.DeviceCapacity{Value: qty("100G")}
	if opts.ConsumableCapacity && rapid.Bool().Draw(t, "shareable") {
		d.AllowMultipleAllocations = ptr.To(true)
		switch rapid.IntRange(0, 2).Draw(t, "policy") {
		case 0:
			bw.RequestPolicy = &resourceapi.CapacityRequestPolicy{
				Default:    ptr.To(qty("10G")),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(qty("1G")), Step: ptr.To(qty("1G"))},
			}
		case 1:
			bw.RequestPolicy = &resourceapi.CapacityRequestPolicy{
				Default:     ptr.To(qty("25G")),
				ValidValues: []resource.Quantity{qty("25G"), qty("50G"), qty("100G")},
			}
		}
	}
	d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"bandwidth": bw}
	if ptr.Deref(d.AllowMultipleAllocations, false) && rapid.Bool().Draw(t, "cores") {
		// Fractional request policy: with DRAFractionalCapacityRange a request of 250m consumes 300m, without it
		// the arithmetic is done on integers.
		d.Capacity["cores"] = resourceapi.DeviceCapacity{Value: qty("4"), RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default:    ptr.To(qty("500m")),
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(qty("100m")), Step: ptr.To(qty("100m"))},
		}}
	}
	drawDeviceExtras(t, opts, &d)
	return d
}

// drawPartitions draws one or two physical GPUs published as partitions that consume shared counters, like MIG:
// a full device, two halves and a small slice per GPU, all drawing on the GPU's counter set.
func drawPartitions(t *rapid.T, opts Options) ([]resourceapi.Device, []resourceapi.CounterSet) {
	var devices []resourceapi.Device
	var sets []resourceapi.CounterSet
	n := rapid.IntRange(1, 2).Draw(t, "physical")
	for p := 0; p < n; p++ {
		set := fmt.Sprintf("gpu-%d-counters", p)
		sets = append(sets, resourceapi.CounterSet{Name: set, Counters: map[string]resourceapi.Counter{
			"memory": {Value: qty("40Gi")},
			"sms":    {Value: qty("8")},
		}})
		model := rapid.SampledFrom([]string{"a100", "h100"}).Draw(t, "partModel")
		part := func(name, mem, sms string) resourceapi.Device {
			d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d-%s", p, name)}
			d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"model":         {StringValue: ptr.To(model)},
				"numa":          {IntValue: ptr.To(int64(p % 2))},
				"healthy":       {BoolValue: ptr.To(true)},
				"driverVersion": {VersionValue: ptr.To("1.3.0")},
				"profile":       {StringValue: ptr.To(name)},
			}
			if opts.ListAttributes {
				d.Attributes["links"] = resourceapi.DeviceAttribute{IntValues: drawLinks(t)}
			}
			d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: qty(mem)}}
			c := resourceapi.DeviceCounterConsumption{CounterSet: set, Counters: map[string]resourceapi.Counter{
				"memory": {Value: qty(mem)},
				"sms":    {Value: qty(sms)},
			}}
			if opts.CompatibilityGroups {
				c.CompatibilityGroups = drawGroups(t)
			}
			d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{c}
			drawDeviceExtras(t, opts, &d)
			return d
		}
		devices = append(devices, part("full", "40Gi", "8"), part("half-0", "20Gi", "4"), part("half-1", "20Gi", "4"))
		if rapid.Bool().Draw(t, "small") {
			devices = append(devices, part("small", "10Gi", "2"))
		}
	}
	return devices, sets
}

func drawGroups(t *rapid.T) []string {
	switch rapid.IntRange(0, 3).Draw(t, "groups") {
	case 0:
		return nil
	case 1:
		return []string{"g1"}
	case 2:
		return []string{"g2"}
	default:
		return []string{"g1", "g2"}
	}
}

// migPlacements are the MIG profiles of an 80 GB GPU with eight memory slices and seven compute slices, as
// NVIDIA's driver publishes them: the memory slices each placement starts at, how many it takes, and its
// compute slices. The whole GPU takes everything.
var migPlacements = []struct {
	profile string
	starts  []int
	slices  int
	compute int
}{
	{"1g.10gb", []int{0, 1, 2, 3, 4, 5, 6}, 1, 1},
	{"2g.20gb", []int{0, 2, 4}, 2, 2},
	{"3g.40gb", []int{0, 4}, 4, 3},
	{"4g.40gb", []int{0}, 4, 4},
	{"7g.80gb", []int{0}, 8, 7},
	{"whole", []int{0}, 8, 7},
}

// migProfileSelector selects the devices of one MIG profile (or "whole" for whole GPUs published next to
// them); it is false, not an error, on devices without a profile.
func migProfileSelector(profile string) string {
	return fmt.Sprintf(`"profile" in device.attributes["gpu.example.com"] && device.attributes["gpu.example.com"].profile == %q`, profile)
}

// drawMIG draws one or two GPUs in dynamic MIG mode (see Options.MIG): per GPU a counter set and fifteen
// devices drawing on it, each MIG placement consuming its memory slices.
func drawMIG(t *rapid.T, opts Options) ([]resourceapi.Device, []resourceapi.CounterSet) {
	var devices []resourceapi.Device
	var sets []resourceapi.CounterSet
	n := rapid.IntRange(1, 2).Draw(t, "migGPUs")
	for g := 0; g < n; g++ {
		set := fmt.Sprintf("mig-%d-counters", g)
		total := map[string]resourceapi.Counter{"memory": {Value: qty("80Gi")}, "compute": {Value: qty("7")}}
		for m := 0; m < 8; m++ {
			total[fmt.Sprintf("memory-slice-%d", m)] = resourceapi.Counter{Value: qty("1")}
		}
		sets = append(sets, resourceapi.CounterSet{Name: set, Counters: total})
		model := rapid.SampledFrom([]string{"a100", "h100"}).Draw(t, "migModel")
		for _, p := range migPlacements {
			for _, start := range p.starts {
				name := fmt.Sprintf("mig-%d-%s-%d", g, strings.ReplaceAll(p.profile, ".", ""), start)
				mem := fmt.Sprintf("%dGi", 10*p.slices)
				d := resourceapi.Device{Name: name}
				d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"model":         {StringValue: ptr.To(model)},
					"numa":          {IntValue: ptr.To(int64(g % 2))},
					"healthy":       {BoolValue: ptr.To(true)},
					"driverVersion": {VersionValue: ptr.To("1.3.0")},
					"profile":       {StringValue: ptr.To(p.profile)},
				}
				if opts.ListAttributes {
					d.Attributes["links"] = resourceapi.DeviceAttribute{IntValues: drawLinks(t)}
				}
				d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: qty(mem)}}
				used := map[string]resourceapi.Counter{"memory": {Value: qty(mem)}, "compute": {Value: qty(fmt.Sprint(p.compute))}}
				for m := start; m < start+p.slices; m++ {
					used[fmt.Sprintf("memory-slice-%d", m)] = resourceapi.Counter{Value: qty("1")}
				}
				c := resourceapi.DeviceCounterConsumption{CounterSet: set, Counters: used}
				if opts.CompatibilityGroups {
					c.CompatibilityGroups = drawGroups(t)
				}
				d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{c}
				drawDeviceExtras(t, opts, &d)
				devices = append(devices, d)
			}
		}
	}
	return devices, sets
}
