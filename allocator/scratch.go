package allocator

import (
	"strconv"
	"sync"

	resourceapi "k8s.io/api/resource/v1"

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
	recent   recentSelectors
	names    recentNames
	limit    limitText
}

// recentSelectors remembers the request selectors this scratch compiled last. A filter pass asks
// every node with the same claims, and comparing an expression with one remembered here (the string's
// pointer first, its bytes only when it was copied) is cheaper than the environment's cache, a
// concurrent map keyed by an interface. It keeps the expressions' strings and the environments they
// were compiled in, never a claim, until the scratch is dropped from the pool.
type recentSelectors struct {
	entries [4]recentSelector
	next    int
}

type recentSelector struct {
	env        *celenv.Env
	expression string
	sel        *celenv.Selector
}

// compile is env.Compile of the expression, from the remembered ones when it is one of them. A failed
// compilation is not remembered: its error is reported once per call, as before.
func (r *recentSelectors) compile(env *celenv.Env, expression string) (*celenv.Selector, error) {
	for i := range r.entries {
		if e := &r.entries[i]; e.env == env && e.expression == expression && e.sel != nil {
			return e.sel, nil
		}
	}
	s, err := env.Compile(expression)
	if err != nil {
		return nil, err
	}
	r.entries[r.next] = recentSelector{env: env, expression: expression, sel: s}
	r.next = (r.next + 1) % len(r.entries)
	return s, nil
}

// recentNames remembers the "request/subrequest" names this scratch built last. A filter pass asks
// every node with the same claims, and a claim with subrequests names its chosen subrequest in the result
// of every node where it fits: comparing the two names with remembered ones (their strings' pointers
// first) costs less than building and collecting the joined name on every node. It keeps only the names'
// strings, never a claim, until the scratch is dropped from the pool.
type recentNames struct {
	entries [4]recentName
	next    int
}

type recentName struct {
	parent, name, full string
}

// join is parent + "/" + name, from the remembered names when it is one of them.
func (r *recentNames) join(parent, name string) string {
	for i := range r.entries {
		if e := &r.entries[i]; e.full != "" && e.parent == parent && e.name == name {
			return e.full
		}
	}
	full := parent + "/" + name
	r.entries[r.next] = recentName{parent: parent, name: name, full: full}
	r.next = (r.next + 1) % len(r.entries)
	return full
}

// limitText is the object and field of the last claim-limit error this scratch made (see
// claimLimitError): a filter pass refuses the same claim on every node, and comparing its names with these
// (their strings' pointers first) costs less than joining them again. It keeps only the strings.
type limitText struct {
	namespace, name string
	ri              int
	object, field   string
}

// of returns the object ("ResourceClaim namespace/name") and the field ("spec.devices.requests[ri]") of
// the claim's request ri.
func (l *limitText) of(claim *resourceapi.ResourceClaim, ri int) (object, field string) {
	if l.object == "" || l.namespace != claim.Namespace || l.name != claim.Name || l.ri != ri {
		const kind, path = "ResourceClaim ", "spec.devices.requests["
		text := kind + claim.Namespace + "/" + claim.Name + path + strconv.Itoa(ri) + "]"
		split := len(kind) + len(claim.Namespace) + 1 + len(claim.Name)
		*l = limitText{namespace: claim.Namespace, name: claim.Name, ri: ri, object: text[:split], field: text[split:]}
	}
	return l.object, l.field
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
	a.ctx, a.s, a.st, a.node, a.claims, a.pools = nil, nil, nil, nil, nil, nil
	a.steps, a.twinsOnly, a.lastAll = 0, false, position{}
	a.short = shortfall{}
	a.indep = a.indep[:0]
	for i := range a.perClaim {
		a.perClaim[i].claim = nil
	}
	clearMap(a.matches)
	clearMap(a.derived)
	clearMap(a.shares)
	clearMap(a.ledgers)
	clearMap(a.counters)
	clearMap(a.readVerdicts)
	clear(a.reqBuf)
	clear(a.selBuf)
	clear(a.poolBuf)
	clear(a.entryBuf)
	clear(a.byPool)
	a.reqBuf, a.selBuf, a.entryBuf = a.reqBuf[:0], a.selBuf[:0], a.entryBuf[:0]
	a.taken.reset()
	a.resetTallies()
	a.bounds.reset()
	clear(a.pigeon.cs)
	for i := range a.sides {
		clear(a.sides[i].devices)
		clear(a.sides[i].counters)
	}
	allocations.Put(a)
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
