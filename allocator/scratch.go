package allocator

import (
	"sync"

	"github.com/dralloc/dralloc/celenv"
)

// Every Allocate call needs the same working state: per-claim slices, prepared requests, compiled
// selector slots and a few small maps. A filter pass calls Allocate once per node, so the state is kept
// in a sync.Pool and reused: in the common case a call on a node where the claims do not fit allocates
// nothing but its error, and a call where they fit allocates only the results it returns.
var allocations = sync.Pool{New: func() any { return new(allocation) }}

// chunk is the size of the first buffers for requests and selector slots; later ones double.
const chunk = 16

// scratch is the reusable part of an allocation.
type scratch struct {
	reqBuf   []request
	selBuf   []*celenv.Selector
	poolBuf  []*pool
	entryBuf []*sliceEntry
	byPool   []poolCandidates
	textBuf  []byte
	readBuf  []byte // deviceVerdicts' key
	spans    []classSpan
	rankBuf  []ranked // rankCandidates' list
	topo     topoScratch
	topoBest topoBest
	recent   recentSelectors
	names    recentNames
	limit    limitText
}

// recent remembers the last few values a scratch computed, by key. A filter pass asks every node with
// the same claims, and comparing a key with the remembered ones (strings by their pointers first, their
// bytes only when they were copied) costs less than computing the value again or looking it up in a
// shared cache. It keeps the keys and values, never a claim, until the scratch is dropped from the pool.
type recent[K comparable, V any] struct {
	keys [4]K
	vals [4]V
	n    int // entries filled
	next int // the entry put replaces
}

// get returns the value remembered for k.
func (r *recent[K, V]) get(k K) (V, bool) {
	for i := range r.n {
		if r.keys[i] == k {
			return r.vals[i], true
		}
	}
	var zero V
	return zero, false
}

// put remembers v for k in place of the oldest entry.
func (r *recent[K, V]) put(k K, v V) {
	r.keys[r.next], r.vals[r.next] = k, v
	r.next = (r.next + 1) % len(r.keys)
	r.n = min(r.n+1, len(r.keys))
}

// recentSelectors are the request selectors a scratch compiled last: comparing an expression with a
// remembered one is cheaper than the environment's cache, a concurrent map keyed by an interface.
type recentSelectors struct {
	recent[selectorKey, *celenv.Selector]
}

type selectorKey struct {
	env        *celenv.Env
	expression string
}

// compile is env.Compile of the expression, from the remembered ones when it is one of them. A failed
// compilation is not remembered: its error is reported once per call, as before.
func (r *recentSelectors) compile(env *celenv.Env, expression string) (*celenv.Selector, error) {
	k := selectorKey{env: env, expression: expression}
	if s, ok := r.get(k); ok {
		return s, nil
	}
	s, err := env.Compile(expression)
	if err != nil {
		return nil, err
	}
	r.put(k, s)
	return s, nil
}

// recentNames are the "request/subrequest" names a scratch joined last: a claim with subrequests names
// its chosen subrequest in the result of every node where it fits, and a remembered name is neither
// joined nor collected again.
type recentNames struct {
	recent[[2]string, string]
}

// join is parent + "/" + name, from the remembered names when it is one of them.
func (r *recentNames) join(parent, name string) string {
	k := [2]string{parent, name}
	if full, ok := r.get(k); ok {
		return full
	}
	full := parent + "/" + name
	r.put(k, full)
	return full
}

// limitText is the object and field of the last claim-limit error a scratch made (see
// claimLimitError): a filter pass refuses the same claim on every node.
type limitText struct {
	recent[limitKey, [2]string]
}

type limitKey struct {
	namespace, name string
	ri              int
}

// of returns the object and field that name request ri of the claim in errors (claimState.name and
// requestPath).
func (l *limitText) of(cs *claimState, ri int) (object, field string) {
	k := limitKey{namespace: cs.claim.Namespace, name: cs.claim.Name, ri: ri}
	text, ok := l.get(k)
	if !ok {
		text = [2]string{cs.name(), requestPath(ri)}
		l.put(k, text)
	}
	return text[0], text[1]
}

