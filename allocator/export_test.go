package allocator

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// SnapshotObjects returns what a snapshot holds, for tests that check its integrity from outside: its
// slices, classes, taint rules and claims, each sorted by name.
func SnapshotObjects(s *Snapshot) (slices_ []*resourceapi.ResourceSlice, classes []*resourceapi.DeviceClass, rules []*resourceapi.DeviceTaintRule, claims []*resourceapi.ResourceClaim) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.st.slices {
		slices_ = append(slices_, e.obj)
	}
	for _, e := range s.st.classes {
		classes = append(classes, e.obj)
	}
	for _, r := range s.st.rules {
		rules = append(rules, r)
	}
	for _, e := range s.st.claims {
		claims = append(claims, e.obj)
	}
	slices.SortFunc(slices_, func(a, b *resourceapi.ResourceSlice) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(classes, func(a, b *resourceapi.DeviceClass) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(rules, func(a, b *resourceapi.DeviceTaintRule) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(claims, func(a, b *resourceapi.ResourceClaim) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return slices_, classes, rules, claims
}

// CountersFromScratch compares, for every pool the node sees (all must be usable), the prepared counter state of the
// snapshot's allocated state (the dense state and every device's verdict) with capacity.Counters
// recomputed from the allocated devices. It returns the first difference, or "".
func CountersFromScratch(s *Snapshot, node *v1.Node) (string, error) {
	var diff string
	err := s.do(context.Background(), node, nil, func(a *allocation) (bool, error) {
		pools, err := a.gatherPools(node)
		if err != nil {
			return false, err
		}
		for _, p := range pools {
			if p.incomplete || p.invalid {
				diff = fmt.Sprintf("pool %s not usable", p.id)
				return false, nil
			}
			b := a.baseCounters(p)
			ref := a.freshCounters(p)
			j := 0
			for _, e := range p.slices {
				for _, d := range e.devices() {
					if want := !d.counters || ref.Fits(d.api.ConsumesCounters); b.admits[j] != want {
						diff = fmt.Sprintf("pool %s, device %s: prepared verdict %v, recomputed %v", p.id, d.id, b.admits[j], want)
						return false, nil
					}
					j++
				}
			}
			if !b.layout.dense {
				continue
			}
			b.layout.eachCounter(func(set, name string, i int32) {
				q, ok := ref.Remaining(set, name)
				if v, exact := q.AsInt64(); diff == "" && (!ok || !exact || v != b.state.remaining[i]) {
					diff = fmt.Sprintf("pool %s, counter %s/%s: prepared %d left, recomputed %s", p.id, set, name, b.state.remaining[i], q.String())
				}
			})
			if diff != "" {
				return false, nil
			}
		}
		return true, nil
	})
	return diff, err
}

// PreparedCounters returns, for each pool the node sees, the identity of its prepared counter state:
// the backing array of its device verdicts (nil for a pool without node devices), which stays the same
// exactly while the prepared state is reused.
func PreparedCounters(s *Snapshot, node *v1.Node) (ids []*bool, err error) {
	err = s.do(context.Background(), node, nil, func(a *allocation) (bool, error) {
		pools, err := a.gatherPools(node)
		if err != nil {
			return false, err
		}
		for _, p := range pools {
			var id *bool
			if b := a.baseCounters(p); len(b.admits) > 0 {
				id = &b.admits[0]
			}
			ids = append(ids, id)
		}
		return true, nil
	})
	return ids, err
}
