package allocator

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DeviceUse is what the allocated claims of a snapshot hold of one device, as the allocator counts it
// (results with adminAccess hold nothing, as upstream's allocated-device tracking leaves them out).
type DeviceUse struct {
	// Exclusive is the number of allocations of the whole device, Shares the number of shares of it
	// (results with a shareID).
	Exclusive, Shares int
	// Consumed is the capacity the shares consume, summed per capacity name; nil when none. It is the
	// snapshot's own map: do not modify it.
	Consumed map[resourceapi.QualifiedName]resource.Quantity
}

// Held reports whether any claim holds the device, whole or a share of it.
func (u DeviceUse) Held() bool { return u.Exclusive > 0 || u.Shares > 0 }

// DeviceUse returns what the snapshot's allocated claims hold of the device: a lookup in the state the
// snapshot keeps as claims change, without a walk over the claims.
func (s *Snapshot) DeviceUse(id DeviceID) DeviceUse {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return DeviceUse{Exclusive: s.st.inUse[id], Shares: s.st.shares[id], Consumed: s.st.consumed[id]}
}

// PoolUse returns a stamp of the allocated state of the pool's devices: it changes whenever a claim
// holding one of them is allocated or freed, and two snapshots (a snapshot and its forks among them)
// that give one stamp for a pool have the same devices of it in use, so that a value derived from the
// pool's DeviceUse may be kept while the stamp stays. A pool none of whose devices was ever allocated
// stamps 0.
func (s *Snapshot) PoolUse(id PoolID) uint64 {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.poolUse[id]
}
