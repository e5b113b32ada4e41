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
	s.ready()
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
	s.ready()
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

// ClaimsOwnedBy returns the ResourceClaims of the namespace whose controlling owner (an owner
// reference with controller: true) has the UID, sorted by name: the claims generated for a pod or a
// PodGroup. An index kept as claims change makes the call cost what it returns.
func (s *Snapshot) ClaimsOwnedBy(namespace string, owner types.UID) []*resourceapi.ResourceClaim {
	return s.claimsIndexed(func(st *state) []types.NamespacedName { return st.owned[owner] }, namespace)
}

// controllerUID is the UID of the claim's controlling owner, or "".
func controllerUID(claim *resourceapi.ResourceClaim) types.UID {
	for _, ref := range claim.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ref.UID
		}
	}
	return ""
}

// ClaimsReservedFor returns the ResourceClaims of the namespace whose status.reservedFor names a consumer
// with the UID, sorted by name: the claims a pod or PodGroup holds. An index kept as claims change makes
// the call cost what it returns.
func (s *Snapshot) ClaimsReservedFor(namespace string, consumer types.UID) []*resourceapi.ResourceClaim {
	return s.claimsIndexed(func(st *state) []types.NamespacedName { return st.reserved[consumer] }, namespace)
}

// claimsIndexed returns the claims of the namespace among those an index of the state lists for a UID.
func (s *Snapshot) claimsIndexed(index func(*state) []types.NamespacedName, namespace string) []*resourceapi.ResourceClaim {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*resourceapi.ResourceClaim
	for _, key := range index(s.st) {
		if key.Namespace == namespace {
			out = append(out, s.st.claims[key].obj)
		}
	}
	return out
}

// indexClaim adds the claim to the lookups by owner and by consumer.
func (st *state) indexClaim(claim *resourceapi.ResourceClaim) {
	key := types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}
	if uid := controllerUID(claim); uid != "" {
		addKey(st.owned, uid, key)
	}
	for _, r := range claim.Status.ReservedFor {
		if r.UID != "" {
			addKey(st.reserved, r.UID, key)
		}
	}
}

// unindexClaim removes what indexClaim added for the claim.
func (st *state) unindexClaim(claim *resourceapi.ResourceClaim) {
	key := types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}
	if uid := controllerUID(claim); uid != "" {
		removeKey(st.owned, uid, key)
	}
	for _, r := range claim.Status.ReservedFor {
		if r.UID != "" {
			removeKey(st.reserved, r.UID, key)
		}
	}
}

// addKey adds key to the sorted list of uid, once; the list is replaced, never edited, so that clones
// of the state may share it.
func addKey[K comparable](index map[K][]types.NamespacedName, uid K, key types.NamespacedName) {
	list := index[uid]
	i, found := slices.BinarySearchFunc(list, key, compareKeys)
	if found {
		return // a claim that names one consumer twice
	}
	index[uid] = slices.Insert(slices.Clone(list), i, key)
}

// removeKey removes key from the sorted list of uid, as addKey adds it.
func removeKey[K comparable](index map[K][]types.NamespacedName, uid K, key types.NamespacedName) {
	list := index[uid]
	i, found := slices.BinarySearchFunc(list, key, compareKeys)
	if !found {
		return
	}
	if len(list) == 1 {
		delete(index, uid)
		return
	}
	index[uid] = slices.Concat(list[:i], list[i+1:])
}

func compareKeys(x, y types.NamespacedName) int {
	if c := strings.Compare(x.Namespace, y.Namespace); c != 0 {
		return c
	}
	return strings.Compare(x.Name, y.Name)
}

