package inventory

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// engineCapacities are the capacity names of a MIG device with the counter
// each one becomes in a GPU's counter set, in NVIDIA's driver's order.
var engineCapacities = [7]struct{ capacity, counter string }{
	{CapMultiprocessors, CounterMultiprocessors},
	{CapCopyEngines, CounterCopyEngines},
	{CapDecoders, CounterDecoders},
	{CapEncoders, CounterEncoders},
	{CapJPEGEngines, CounterJPEGEngines},
	{CapOFAEngines, CounterOFAEngines},
	{CapMemory, CounterMemory},
}

// engines lists a profile's figures in engineCapacities order.
func engines(p *MIGProfile) [7]int64 {
	return [7]int64{p.Multiprocessors, p.CopyEngines, p.Decoders, p.Encoders, p.JPEGEngines, p.OFAEngines, p.MemoryBytes}
}

// maxEngines is, per capacity, the largest figure of any profile that has a
// placement. NVIDIA's driver sizes a GPU's counter set, and the capacity of
// the whole GPU in dynamic MIG mode, this way (cmd/gpu-kubelet-plugin/nvlib.go,
// inspectMigProfilesAndPlacements and setMax, at the commit named in doc.go).
// It is what the largest profile has, so the whole GPU consumes every counter,
// but it also means that small profiles together may be held to less than the
// GPU could give them (seven 1g.10gb on an H100 need 7 decoders; the 7g.80gb
// has 5, so only five fit), which is NVIDIA's outcome and so ours.
func maxEngines(g *GPU) [7]int64 {
	var out [7]int64
	for i := range g.MIGProfiles {
		p := &g.MIGProfiles[i]
		if len(p.Placements) == 0 {
			continue
		}
		for k, n := range engines(p) {
			out[k] = max(out[k], n)
		}
	}
	return out
}

// binary is a quantity in the BinarySI format NVIDIA's driver writes every
// capacity and counter in, so that the serialised slices are the same.
func binary(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.BinarySI) }

// engineCounters turns per-capacity figures into counters, zeros included:
// NVIDIA's driver publishes a counter for every capacity of the profile, even
// one of zero.
func engineCounters(e [7]int64) map[string]resourceapi.Counter {
	out := make(map[string]resourceapi.Counter, len(e))
	for i, n := range e {
		out[engineCapacities[i].counter] = resourceapi.Counter{Value: binary(n)}
	}
	return out
}

// engineCapacity turns per-capacity figures into device capacities.
func engineCapacity(e [7]int64) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, len(e))
	for i, n := range e {
		out[resourceapi.QualifiedName(engineCapacities[i].capacity)] = resourceapi.DeviceCapacity{Value: binary(n)}
	}
	return out
}

// addMemorySlices adds a counter of 1 for each memory slice of [start, start+size).
func addMemorySlices(counters map[string]resourceapi.Counter, start, size int) map[string]resourceapi.Counter {
	for i := start; i < start+size; i++ {
		counters[MemorySliceCounter(i)] = resourceapi.Counter{Value: binary(1)}
	}
	return counters
}

// counterSet is the counter set of one GPU in dynamic MIG mode: one counter
// per capacity, at the largest figure of any profile, and one counter of 1 per
// memory slice. The whole GPU consumes all of it; a placement consumes its
// profile's figures and its memory slices, so that overlapping placements,
// and the whole GPU with any placement, exclude each other.
func counterSet(g *GPU) resourceapi.CounterSet {
	return resourceapi.CounterSet{
		Name:     CounterSetName(g.Minor),
		Counters: addMemorySlices(engineCounters(maxEngines(g)), 0, g.memorySlices()),
	}
}

// placementCounters is what a device of profile p at placement pl consumes.
func placementCounters(p *MIGProfile, pl Placement) map[string]resourceapi.Counter {
	return addMemorySlices(engineCounters(engines(p)), pl.Start, pl.Size)
}
