package allocator

import (
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// fleetCache is what NodeClasses calls under one signature found of nodes, kept across calls, states
// and forks: each node's class key (by id) with what the key was computed from, so that the next call
// checks that instead of building the key again. Building a key reads every pool of the node and, for
// a node with devices in use, every device; checking it is a few comparisons, and none where the state
// did not change since (a filter pass over a fleet that stands still is a lookup per node).
//
// A key depends on the node (its name, its declared features, its labels where slices select nodes),
// on the pools gathered for it (which follow from the node's slice list, the shared slice list and, in
// the stable implementation, the slices with shared counters: listKeys and counterRev name these
// immutable lists and sets), on the classes of those pools under the signature (which follow from the
// pools, fixed once built, and the signature's classes and selectors) and on the allocated state of the
// node's own pools (which state.poolUse stamps). Slices and taint rules change the slice lists (taint
// rules replace every entry), device classes the signature, claims the stamps; a node is compared by
// value. A fork shares the cache: the lists and stamps of a state it did not change are the parent's.
type fleetCache struct {
	mu sync.Mutex
	// nodes holds, by node name, the key last computed for the node.
	nodes map[string]*nodeKey
	// order holds the keys by the position of their node in the list AppendClasses was last given.
	order []orderEntry
	// keys numbers the distinct class keys met.
	keys map[string]int32
	// shared numbers the pools a key names by identity (network-attached pools), keeping them alive so
	// that no other pool takes their address.
	shared map[*pool]uint32
}

func newFleetCache() *fleetCache {
	return &fleetCache{nodes: map[string]*nodeKey{}, keys: map[string]int32{}, shared: map[*pool]uint32{}}
}

// nodeKey is a node's class key (id, in fleetCache.keys) and what it was computed from.
type nodeKey struct {
	id   int32
	name string
	// state, rev: the state the key was last found to hold in; there it holds as long as the node
	// does.
	state, rev uint64
	// What gatherKey gave (see gathered).
	local, shared listKey
	counters      uint64
	// declaredRead: the key holds whether the node declares DRAOptionalNodeOperations (declared),
	// which only nodes with devices that skip node operations need.
	declaredRead, declared bool
	byNode                 bool
	labels                 map[string]string // when byNode; a copy
	// use stamps the allocated state of the node's own pools.
	use []poolStamp
}

// orderEntry is a key at the position of its node in a list of nodes, with the object classified
// there and the state the key was found to hold in then. plain: the key reads nothing of the node but
// its name (no labels, no declared features), so that for the same object in the same state it holds
// without a look at the key.
type orderEntry struct {
	node       *v1.Node
	name       string
	k          *nodeKey
	state, rev uint64
	id         int32
	plain      bool
}

// poolStamp is a pool's state.poolUse stamp (0: none).
type poolStamp struct {
	pool  PoolID
	stamp uint64
}

// holds reports whether the key holds for the node in the state; it notes the state if so.
func (k *nodeKey) holds(st *state, f Features, node *v1.Node) bool {
	if k.byNode && !maps.Equal(k.labels, node.Labels) ||
		k.declaredRead && k.declared != nodeDeclares(node.Status.DeclaredFeatures, "DRAOptionalNodeOperations") {
		return false
	}
	if k.state == st.id && k.rev == st.rev {
		return true
	}
	g, byNode := gatherKey(st, f, st.nodeSlices[node.Name])
	if g.local != k.local || g.shared != k.shared || g.counters != k.counters || byNode != k.byNode {
		return false
	}
	for _, u := range k.use {
		if st.poolUse[u.pool] != u.stamp {
			return false
		}
	}
	k.state, k.rev = st.id, st.rev
	return true
}

// fleet returns the signature's fleet cache, a new one when it holds far more than the state's fleet
// (nodes deleted, keys of states long gone): a call keeps the cache it started with. fc.mu is never
// taken while holding classCache.mu: key computation takes classCache.mu under fc.mu.
func (c *classCache) fleet(sig *classSig, st *state) *fleetCache {
	c.mu.Lock()
	fc := sig.fleet
	c.mu.Unlock()
	if fc != nil {
		limit := 4*(len(st.nodes)+len(st.nodeSlices)+len(st.sharedSlices)) + 64
		fc.mu.Lock()
		big := len(fc.nodes) > limit || len(fc.keys) > limit || len(fc.shared) > limit || len(fc.order) > limit
		fc.mu.Unlock()
		if !big {
			return fc
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sig.fleet == fc {
		sig.fleet = newFleetCache()
	}
	return sig.fleet
}
