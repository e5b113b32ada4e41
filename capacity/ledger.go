package capacity

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Ledger is the running consumption of one device with allowMultipleAllocations: the sum of the consumed
// capacity of every share allocated on it. It answers whether one more share fits and is reversible, so a
// search can add a share, explore, and remove it again. Each operation costs O(number of capacities).
//
// The zero Ledger is not usable; create one with [NewLedger]. A Ledger is not safe for concurrent use.
type Ledger struct {
	names []resourceapi.QualifiedName // sorted
	value []resource.Quantity         // capacity value, parallel to names
	used  []resource.Quantity         // consumed so far, parallel to names
}

// NewLedger returns an empty ledger for a device with the given capacities (device.capacity of the
// ResourceSlice). The map is not retained.
func NewLedger(device map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) *Ledger {
	l := &Ledger{names: sortedNames(device)}
	l.value = make([]resource.Quantity, len(l.names))
	l.used = make([]resource.Quantity, len(l.names))
	for i, n := range l.names {
		l.value[i] = device[n].Value.DeepCopy()
		l.used[i] = *resource.NewQuantity(0, device[n].Value.Format)
	}
	return l
}

func (l *Ledger) index(name resourceapi.QualifiedName) int {
	lo, hi := 0, len(l.names)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.names[m] < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(l.names) && l.names[lo] == name {
		return lo
	}
	return -1
}

// Fits reports whether a share consuming consumed (as returned by [Consumed], or as recorded in an
// AllocationResult) fits next to what the ledger holds: for every capacity, used + consumed must not exceed
// the device's value. A capacity the device does not have never fits. Fits does not change the ledger.
func (l *Ledger) Fits(consumed map[resourceapi.QualifiedName]resource.Quantity) bool {
	for name, c := range consumed {
		i := l.index(name)
		if i < 0 {
			return false
		}
		sum := l.used[i].DeepCopy()
		sum.Add(c)
		if sum.Cmp(l.value[i]) > 0 {
			return false
		}
	}
	return true
}

// Add records a share. It does not check [Ledger.Fits]: an allocated claim read from the cluster is
// recorded even when it overcommits the device. Capacities the device does not have are ignored.
func (l *Ledger) Add(consumed map[resourceapi.QualifiedName]resource.Quantity) {
	for name, c := range consumed {
		if i := l.index(name); i >= 0 {
			l.used[i].Add(c)
		}
	}
}

// Remove takes back a share recorded with [Ledger.Add]; Add followed by Remove restores the ledger.
func (l *Ledger) Remove(consumed map[resourceapi.QualifiedName]resource.Quantity) {
	for name, c := range consumed {
		if i := l.index(name); i >= 0 {
			l.used[i].Sub(c)
		}
	}
}

// Used returns how much of a capacity the recorded shares consume (zero for an unknown capacity).
func (l *Ledger) Used(name resourceapi.QualifiedName) resource.Quantity {
	if i := l.index(name); i >= 0 {
		return l.used[i].DeepCopy()
	}
	return resource.Quantity{}
}

// Available returns how much of a capacity is left (value − used; negative when overcommitted), and false
// for a capacity the device does not have.
func (l *Ledger) Available(name resourceapi.QualifiedName) (resource.Quantity, bool) {
	i := l.index(name)
	if i < 0 {
		return resource.Quantity{}, false
	}
	a := l.value[i].DeepCopy()
	a.Sub(l.used[i])
	return a, true
}

// Clone returns an independent copy of the ledger.
func (l *Ledger) Clone() *Ledger {
	c := &Ledger{names: l.names, value: l.value, used: make([]resource.Quantity, len(l.used))}
	for i := range l.used {
		c.used[i] = l.used[i].DeepCopy()
	}
	return c
}
