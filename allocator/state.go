package allocator

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/taints"
)

// state is everything a Snapshot knows. Its maps belong to one snapshot; the values in them (entries,
// lists, objects) are immutable and shared between a snapshot and its forks, so a fork copies only the
// maps. Every change replaces a value instead of editing it.
type state struct {
	id  uint64 // distinct for every state and clone (see stateIDs)
	rev uint64 // incremented by every change
	seq uint64 // insertion counter for slices

	slices       map[string]*sliceEntry
	nodeSlices   map[string][]*sliceEntry // by spec.nodeName, in insertion order
	sharedSlices []*sliceEntry            // slices without spec.nodeName, in insertion order
	poolSlices   map[PoolID][]*sliceEntry // all slices of a pool, in insertion order
	// counterPools counts, per pool, the node-local slices with shared counters (see gatherPools);
	// counterRev identifies that set of slices: it is renewed, unique across states, whenever one is
	// added or removed, so that pools gathered from them are not reused after a change. A count per pool
	// rather than a list of the slices keeps the change of one slice independent of the fleet's size.
	counterPools map[PoolID]int
	counterRev   uint64

	classes map[string]*classEntry
	claims  map[types.NamespacedName]*claimEntry
	rules   map[string]*resourceapi.DeviceTaintRule
	taints  *taints.Evaluator // nil when there are no rules
	nodes   map[string]*v1.Node

	// The allocated state, derived from claims with status.allocation.
	inUse map[DeviceID]int // exclusive allocations
	// holders are the claims holding each device exclusively, sorted by namespace and name: an
	// explanation names the first, and must not scan every claim of the cluster to find it.
	holders  map[DeviceID][]types.NamespacedName
	shares   map[DeviceID]int                                             // allocated shares
	consumed map[DeviceID]map[resourceapi.QualifiedName]resource.Quantity // summed consumed capacity of shares
	// shareIDs counts the share IDs of allocated shares per device; inner maps are replaced, never
	// modified, so that clones may share them.
	shareIDs map[DeviceID]map[types.UID]int
	// poolUse stamps, per pool, the last change of its devices' allocated state with a number unique
	// across states and clones (from stateIDs): two states with one stamp for a pool, or none, have the
	// same devices of it in use, so node classes computed in one hold for the other (see fleetCache).
	poolUse map[PoolID]uint64

	// Indexes for the lookups (lookup.go); a change replaces a list instead of editing it, so forks
	// share them. owned lists, per controlling owner's UID, the claims it owns, and reserved, per
	// consumer UID in status.reservedFor, the claims reserved for it; nodeList is nodes
	// sorted by name. nodeListBy is the id of the state that allocated nodeList's backing array: that
	// state alone may append to it in place (its clones see only their own length of it).
	owned      map[types.UID][]types.NamespacedName
	reserved   map[types.UID][]types.NamespacedName
	nodeList   []*v1.Node
	nodeListBy uint64
}

func newState() *state {
	return &state{
		id:         stateIDs.Add(1),
		slices:     map[string]*sliceEntry{},
		nodeSlices: map[string][]*sliceEntry{},
		poolSlices: map[PoolID][]*sliceEntry{},
		classes:    map[string]*classEntry{},
		claims:     map[types.NamespacedName]*claimEntry{},
		owned:      map[types.UID][]types.NamespacedName{},
		reserved:   map[types.UID][]types.NamespacedName{},
		rules:      map[string]*resourceapi.DeviceTaintRule{},
		nodes:      map[string]*v1.Node{},
		inUse:      map[DeviceID]int{},
		holders:    map[DeviceID][]types.NamespacedName{},
		shares:     map[DeviceID]int{},
		consumed:   map[DeviceID]map[resourceapi.QualifiedName]resource.Quantity{},
		shareIDs:   map[DeviceID]map[types.UID]int{},
		poolUse:    map[PoolID]uint64{},
	}
}