// classSpan is where the configuration of one class lies in a result's config list.
type classSpan struct {
	class      string
	start, end int
}

// poolCandidates are the slices of the newest generation of one pool that a node sees.
type poolCandidates struct {
	id     PoolID
	gen    int64
	slices []*sliceEntry
}

// getAllocation returns working state from the pool, as putAllocation left it (or new).
func getAllocation() *allocation { return allocations.Get().(*allocation) }

// putAllocation returns the state to the pool in the state the next call starts from: what points into
// the caller's objects and the snapshot is dropped, so that they can be collected, and what a call
// counts or fills is emptied (a map only when something is in it: clearing an empty map is not free).
func putAllocation(a *allocation) {
	a.ctx, a.s, a.st, a.node, a.claims = nil, nil, nil, nil, nil
	a.spent = 0
	a.clearSearch()
	a.topoBest.reset()
	a.found = false
	allocations.Put(a)
}

// clearSearch empties what a search fills, keeping the call's input, so that the state is the one the
// next call starts from, or a second search of the same call (AllocatePreferring's).
func (a *allocation) clearSearch() {
	a.pools = nil
	a.steps, a.twinsOnly, a.lastAll, a.prefer = 0, false, position{}, nil
	// A search again (AllocatePreferring's, quotaExceeded's, compareUnpreferred's) does not improve
	// unless startTopology says so; the best placement found stays in topoBest.
	a.found, a.topoBest.on = false, false
	a.quota, a.noQuota = nil, false
	a.short = shortfall{}
	a.indep = a.indep[:0]
	for i := range a.perClaim {
		a.perClaim[i].claim = nil
	}
	clearMap(a.matches)
	clearMap(a.derived)
	clearMap(a.shares)
	clearMap(a.ledgers)
	clearMap(a.owned)
	clearMap(a.counters)
	clearMap(a.readVerdicts)
	clear(a.reqBuf)
	clear(a.selBuf)
	clear(a.poolBuf)
	clear(a.entryBuf)
	clear(a.byPool)
	a.reqBuf, a.selBuf, a.entryBuf = a.reqBuf[:0], a.selBuf[:0], a.entryBuf[:0]
	a.taken.reset()
	a.topo.reset()
	a.resetTallies()
	a.bounds.reset()
	clear(a.pigeon.cs)
	for i := range a.sides {
		clear(a.sides[i].devices)
		clear(a.sides[i].counters)
	}
}

// clearMap empties m when it holds anything.
func clearMap[M ~map[K]V, K comparable, V any](m M) {
	if len(m) > 0 {
		clear(m)
	}
}

// grow returns s with length n, reusing its array when it is large enough. Elements keep their old
// values: callers overwrite them.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// newRequest returns a request slot that stays valid for the call: a full buffer is replaced, never
// grown in place, so pointers into it remain good.
func (a *allocation) newRequest() *request {
	if len(a.reqBuf) == cap(a.reqBuf) {
		a.reqBuf = make([]request, 0, max(chunk, 2*cap(a.reqBuf)))
	}
	a.reqBuf = a.reqBuf[:len(a.reqBuf)+1]
	return &a.reqBuf[len(a.reqBuf)-1]
}

// newSelectors returns n empty selector slots, valid for the call.
func (a *allocation) newSelectors(n int) []*celenv.Selector {
	if n == 0 {
		return nil
	}
	if cap(a.selBuf)-len(a.selBuf) < n {
		a.selBuf = make([]*celenv.Selector, 0, max(chunk, 2*cap(a.selBuf), n))
	}
	l := len(a.selBuf)
	a.selBuf = a.selBuf[:l+n]
	s := a.selBuf[l : l+n : l+n]
	clear(s)
	return s
}

// oneEntry returns a one-element slice holding e, valid for the call; appending to it copies.
func (a *allocation) oneEntry(e *sliceEntry) []*sliceEntry {
	if len(a.entryBuf) == cap(a.entryBuf) {
		a.entryBuf = make([]*sliceEntry, 0, max(chunk, 2*cap(a.entryBuf)))
	}
	l := len(a.entryBuf)
	a.entryBuf = append(a.entryBuf, e)
	return a.entryBuf[l : l+1 : l+1]
}
