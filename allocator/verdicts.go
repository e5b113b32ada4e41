package allocator

import (
	"sync"
	"sync/atomic"

	"github.com/dralloc/dralloc/celenv"
)

// maxVerdicts bounds the verdict cache; when it is full it starts afresh.
const maxVerdicts = 1 << 20

// verdictCache remembers whether a compiled selector matched a prepared device. Both are immutable, so a
// verdict never goes stale: a changed slice gets new device entries and a changed expression compiles to
// another selector. Only successful evaluations are cached, so errors are reported as before. It is safe
// for concurrent use.
type verdictCache struct {
	m sync.Map // verdictKey → bool
	n atomic.Int64
}

type verdictKey struct {
	sel *celenv.Selector
	dev *deviceEntry
}

func (c *verdictCache) get(sel *celenv.Selector, d *deviceEntry) (matches, ok bool) {
	v, ok := c.m.Load(verdictKey{sel, d})
	if !ok {
		return false, false
	}
	return v.(bool), true
}

func (c *verdictCache) put(sel *celenv.Selector, d *deviceEntry, matches bool) {
	if c.n.Add(1) > maxVerdicts {
		c.m.Clear()
		c.n.Store(0)
	}
	c.m.Store(verdictKey{sel, d}, matches)
}
