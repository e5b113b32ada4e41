package allocator

import (
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/capacity"
)

// consumedMemo remembers capacity.Consumed by what it reads: a request's capacity requirements and a
// device's capacities. A fleet publishes few GPU models and its pods ask for few amounts, while a
// filter pass asks for the same amount on every device of every node, each answer a map of fresh
// quantities; remembered, the pass computes each distinct pair once. The snapshot's feature gates, the
// other input, are fixed for it and its forks, which share the memo. Safe for concurrent use.
type consumedMemo struct {
	mu sync.Mutex
	// caps numbers the distinct capacity contents; ids are never given twice (last), so that a
	// device's id stays valid when the map is dropped.
	caps map[string]uint64
	last uint64
	m    map[consumedKey]consumption
}

type consumedKey struct {
	caps uint64 // the device's capacities (capsID)
	req  string // the request's capacity requirements (requestKey)
}

type consumption struct {
	consumed map[resourceapi.QualifiedName]resource.Quantity // shared: not to be modified
	err      error
}

// memoLimit bounds the memo's maps: past it, they start again empty.
const memoLimit = 1 << 14

// capsIdent is a device's capacity content id, under the memo that gave it.
type capsIdent struct {
	memo *consumedMemo
	id   uint64
}

// consumed is capacity.Consumed of the requests (named reqKey by requestKey) on the device, from the
// memo when asked before. The map must not be modified.
func (m *consumedMemo) consumed(requests map[resourceapi.QualifiedName]resource.Quantity, reqKey string, d *deviceEntry, opts capacity.Options) (map[resourceapi.QualifiedName]resource.Quantity, error) {
	if m == nil {
		return capacity.Consumed(requests, d.api.Capacity, opts)
	}
	key := consumedKey{caps: m.capsID(d), req: reqKey}
	m.mu.Lock()
	c, ok := m.m[key]
	m.mu.Unlock()
	if ok {
		return c.consumed, c.err
	}
	c.consumed, c.err = capacity.Consumed(requests, d.api.Capacity, opts)
	m.mu.Lock()
	if m.m == nil || len(m.m) >= memoLimit {
		m.m = map[consumedKey]consumption{}
	}
	m.m[key] = c
	m.mu.Unlock()
	return c.consumed, c.err
}

// capsID is the id of the device's capacities: equal ids, equal capacities (values and request
// policies, as their JSON says them).
func (m *consumedMemo) capsID(d *deviceEntry) uint64 {
	if c := d.caches.caps.Load(); c != nil && c.memo == m {
		return c.id
	}
	names := make([]string, 0, len(d.api.Capacity))
	for n := range d.api.Capacity {
		names = append(names, string(n))
	}
	slices.Sort(names)
	var b []byte
	for _, n := range names {
		b = appendString(b, n)
		var ok bool
		if b, ok = appendJSON(b, d.api.Capacity[resourceapi.QualifiedName(n)]); !ok {
			// Not expected of a validated device; a content of its own, never equal to another's.
			b = append(b, "\x00unencodable"...)
			b = appendString(b, d.id.String())
		}
	}
	m.mu.Lock()
	if m.caps == nil || len(m.caps) >= memoLimit {
		m.caps = map[string]uint64{}
	}
	id, ok := m.caps[string(b)]
	if !ok {
		m.last++
		id = m.last
		m.caps[string(b)] = id
	}
	m.mu.Unlock()
	d.caches.caps.Store(&capsIdent{memo: m, id: id})
	return id
}

// requestKey names capacity requirements: the names in order, each with its quantity; never "" for
// requirements that name a capacity.
func requestKey(requests map[resourceapi.QualifiedName]resource.Quantity) string {
	var buf [4]string
	names := buf[:0]
	for n := range requests {
		names = append(names, string(n))
	}
	slices.Sort(names)
	var b []byte
	for _, n := range names {
		q := requests[resourceapi.QualifiedName(n)]
		b = appendString(b, n)
		b = appendString(b, q.String())
	}
	return string(b)
}