// clone copies the maps; values are shared (they are immutable).
func (st *state) clone() *state {
	c := *st
	c.id = stateIDs.Add(1)
	c.slices = maps.Clone(st.slices)
	c.nodeSlices = maps.Clone(st.nodeSlices)
	c.poolSlices = maps.Clone(st.poolSlices)
	c.counterPools = maps.Clone(st.counterPools)
	c.classes = maps.Clone(st.classes)
	c.claims = maps.Clone(st.claims)
	c.owned = maps.Clone(st.owned)
	c.reserved = maps.Clone(st.reserved)
	c.rules = maps.Clone(st.rules)
	c.nodes = maps.Clone(st.nodes)
	c.inUse = maps.Clone(st.inUse)
	c.holders = maps.Clone(st.holders)
	c.shares = maps.Clone(st.shares)
	c.consumed = maps.Clone(st.consumed)
	c.shareIDs = maps.Clone(st.shareIDs)
	c.poolUse = maps.Clone(st.poolUse)
	return &c
}

// insertSlice adds an entry to the indexes (the name must be free).
func (st *state) insertSlice(e *sliceEntry) {
	st.slices[e.name()] = e
	if e.nodeName != "" {
		st.nodeSlices[e.nodeName] = insertBySeq(st.nodeSlices[e.nodeName], e)
	} else {
		st.sharedSlices = insertBySeq(st.sharedSlices, e)
	}
	st.poolSlices[e.pool] = insertBySeq(st.poolSlices[e.pool], e)
	if e.nodeName != "" && len(e.obj.Spec.SharedCounters) > 0 {
		if st.counterPools == nil {
			st.counterPools = map[PoolID]int{}
		}
		st.counterPools[e.pool]++
		st.counterRev = stateIDs.Add(1)
	}
}

// removeSlice drops an entry from the indexes.
func (st *state) removeSlice(e *sliceEntry) {
	delete(st.slices, e.name())
	if e.nodeName != "" {
		if l := without(st.nodeSlices[e.nodeName], e); len(l) > 0 {
			st.nodeSlices[e.nodeName] = l
		} else {
			delete(st.nodeSlices, e.nodeName)
		}
	} else {
		st.sharedSlices = without(st.sharedSlices, e)
	}
	if e.nodeName != "" && len(e.obj.Spec.SharedCounters) > 0 {
		if st.counterPools[e.pool]--; st.counterPools[e.pool] <= 0 {
			delete(st.counterPools, e.pool)
		}
		st.counterRev = stateIDs.Add(1)
	}
	if l := without(st.poolSlices[e.pool], e); len(l) > 0 {
		st.poolSlices[e.pool] = l
	} else {
		delete(st.poolSlices, e.pool)
	}
}

// insertBySeq returns a new list with e placed by insertion order; the old list is not changed.
func insertBySeq(list []*sliceEntry, e *sliceEntry) []*sliceEntry {
	i, _ := slices.BinarySearchFunc(list, e.seq, func(x *sliceEntry, seq uint64) int {
		switch {
		case x.seq < seq:
			return -1
		case x.seq > seq:
			return 1
		}
		return 0
	})
	out := make([]*sliceEntry, 0, len(list)+1)
	out = append(out, list[:i]...)
	out = append(out, e)
	return append(out, list[i:]...)
}

// without returns a new list without e; the old list is not changed.
func without(list []*sliceEntry, e *sliceEntry) []*sliceEntry {
	out := make([]*sliceEntry, 0, len(list))
	for _, x := range list {
		if x != e {
			out = append(out, x)
		}
	}
	return out
}

// claimEntry is a claim as the snapshot keeps it, with what its allocation contributes to the allocated
// state.
type claimEntry struct {
	obj   *resourceapi.ResourceClaim
	usage []deviceUsage
}

// deviceUsage is one allocated device of a claim.
type deviceUsage struct {
	id       DeviceID
	shared   bool
	shareID  types.UID
	consumed map[resourceapi.QualifiedName]resource.Quantity
}

