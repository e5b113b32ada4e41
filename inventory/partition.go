package inventory

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// engines lists a profile's engine counts in counter order.
func engines(p *MIGProfile) [6]int64 {
	return [6]int64{p.Multiprocessors, p.CopyEngines, p.Decoders, p.Encoders, p.JPEGEngines, p.OFAEngines}
}

var engineCounters = [6]string{CounterMultiprocessors, CounterCopyEngines, CounterDecoders, CounterEncoders, CounterJPEGEngines, CounterOFAEngines}

// counterSet is the counter set of one GPU in dynamic MIG mode: one counter
// per engine kind and one counter of 1 per memory slice.
//
// An engine counter's value is the most of that engine any valid combination
// of MIG devices uses together: placements that do not share a memory slice,
// at most InstanceCount of each profile. So the counters never reject a
// combination the GPU accepts, while still enforcing limits the memory slices
// alone do not (for example a profile allowed only once). The memory slices
// make overlapping placements, and the whole GPU with any placement, exclude
// each other. Engine kinds no profile has are left out.
func counterSet(g *GPU) resourceapi.CounterSet {
	caps := maxEngines(g)
	counters := map[string]resourceapi.Counter{}
	for i, name := range engineCounters {
		if caps[i] > 0 {
			counters[name] = resourceapi.Counter{Value: *resource.NewQuantity(caps[i], resource.DecimalSI)}
		}
	}
	for i := range g.memorySlices() {
		counters[MemorySliceCounter(i)] = resourceapi.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
	}
	return resourceapi.CounterSet{Name: CounterSetName(g.Minor), Counters: counters}
}

// placementCounters is what a device of profile p at placement pl consumes.
func placementCounters(p *MIGProfile, pl Placement) map[string]resourceapi.Counter {
	counters := map[string]resourceapi.Counter{}
	for i, n := range engines(p) {
		if n > 0 {
			counters[engineCounters[i]] = resourceapi.Counter{Value: *resource.NewQuantity(n, resource.DecimalSI)}
		}
	}
	for i := pl.Start; i < pl.Start+pl.Size; i++ {
		counters[MemorySliceCounter(i)] = resourceapi.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
	}
	return counters
}

// maxEngineSteps bounds the search in maxEngines; beyond it the bound falls
// back to a sum that is larger but still safe.
const maxEngineSteps = 1 << 20

// maxEngines returns, per engine kind, the largest total over all sets of
// placements that share no memory slice and use each profile at most its
// InstanceCount times. The search walks memory slices left to right, at each
// either leaving the slice empty or starting a placement there, so every such
// set is visited once.
func maxEngines(g *GPU) [6]int64 {
	n := g.memorySlices()
	type choice struct {
		prof int
		size int
	}
	starts := make([][]choice, n)
	limits := make([]int, len(g.MIGProfiles))
	for i := range g.MIGProfiles {
		p := &g.MIGProfiles[i]
		limits[i] = p.InstanceCount
		if limits[i] <= 0 {
			limits[i] = len(p.Placements)
		}
		for _, pl := range p.Placements {
			starts[pl.Start] = append(starts[pl.Start], choice{i, pl.Size})
		}
	}
	var best, cur [6]int64
	used := make([]int, len(g.MIGProfiles))
	steps := 0
	var walk func(s int) bool
	walk = func(s int) bool {
		if steps++; steps > maxEngineSteps {
			return false
		}
		if s >= n {
			for i := range best {
				best[i] = max(best[i], cur[i])
			}
			return true
		}
		if !walk(s + 1) {
			return false
		}
		for _, c := range starts[s] {
			if used[c.prof] >= limits[c.prof] || s+c.size > n {
				continue
			}
			e := engines(&g.MIGProfiles[c.prof])
			used[c.prof]++
			for i := range cur {
				cur[i] += e[i]
			}
			ok := walk(s + c.size)
			for i := range cur {
				cur[i] -= e[i]
			}
			used[c.prof]--
			if !ok {
				return false
			}
		}
		return true
	}
	if walk(0) {
		return best
	}
	// Too many combinations to search: every profile at its instance limit
	// is an upper bound of any valid combination.
	var sum [6]int64
	for i := range g.MIGProfiles {
		e := engines(&g.MIGProfiles[i])
		for k := range sum {
			sum[k] += e[k] * int64(limits[i])
		}
	}
	return sum
}