// Classes returns the DeviceClasses, sorted by name.
func (s *Snapshot) Classes() []*resourceapi.DeviceClass {
	s.ready()
	s.mu.RLock()
	out := make([]*resourceapi.DeviceClass, 0, len(s.st.classes))
	for _, e := range s.st.classes {
		out = append(out, e.obj)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(x, y *resourceapi.DeviceClass) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// Device returns the device with the ID as the newest generation of its pool publishes it, and whether
// that generation has it.
func (s *Snapshot) Device(id DeviceID) (*resourceapi.Device, bool) {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	entries := s.st.poolSlices[PoolID{Driver: id.Driver, Pool: id.Pool}]
	var newest int64
	for i, e := range entries {
		if i == 0 || e.generation() > newest {
			newest = e.generation()
		}
	}
	for _, e := range entries {
		if e.generation() != newest {
			continue
		}
		for i := range e.obj.Spec.Devices {
			if e.obj.Spec.Devices[i].Name == id.Device {
				return &e.obj.Spec.Devices[i], true
			}
		}
	}
	return nil, false
}

// PoolNode returns the node whose own pool this is, and true: every slice the snapshot holds of the
// pool (any generation) names that node in spec.nodeName, none selects nodes per device, and none has
// another node's name. Only that node can be given the pool's devices, and what they take (devices,
// shares, capacity, the pool's shared counters) changes what no other node can get: code that keeps
// per-node answers learns from an allocation which nodes' answers it may have changed. False for a
// pool of network-attached devices (a node selector, or all nodes), one spanning nodes, and one the
// snapshot does not hold.
func (s *Snapshot) PoolNode(id PoolID) (string, bool) {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	entries := s.st.poolSlices[id]
	if len(entries) == 0 {
		return "", false
	}
	node := entries[0].nodeName
	for _, e := range entries {
		if e.nodeName == "" || e.nodeName != node || e.perDevice {
			return "", false
		}
	}
	return node, true
}

// CounterSets returns, per pool, the shared counter sets its newest generation publishes
// (spec.sharedCounters of its slices, in the order the slices were added): the capacity that devices'
// consumesCounters draw on, which code built on the snapshot needs to say how full a counter set is.
// Pools without counter sets are left out; the map is new, the counter sets are the snapshot's own. The
// call costs a look at each pool with counter sets and each slice without a node name, so a fleet
// without shared counters answers an empty map at once.
func (s *Snapshot) CounterSets() map[PoolID][]resourceapi.CounterSet {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[PoolID][]resourceapi.CounterSet{}
	add := func(id PoolID) {
		if _, done := out[id]; done {
			return
		}
		entries := s.st.poolSlices[id]
		var newest int64
		for i, e := range entries {
			if i == 0 || e.generation() > newest {
				newest = e.generation()
			}
		}
		var sets []resourceapi.CounterSet
		for _, e := range entries {
			if e.generation() == newest {
				sets = append(sets, e.obj.Spec.SharedCounters...)
			}
		}
		if len(sets) > 0 {
			out[id] = sets
		}
	}
	for id := range s.st.counterPools {
		add(id)
	}
	for _, e := range s.st.sharedSlices {
		if len(e.obj.Spec.SharedCounters) > 0 {
			add(e.pool)
		}
	}
	return out
}

// Node returns the Node of that name added with [Snapshot.AddOrUpdateNode] (the snapshot's own object:
// do not modify it); false when there is none.
func (s *Snapshot) Node(name string) (*v1.Node, bool) {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.st.nodes[name]
	return n, ok
}

// Nodes returns the Nodes added with [Snapshot.AddOrUpdateNode], sorted by name. The list is kept
// sorted as nodes change, so the call costs one copy.
func (s *Snapshot) Nodes() []*v1.Node {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.st.nodeList)
}

// addNode puts the node into nodeList. A node whose name sorts after every other (nodes listed in name
// order) is appended in place where the state owns the list, so that adding n nodes costs O(n), not
// O(n²); otherwise the list is replaced.
func (st *state) addNode(node *v1.Node) {
	l := st.nodeList
	if st.nodeListBy == st.id && len(l) > 0 && l[len(l)-1].Name < node.Name {
		st.nodeList = append(l, node)
		return
	}
	st.nodeList = withNode(l, node)
	st.nodeListBy = st.id
}

// withNode returns a new sorted list with node added or replacing the node of the same name; list is
// not modified (forks share it).
func withNode(list []*v1.Node, node *v1.Node) []*v1.Node {
	i, found := slices.BinarySearchFunc(list, node.Name, func(n *v1.Node, name string) int { return strings.Compare(n.Name, name) })
	out := make([]*v1.Node, 0, len(list)+1)
	out = append(out, list[:i]...)
	out = append(out, node)
	if found {
		i++
	}
	return append(out, list[i:]...)
}

// withoutNode returns a new list without the node of that name.
func withoutNode(list []*v1.Node, name string) []*v1.Node {
	i, found := slices.BinarySearchFunc(list, name, func(n *v1.Node, name string) int { return strings.Compare(n.Name, name) })
	if !found {
		return list
	}
	return slices.Concat(list[:i], list[i+1:])
}
