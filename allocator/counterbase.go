package allocator

import (
	"sync/atomic"

	"github.com/dralloc/dralloc/capacity"
)

// stateIDs numbers states: a state and each of its clones get distinct IDs, so that (ID, rev) names one
// content of the allocated state.
var stateIDs atomic.Uint64

// counterBase is what the allocated state leaves of a pool's shared counters, prepared once per change
// of the pool's allocated devices instead of once per call: the dense counter state (see tally.go) and
// the verdict of the counters on every device of the pool's node slices, in the order visitCandidates
// visits them. It is immutable once built.
type counterBase struct {
	mark   useMark
	layout *counterLayout // the pool's
	state  tallyState     // when layout.dense
	admits []bool
}

// baseCounters returns the prepared counters of p for the call's state. They are built again only when
// the pool's own allocated devices changed (its poolUse stamp): a claim allocated or freed on one node
// leaves every other pool's base as it was, and a state found to hold it is noted, so that the next
// call in that state compares two numbers. Pools are shared between the calls of a filter pass (and
// between snapshots and forks), so the value is swapped atomically; concurrent calls may build it
// twice.
func (a *allocation) baseCounters(p *pool) *counterBase {
	old := p.base.Load()
	if old != nil && old.mark.holdsIn(a.st) {
		return old
	}
	mark := markIn(a.st, p.id)
	if old != nil && old.mark.stamp == mark.stamp {
		noted := *old
		noted.mark = mark
		p.base.Store(&noted)
		return &noted
	}
	b := &counterBase{mark: mark, layout: p.layout}
	// The API objects, indexed like the device entries: those of p.others (other nodes' slices) need
	// not be prepared.
	var slow *capacity.Counters
	if b.layout.dense {
		b.state = b.layout.emptyState()
		for _, list := range [][]*sliceEntry{p.slices, p.others} {
			for _, e := range list {
				compiled := b.layout.slice(e)
				if compiled == nil {
					continue
				}
				for i := range e.obj.Spec.Devices {
					if a.st.allocated(e.deviceID(i)) {
						b.state.add(&compiled[i], 1)
					}
				}
			}
		}
	} else {
		slow = a.freshCounters(p)
	}
	n := 0
	for _, e := range p.slices {
		n += len(e.obj.Spec.Devices)
	}
	b.admits = make([]bool, 0, n)
	for _, e := range p.slices {
		var compiled []devCounters
		if slow == nil {
			compiled = b.layout.slice(e)
		}
		for i := range e.obj.Spec.Devices {
			ok := true
			switch cc := e.obj.Spec.Devices[i].ConsumesCounters; {
			case len(cc) == 0:
			case slow != nil:
				ok = slow.Fits(cc)
			default:
				ok = compiled != nil && b.state.fits(&compiled[i])
			}
			b.admits = append(b.admits, ok)
		}
	}
	p.base.Store(b)
	return b
}

// freshCounters returns the shared counters of a pool with what the devices allocated in the cluster
// consume (on any node).
func (a *allocation) freshCounters(p *pool) *capacity.Counters {
	c := capacity.NewCounters(p.counterSets)
	for _, list := range [][]*sliceEntry{p.slices, p.others} {
		for _, e := range list {
			for i := range e.obj.Spec.Devices {
				if cc := e.obj.Spec.Devices[i].ConsumesCounters; len(cc) > 0 && a.st.allocated(e.deviceID(i)) {
					c.Add(cc)
				}
			}
		}
	}
	return c
}