// usageOf lists what an allocated claim holds, as the Kubernetes scheduler derives its allocated state:
// results with adminAccess hold nothing; with consumable capacity, results with a share ID hold a share
// (and their consumed capacity); everything else holds the device exclusively.
func usageOf(claim *resourceapi.ResourceClaim, f Features) []deviceUsage {
	if claim.Status.Allocation == nil {
		return nil
	}
	var out []deviceUsage
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess {
			continue
		}
		u := deviceUsage{id: DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}}
		if f.DRAConsumableCapacity && r.ShareID != nil {
			u.shared = true
			u.shareID = *r.ShareID
			u.consumed = r.ConsumedCapacity
		}
		out = append(out, u)
	}
	return out
}

// useMark names what a value prepared from one pool's allocated devices (its counter state, a slice's
// devices in use) was built for: the pool's poolUse stamp, which names those devices in every state,
// and the state (ID and revision) it was last found to hold in, which a call compares first.
type useMark struct{ stateID, rev, stamp uint64 }

// holdsIn reports whether the value was last found to hold in st as it is now.
func (m useMark) holdsIn(st *state) bool { return m.stateID == st.id && m.rev == st.rev }

// markIn is the mark of a value for the pool prepared in st.
func markIn(st *state, pool PoolID) useMark {
	return useMark{stateID: st.id, rev: st.rev, stamp: st.poolUse[pool]}
}

// applyUsage adds (sign 1) or removes (sign -1) the usage of the claim key.
func (st *state) applyUsage(key types.NamespacedName, usage []deviceUsage, sign int) {
	if len(usage) > 0 {
		stamp := stateIDs.Add(1)
		for _, u := range usage {
			st.poolUse[PoolID{Driver: u.id.Driver, Pool: u.id.Pool}] = stamp
		}
	}
	for _, u := range usage {
		if !u.shared {
			addCount(st.inUse, u.id, sign)
			if sign > 0 {
				addKey(st.holders, u.id, key)
			} else {
				removeKey(st.holders, u.id, key)
			}
			continue
		}
		addCount(st.shares, u.id, sign)
		st.countShareID(u.id, u.shareID, sign)
		if u.consumed == nil {
			continue
		}
		sum := make(map[resourceapi.QualifiedName]resource.Quantity, len(u.consumed))
		for n, q := range st.consumed[u.id] {
			sum[n] = q.DeepCopy()
		}
		for n, q := range u.consumed {
			v := sum[n]
			if sign > 0 {
				v.Add(q)
			} else {
				v.Sub(q)
			}
			sum[n] = v
		}
		empty := true
		for _, q := range sum {
			if !q.IsZero() {
				empty = false
				break
			}
		}
		if empty && st.shares[u.id] == 0 {
			delete(st.consumed, u.id)
		} else {
			st.consumed[u.id] = sum
		}
	}
}

// countShareID adds (sign 1) or removes (sign -1) one use of a share ID on a device, replacing the
// device's map.
func (st *state) countShareID(id DeviceID, shareID types.UID, sign int) {
	ids := maps.Clone(st.shareIDs[id])
	if ids == nil {
		ids = map[types.UID]int{}
	}
	if n := ids[shareID] + sign; n > 0 {
		ids[shareID] = n
	} else {
		delete(ids, shareID)
	}
	if len(ids) == 0 {
		delete(st.shareIDs, id)
		return
	}
	st.shareIDs[id] = ids
}

func addCount(m map[DeviceID]int, id DeviceID, delta int) {
	if n := m[id] + delta; n > 0 {
		m[id] = n
	} else {
		delete(m, id)
	}
}

// allocated reports whether a device is allocated in the cluster in any way (exclusively or shared), as
// the Kubernetes allocator's IsDeviceAllocated.
func (st *state) allocated(id DeviceID) bool {
	if st.inUse[id] > 0 || st.shares[id] > 0 {
		return true
	}
	_, ok := st.consumed[id]
	return ok
}
