package allocator

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The lookups below let code built on a Snapshot (placing pods across nodes, for one) read what the
// snapshot holds. They return the objects the snapshot keeps, not copies: the caller must not modify
// them (copy with DeepCopy first), as with the objects of an informer's cache. Lists are sorted by name,
// so that code iterating them is deterministic.

// Claim returns the ResourceClaim with the given namespace and name, and whether the snapshot has it.
func (s *Snapshot) Claim(namespace, name string) (*resourceapi.ResourceClaim, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.st.claims[types.NamespacedName{Namespace: namespace, Name: name}]
	if !ok {
		return nil, false
	}
	return e.obj, true
}

// Claims returns the ResourceClaims of the namespace, sorted by name; the empty namespace
// (metav1.NamespaceAll) lists the claims of every namespace, sorted by namespace and name.
func (s *Snapshot) Claims(namespace string) []*resourceapi.ResourceClaim {
	s.mu.RLock()
	var out []*resourceapi.ResourceClaim
	for key, e := range s.st.claims {
		if namespace == "" || key.Namespace == namespace {
			out = append(out, e.obj)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(x, y *resourceapi.ResourceClaim) int {
		if c := strings.Compare(x.Namespace, y.Namespace); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	return out
}

// Classes returns the DeviceClasses, sorted by name.
func (s *Snapshot) Classes() []*resourceapi.DeviceClass {
	s.mu.RLock()
	out := make([]*resourceapi.DeviceClass, 0, len(s.st.classes))
	for _, e := range s.st.classes {
		out = append(out, e.obj)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(x, y *resourceapi.DeviceClass) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// Nodes returns the Nodes added with [Snapshot.AddOrUpdateNode], sorted by name.
func (s *Snapshot) Nodes() []*v1.Node {
	s.mu.RLock()
	out := make([]*v1.Node, 0, len(s.st.nodes))
	for _, n := range s.st.nodes {
		out = append(out, n)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(x, y *v1.Node) int { return strings.Compare(x.Name, y.Name) })
	return out
}
