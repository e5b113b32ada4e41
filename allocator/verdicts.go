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
// as before. The first verdicts sit in the device's caches themselves (a call asks one or two selectors
// of most devices: its class's and its request's), later ones in a list that hangs off them; a lookup
// is a few atomic loads and a scan of a few pointers, with no hashing and no allocation, and one that
// the first slots answer reads no memory beyond the device's caches: on a large fleet most devices a
// call meets are not in the processor's caches, and every pointer followed is a miss. Copies of an
// entry that share its CEL view share the verdicts. It is safe for concurrent use: a slot is claimed by
// one writer, which sets its verdict bit before it publishes the selector; writers replace the list,
// readers never see it change.
type verdicts struct {
	first   [inlineVerdicts]atomic.Pointer[celenv.Selector]
	matches atomic.Uint32 // bit i: first[i] matches
	claimed atomic.Uint32 // slots of first claimed by writers (may exceed inlineVerdicts)
	list    atomic.Pointer[[]verdict]
}

// inlineVerdicts is how many verdicts a device keeps in its caches before it uses the list.
const inlineVerdicts = 4

type verdict struct {
	sel     *celenv.Selector
	matches bool
}

func (v *verdicts) get(sel *celenv.Selector) (matches, ok bool) {
	for i := range v.first {
		// A slot claimed but not yet published reads nil; a later one may already be published.
		if v.first[i].Load() == sel {
			return v.matches.Load()&(1<<i) != 0, true
		}
	}
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
	if v.claimed.Load() < inlineVerdicts {
		if i := v.claimed.Add(1) - 1; i < inlineVerdicts {
			// Only this writer writes slot i: the bit first, so that a reader that sees the selector
			// sees its verdict.
			if matches {
				v.matches.Or(1 << i)
			}
			v.first[i].Store(sel)
			return
		}
	}
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
