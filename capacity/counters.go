package capacity

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Counters tracks the shared counters of one resource pool (spec.sharedCounters of its ResourceSlices) while
// partitionable devices that consume them are allocated, together with the compatibility groups of those
// devices. It answers whether one more device fits and is reversible, so a search can add a device, explore,
// and remove it again. Each operation costs O(size of the device's consumesCounters).
//
// As in the Kubernetes 1.37 allocator:
//
//   - a device fits when, after adding its consumesCounters, no counter of the pool is overdrawn; a pool
//     that is already overdrawn by allocated devices therefore admits no further counter-consuming device;
//   - consumption of a counter set or counter the pool does not define is ignored (API validation forbids it);
//   - compatibility groups (DRADeviceCompatibilityGroups): on each counter set, a device that declares groups
//     may join only when every device already drawing on that set declares groups and one of its groups is
//     declared by all of them; a device without groups may join only devices without groups.
//
// One difference is deliberate: when allocated devices already break the compatibility rule on a counter set
// (a device with groups next to one without), Kubernetes' answer depends on the order in which it reads the
// slices; Counters admits no further device on that set.
//
// The zero Counters is not usable; create one with [NewCounters]. A Counters is not safe for concurrent use.
type Counters struct {
	sets      map[string]*counterSet
	overdrawn int // counters with remaining < 0
	// err is the first counter value that fails ValidateQuantity; such a pool admits no device that
	// consumes counters.
	err error
}

type counterSet struct {
	remaining map[string]*resource.Quantity
	// compatibility groups of the devices drawing on this set
	members int
	noGroup int
	groups  map[string]int
}

// NewCounters returns the counters of a pool with nothing consumed. sets is the union of the sharedCounters
// of the pool's slices; it is not retained. A counter set or counter that appears twice keeps its last value.
//
// A counter value that fails [ValidateQuantity] is not used for arithmetic: it is reported by
// [Counters.Err], and no device that consumes counters fits the pool.
func NewCounters(sets []resourceapi.CounterSet) *Counters {
	c := &Counters{sets: make(map[string]*counterSet, len(sets))}
	badSet, badName := -1, ""
	for i, s := range sets {
		cs := c.set(s.Name)
		for name, v := range s.Counters {
			if err := ValidateQuantity(v.Value); err != nil {
				// Report the first in set order, then name order, whatever the map order.
				if badSet < 0 || (i == badSet && name < badName) {
					badSet, badName = i, name
					c.err = fmt.Errorf("sharedCounters[%d].counters[%s].value: %w", i, name, err)
				}
				continue
			}
			q := v.Value.DeepCopy()
			if old, ok := cs.remaining[name]; ok && old.Sign() < 0 {
				c.overdrawn--
			}
			cs.remaining[name] = &q
			if q.Sign() < 0 {
				c.overdrawn++
			}
		}
	}
	return c
}

func (c *Counters) set(name string) *counterSet {
	cs, ok := c.sets[name]
	if !ok {
		cs = &counterSet{remaining: map[string]*resource.Quantity{}}
		c.sets[name] = cs
	}
	return cs
}

// Fits reports whether a device with these consumesCounters can be allocated next to the devices already
// added: its compatibility groups are admitted on every counter set it draws on and no counter of the pool
// ends up overdrawn. A device that consumes no counters always fits. Fits does not change the counters.
//
// A device whose consumesCounters hold a quantity that fails [ValidateQuantity] does not fit, and neither
// does any counter-consuming device when [Counters.Err] is not nil.
func (c *Counters) Fits(consumes []resourceapi.DeviceCounterConsumption) bool {
	if len(consumes) == 0 {
		return true
	}
	if c.err != nil || validateConsumption(consumes) != nil {
		return false
	}
	for _, dc := range consumes {
		if !c.admits(dc.CounterSet, dc.CompatibilityGroups) {
			return false
		}
	}
	// Apply, look, undo: the exact answer even when one device lists the same counter twice.
	c.apply(consumes, false)
	ok := c.overdrawn == 0
	c.apply(consumes, true)
	return ok
}

// Add records an allocated device. It does not check [Counters.Fits]: devices allocated in the cluster are
// recorded even when they overdraw the pool.
func (c *Counters) Add(consumes []resourceapi.DeviceCounterConsumption) {
	c.apply(consumes, false)
	for _, dc := range consumes {
		c.fold(dc.CounterSet, dc.CompatibilityGroups, 1)
	}
}

// Remove takes back a device recorded with [Counters.Add]; Add followed by Remove restores the counters.
func (c *Counters) Remove(consumes []resourceapi.DeviceCounterConsumption) {
	c.apply(consumes, true)
	for _, dc := range consumes {
		c.fold(dc.CounterSet, dc.CompatibilityGroups, -1)
	}
}

// Err reports the first counter value of the pool (in the order of the sets, then by counter name) that
// fails [ValidateQuantity], naming it, or nil. The error wraps [ErrUnboundedQuantity].
func (c *Counters) Err() error { return c.err }

// Remaining returns what is left of one counter (negative when overdrawn), and false when the pool does not
// define it.
func (c *Counters) Remaining(counterSet, counter string) (resource.Quantity, bool) {
	cs, ok := c.sets[counterSet]
	if !ok {
		return resource.Quantity{}, false
	}
	q, ok := cs.remaining[counter]
	if !ok {
		return resource.Quantity{}, false
	}
	return q.DeepCopy(), true
}

func (c *Counters) apply(consumes []resourceapi.DeviceCounterConsumption, giveBack bool) {
	for _, dc := range consumes {
		cs, ok := c.sets[dc.CounterSet]
		if !ok {
			continue
		}
		for name, v := range dc.Counters {
			q, ok := cs.remaining[name]
			if !ok || ValidateQuantity(v.Value) != nil {
				continue // an unbounded amount is never computed with (see Fits)
			}
			before := q.Sign() < 0
			if giveBack {
				q.Add(v.Value)
			} else {
				q.Sub(v.Value)
			}
			after := q.Sign() < 0
			switch {
			case before && !after:
				c.overdrawn--
			case !before && after:
				c.overdrawn++
			}
		}
	}
}

// admits applies the compatibility-group rule of one counter set.
func (c *Counters) admits(set string, groups []string) bool {
	cs, ok := c.sets[set]
	if !ok || cs.members == 0 {
		return true
	}
	if cs.noGroup > 0 && cs.noGroup < cs.members {
		return false // already inconsistent: see the type's documentation
	}
	if len(groups) == 0 {
		return cs.noGroup == cs.members
	}
	if cs.noGroup > 0 {
		return false
	}
	for _, g := range groups {
		if cs.groups[g] == cs.members {
			return true
		}
	}
	return false
}

// fold adds (delta 1) or removes (delta -1) one device's groups on a counter set.
func (c *Counters) fold(set string, groups []string, delta int) {
	cs := c.set(set)
	cs.members += delta
	if len(groups) == 0 {
		cs.noGroup += delta
		return
	}
	if cs.groups == nil {
		cs.groups = map[string]int{}
	}
	for i, g := range groups {
		if dup(groups[:i], g) {
			continue
		}
		cs.groups[g] += delta
		if cs.groups[g] == 0 {
			delete(cs.groups, g)
		}
	}
}

func dup(seen []string, g string) bool {
	for _, s := range seen {
		if s == g {
			return true
		}
	}
	return false
}
