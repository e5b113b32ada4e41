package allocator

import resourceapi "k8s.io/api/resource/v1"

// PoolStatus is a resource pool as the allocator reads it: which of its slices it takes devices from.
// Code that counts a cluster's devices (free, used, stranded) counts what the allocator can give only
// if it reads pools the same way, and this is that rule, in one place.
type PoolStatus struct {
	// Generation is the pool's newest spec.pool.generation. The allocator reads only the slices of it:
	// those of older generations are left from before the driver republished the pool.
	Generation int64
	// Slices is how many slices of that generation are published, ResourceSliceCount how many its
	// spec.pool.resourceSliceCount says the pool has.
	Slices, ResourceSliceCount int64
}

// Complete reports whether every slice of the pool's newest generation is published. The allocator
// gives no device of an incomplete pool (and a request for all devices fails on it).
func (p PoolStatus) Complete() bool { return p.Slices == p.ResourceSliceCount }

// Reads reports whether the allocator takes devices from the slice, one of the pool's: the slice is of
// the newest generation and the pool is complete.
func (p PoolStatus) Reads(s *resourceapi.ResourceSlice) bool {
	return s != nil && s.Spec.Pool.Generation == p.Generation && p.Complete()
}

// PoolStatuses returns the status of every pool the slices publish, as the allocator with the feature
// gates f reads the pools (f.DRADeviceCompatibilityGroups off, a slice using compatibility groups is
// ignored, which leaves its pool incomplete). A nil slice is skipped.
//
// It gives what [Snapshot.PoolStatus] gives for a snapshot holding the same slices, for code that has
// the slices but no snapshot.
func PoolStatuses(f Features, slices []*resourceapi.ResourceSlice) map[PoolID]PoolStatus {
	out := map[PoolID]PoolStatus{}
	for _, s := range slices {
		if s == nil {
			continue
		}
		id := PoolID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name}
		p, seen := out[id]
		out[id] = p.add(f, !seen, s, usesCompatibilityGroups(s))
	}
	return out
}

// PoolStatus returns the status of the pool as the snapshot holds its slices, and whether it holds any.
func (s *Snapshot) PoolStatus(id PoolID) (PoolStatus, bool) {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	entries := s.st.poolSlices[id]
	var p PoolStatus
	for i, e := range entries {
		p = p.add(s.f, i == 0, e.obj, e.usesCompatibilityGroups)
	}
	return p, len(entries) > 0
}

// add counts one more slice of the pool (first: the first one), as upstream's GatherPools and
// IsIncomplete do (k8s.io/dynamic-resource-allocation/structured/internal/experimental/pools.go): a
// newer generation replaces what was counted, slices of an older one are dropped, the newest
// generation's slices are counted against its resourceSliceCount; with DRADeviceCompatibilityGroups
// off a slice using compatibility groups is not counted (poolGeneration: it still makes older
// generations obsolete).
func (p PoolStatus) add(f Features, first bool, s *resourceapi.ResourceSlice, compat bool) PoolStatus {
	gen := s.Spec.Pool.Generation
	switch {
	case first || gen > p.Generation:
		p = PoolStatus{Generation: gen, ResourceSliceCount: s.Spec.Pool.ResourceSliceCount}
	case gen < p.Generation:
		return p
	}
	if compat && !f.DRADeviceCompatibilityGroups {
		return p
	}
	p.Slices++
	return p
}

// usesCompatibilityGroups reports whether a device of the slice consumes counters with compatibility
// groups (the allocator ignores such a slice while DRADeviceCompatibilityGroups is off).
func usesCompatibilityGroups(s *resourceapi.ResourceSlice) bool {
	for i := range s.Spec.Devices {
		for _, c := range s.Spec.Devices[i].ConsumesCounters {
			if len(c.CompatibilityGroups) > 0 {
				return true
			}
		}
	}
	return false
}
