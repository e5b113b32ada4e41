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
	var fits func(d *deviceEntry) bool
	if b.layout.dense {
		b.state = b.layout.emptyState()
		for _, list := range [][]*sliceEntry{p.slices, p.others} {
			for _, e := range list {
				compiled := b.layout.slice(e)
				if compiled == nil {
					continue
				}
				for _, d := range e.devices() {
					if a.st.allocated(d.id) {
						b.state.add(&compiled[d.idx], 1)
					}
				}
			}
		}
		fits = func(d *deviceEntry) bool {
			dc := b.layout.dev(d)
			return len(d.api.ConsumesCounters) == 0 || dc != nil && b.state.fits(dc)
		}
	} else {
		c := a.freshCounters(p)
		fits = func(d *deviceEntry) bool { return c.Fits(d.api.ConsumesCounters) }
	}
	for _, e := range p.slices {
		for _, d := range e.devices() {
			b.admits = append(b.admits, !d.counters || fits(d))
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
			for _, d := range e.devices() {
				if len(d.api.ConsumesCounters) > 0 && a.st.allocated(d.id) {
					c.Add(d.api.ConsumesCounters)
				}
			}
		}
	}
	return c
}
