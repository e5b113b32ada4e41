package allocator

import (
	"sync/atomic"

	"github.com/dralloc/dralloc/celenv"
)

// maxVerdicts bounds the verdicts remembered per device; when the list is full the oldest is dropped.
const maxVerdicts = 64

// verdicts remembers whether compiled selectors matched a prepared device. Both are immutable, so a
// verdict never goes stale: a changed slice gets new device entries (with a new list) and a changed
// expression compiles to another selector. Only successful evaluations are kept, so errors are reported
// as before. The list hangs off the device: a lookup is one atomic load and a scan of a few pointers,
// with no hashing and no allocation. Copies of an entry that share its CEL view share the list. It is
// safe for concurrent use: writers replace the list, readers never see it change.
type verdicts struct {
	list atomic.Pointer[[]verdict]
}

type verdict struct {
	sel     *celenv.Selector
	matches bool
}

func (v *verdicts) get(sel *celenv.Selector) (matches, ok bool) {
	l := v.list.Load()
	if l == nil {
		return false, false
	}
	for _, x := range *l {
		if x.sel == sel {
			return x.matches, true
		}
	}
	return false, false
}

func (v *verdicts) put(sel *celenv.Selector, matches bool) {
	for {
		old := v.list.Load()
		var prev []verdict
		if old != nil {
			prev = *old
		}
		if len(prev) >= maxVerdicts {
			prev = prev[1:]
		}
		next := make([]verdict, len(prev), len(prev)+1)
		copy(next, prev)
		next = append(next, verdict{sel: sel, matches: matches})
		if v.list.CompareAndSwap(old, &next) {
			return
		}
	}
}
