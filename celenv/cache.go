package celenv

import "sync"

// cache is a bounded map from expression to compiled result. Lookups are
// lock-free (sync.Map); inserts evict the oldest entry once the bound is
// reached, under a mutex that lookups never take.
type cache[T any] struct {
	limit   int
	entries sync.Map // string → T
	mu      sync.Mutex
	order   []string // insertion order, guarded by mu
}

func newCache[T any](limit int) *cache[T] {
	return &cache[T]{limit: limit}
}

func (c *cache[T]) get(key string) (T, bool) {
	var zero T
	if c.limit <= 0 {
		return zero, false
	}
	v, ok := c.entries.Load(key)
	if !ok {
		return zero, false
	}
	return v.(T), true
}

// put stores v unless another caller stored the same key first, and returns
// whichever value is cached.
func (c *cache[T]) put(key string, v T) T {
	if c.limit <= 0 {
		return v
	}
	actual, loaded := c.entries.LoadOrStore(key, v)
	if loaded {
		return actual.(T)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order = append(c.order, key)
	for len(c.order) > c.limit {
		c.entries.Delete(c.order[0])
		c.order[0] = ""
		c.order = c.order[1:]
	}
	return v
}
