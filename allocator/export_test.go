package allocator

import (
	"cmp"
	"slices"

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
