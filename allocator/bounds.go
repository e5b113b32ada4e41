package allocator

import (
	"math"
	"math/bits"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
)

// valueKey is one value of an attribute, with its type: the unit the constraints compare.
type valueKey struct {
	kind byte // 'i', 'b', 's', 'v'
	i    int64
	b    bool
	s    string
}

// bounds is the scratch state of constraintShort, reused across calls: the values seen, with their counts,
// and the candidates seen (by their index among the call's devices). A node has few distinct values of
// an attribute that constraints compare, so values are found by a linear scan up to maxLinearValues and
// through an index past that.
type bounds struct {
	values []boundValue
	index  map[valueKey]int // into values, once there are more than maxLinearValues
	seen   []uint64         // candidates seen, one bit each
}

const maxLinearValues = 32

// boundValue is one value with its candidates: of the current request (perReq) and distinct ones of all
// requests (union); ok: every request so far has enough candidates with it.
type boundValue struct {
	k             valueKey
	perReq, union int
	ok            bool
}

func (b *bounds) reset() {
	b.values = b.values[:0]
	clear(b.index)
	clear(b.seen)
}

// value returns the entry of k, adding it.
func (b *bounds) value(k valueKey) *boundValue {
	if len(b.index) > 0 {
		if i, ok := b.index[k]; ok {
			return &b.values[i]
		}
	} else {
		for i := range b.values {
			if b.values[i].k == k {
				return &b.values[i]
			}
		}
	}
	b.values = append(b.values, boundValue{k: k})
	switch n := len(b.values); {
	case n > maxLinearValues && len(b.index) == 0:
		if b.index == nil {
			b.index = map[valueKey]int{}
		}
		for i := range b.values {
			b.index[b.values[i].k] = i
		}
	case n > maxLinearValues:
		b.index[k] = n - 1
	}
	return &b.values[len(b.values)-1]
}

// see marks candidate i as seen and reports whether it was new.
func (b *bounds) see(i int) bool {
	w := i / 64
	for len(b.seen) <= w {
		b.seen = append(b.seen, 0)
	}
	bit := uint64(1) << (i % 64)
	if b.seen[w]&bit != 0 {
		return false
	}
	b.seen[w] |= bit
	return true
}

// constraintShort looks for a constraint of claim ci that no choice of candidate devices can meet, counting
// per attribute value: a matchAttribute constraint needs a value that enough candidates of every request it
// names share (and, devices being taken once per claim, enough distinct devices in all), a
// distinctAttribute constraint enough candidates with a value and enough distinct values. It answers
// ok false when evaluating a candidate failed (the search is to report that). A constraint is left alone
// when a request it names has alternatives or a candidate has an attribute with several scalar values
// (whose comparison depends on the order devices are added).
func (a *allocation) constraintShort(ci int) (sf shortfall, short, ok bool) {
	cs := &a.perClaim[ci]
next:
	for i, c := range cs.constraints {
		var buf [8]*request // the named requests; few, so the slice stays on the stack
		reqs := buf[:0]
		need := 0
		for ri := range cs.slots {
			slot := &cs.slots[ri]
			applies := false
			for _, r := range slot.alts {
				if c.appliesTo(r) {
					applies = true
					if _, derived := r.derived[c.attribute()]; derived {
						continue next // counting reads the devices' own attributes only
					}
				}
			}
			if !applies {
				continue
			}
			if slot.hasSubs {
				continue next
			}
			if r := slot.alts[0]; r.numDevices > 0 {
				reqs = append(reqs, r)
				need += r.numDevices
			}
		}
		if need == 0 {
			continue
		}
		// The last constraint of the last claim: nothing is checked after it but the pigeonhole bound
		// (which gives up on an error of its own), so counting may stop once the constraint can be met
		// (see failFast on the last request).
		last := ci == len(a.perClaim)-1 && i == len(cs.constraints)-1
		var o boundOutcome
		switch c := c.(type) {
		case *matchAttribute:
			o = a.matchPossible(reqs, need, c.name, last)
		case *distinctAttribute:
			o = a.distinctPossible(reqs, need, c.name)
		}
		switch o {
		case boundFailed:
			return shortfall{}, false, false
		case boundUnmet:
			return shortfall{cs: cs, constraint: i + 1}, true, true
		}
	}
	return shortfall{}, false, true
}

// boundOutcome is what counting tells about a constraint.
type boundOutcome int8

const (
	boundMet     boundOutcome = iota // enough candidates: the search decides
	boundUnmet                       // no choice of candidates meets the constraint
	boundUnknown                     // counting cannot tell
	boundFailed                      // evaluating a candidate failed
)

// valueKeys appends the values of a device's attribute that a constraint compares: the set under
// DRAListTypeAttributes, else the single scalar value. ok is false for an attribute with several scalar
// values.
func (a *allocation) valueKeys(d *deviceEntry, name resourceapi.FullyQualifiedName, keys []valueKey) (_ []valueKey, present, ok bool) {
	attr, found := staticAttribute(d, name)
	if !found {
		return keys, false, true
	}
	if a.f.DRAListTypeAttributes {
		s, ok := setOf(&attr)
		if !ok {
			return keys, false, true
		}
		switch {
		case s.scalar:
			keys = append(keys, valueKey{kind: s.kind, i: s.i, b: s.b, s: s.s})
		case s.kind == 'i':
			for _, v := range s.ints {
				keys = append(keys, valueKey{kind: 'i', i: v})
			}
		case s.kind == 'b':
			for _, v := range s.bools {
				keys = append(keys, valueKey{kind: 'b', b: v})
			}
		default:
			for _, v := range s.strings {
				keys = append(keys, valueKey{kind: s.kind, s: v})
			}
		}
		return keys, true, true
	}
	n := 0
	if attr.StringValue != nil {
		n++
		keys = append(keys, valueKey{kind: 's', s: *attr.StringValue})
	}
	if attr.IntValue != nil {
		n++
		keys = append(keys, valueKey{kind: 'i', i: *attr.IntValue})
	}
	if attr.BoolValue != nil {
		n++
		keys = append(keys, valueKey{kind: 'b', b: *attr.BoolValue})
	}
	if attr.VersionValue != nil {
		n++
		keys = append(keys, valueKey{kind: 'v', s: *attr.VersionValue})
	}
	return keys, true, n <= 1
}

// matchPossible: some value is shared by enough candidates of every request and by need distinct
// candidates in all (unless a candidate takes shares, which one claim may take several times). With
// early set and a single request, counting stops at the first value with enough candidates.
func (a *allocation) matchPossible(reqs []*request, need int, name resourceapi.FullyQualifiedName, early bool) boundOutcome {
	b := &a.bounds
	b.reset()
	var kbuf [8]valueKey
	shared, first, single := false, true, need == 1
	anyPresent, unknown, met := false, false, false
	early = early && len(reqs) == 1
	for _, r := range reqs {
		for i := range b.values {
			b.values[i].perReq = 0
		}
		ok := a.visitCandidates(r, func(i int, d *deviceEntry) bool {
			keys, present, ok := a.valueKeys(d, name, kbuf[:0])
			if !ok {
				unknown = true
				return false
			}
			anyPresent = anyPresent || present
			newDev := b.see(i)
			shared = shared || a.f.DRAConsumableCapacity && d.multi
			for _, k := range keys {
				v := b.value(k)
				v.perReq++
				if newDev {
					v.union++
				}
				if early && v.perReq >= r.numDevices {
					met = true
					return false
				}
			}
			return true
		})
		switch {
		case !ok:
			return boundFailed
		case unknown:
			return boundUnknown
		case met:
			return boundMet
		case single && anyPresent:
			return boundMet
		case single:
			return boundUnmet
		}
		for i := range b.values {
			v := &b.values[i]
			enough := v.perReq >= r.numDevices
			if first {
				v.ok = enough
			} else {
				v.ok = v.ok && enough
			}
		}
		first = false
	}
	for i := range b.values {
		if v := &b.values[i]; v.ok && (shared || v.union >= need) {
			return boundMet
		}
	}
	return boundUnmet
}

// distinctPossible: every request has enough candidates with a value, and the candidates of all of them
// have at least need distinct values between them (a device shares its values with itself, so even one
// that takes shares serves once).
func (a *allocation) distinctPossible(reqs []*request, need int, name resourceapi.FullyQualifiedName) boundOutcome {
	b := &a.bounds
	b.reset()
	var kbuf [8]valueKey
	unknown := false
	devices := 0
	for _, r := range reqs {
		n := 0
		ok := a.visitCandidates(r, func(i int, d *deviceEntry) bool {
			keys, present, ok := a.valueKeys(d, name, kbuf[:0])
			if !ok {
				unknown = true
				return false
			}
			if !present {
				return true
			}
			if len(keys) == 0 {
				// Only list values without DRAListTypeAttributes: such a device may join as the
				// first one only, which counting does not follow.
				unknown = true
				return false
			}
			n++
			if b.see(i) {
				devices++
			}
			for _, k := range keys {
				b.value(k).union++
			}
			return true
		})
		switch {
		case !ok:
			return boundFailed
		case unknown:
			return boundUnknown
		case n < r.numDevices:
			return boundUnmet
		}
	}
	if len(b.values) >= need && devices >= need {
		return boundMet
	}
	return boundUnmet
}

// constraintReason is "<claim>: spec.devices.constraints[i]: ...", built in the call's buffer.
func (a *allocation) constraintReason(sf shortfall) string {
	cs := sf.cs
	i := sf.constraint - 1
	b := a.textBuf[:0]
	b = append(b, "ResourceClaim "...)
	b = append(b, cs.claim.Namespace...)
	b = append(b, '/')
	b = append(b, cs.claim.Name...)
	b = append(b, ": spec.devices.constraints["...)
	b = strconv.AppendInt(b, int64(i), 10)
	switch c := cs.constraints[i].(type) {
	case *matchAttribute:
		b = append(b, "].matchAttribute: no value of "...)
		b = append(b, c.name...)
		b = append(b, " is shared by enough free matching devices"...)
	case *distinctAttribute:
		b = append(b, "].distinctAttribute: too few free matching devices with distinct values of "...)
		b = append(b, c.name...)
	}
	a.textBuf = b
	return string(b)
}

// pigeonhole is the scratch state of pigeonholeShort, reused across calls.
type pigeonhole struct {
	words []uint64 // one candidate set per request, w words each
	need  []int
	cs    []*claimState
}

// pigeonholeShort counts across requests: requests that can only take devices of a set T need distinct
// devices of it (a device is taken once, unless it takes shares or the request has admin access), so
// when they need more than T has, no choice of devices serves them all, wherever they are in the search
// order. T is tried as the candidates of each request and of all of them together. A request with
// alternatives counts with its smallest count and the candidates of all its alternatives; requests with
// admin access or with a candidate that takes shares are left out. It runs when failFast found every
// request and constraint servable on its own, so every selector has evaluated; a candidate whose
// evaluation fails (past where counting stopped) leaves the decision to the search.
func (a *allocation) pigeonholeShort() (shortfall, bool) {
	// The bound needs two requests or more; a call with one (most filter calls) skips the visit of
	// every candidate again.
	slots := 0
	for ci := range a.perClaim {
		slots += len(a.perClaim[ci].slots)
	}
	if slots < 2 {
		return shortfall{}, false
	}
	total := 0
	for _, p := range a.pools {
		if p.incomplete || p.invalid {
			continue
		}
		for _, e := range p.slices {
			total += len(e.devices())
		}
	}
	w := (total + 63) / 64
	h := &a.pigeon
	h.words, h.need, h.cs = h.words[:0], h.need[:0], h.cs[:0]
	for ci := range a.perClaim {
		cs := &a.perClaim[ci]
		for ri := range cs.slots {
			slot := &cs.slots[ri]
			need := math.MaxInt
			start := len(h.words)
			h.words = append(h.words, make([]uint64, w)...)
			set := h.words[start:]
			usable := true
			for _, r := range slot.alts {
				need = min(need, r.numDevices)
				if r.adminAccess {
					usable = false
					break
				}
				ok := a.visitCandidates(r, func(i int, d *deviceEntry) bool {
					if a.f.DRAConsumableCapacity && d.multi {
						usable = false
						return false
					}
					set[i/64] |= 1 << (i % 64)
					return true
				})
				if !ok {
					return shortfall{}, false
				}
			}
			if !usable || need <= 0 {
				h.words = h.words[:start]
				continue
			}
			h.need = append(h.need, need)
			h.cs = append(h.cs, cs)
		}
	}
	n := len(h.need)
	if n < 2 {
		return shortfall{}, false
	}
	// The union of all, kept after the requests' sets.
	start := len(h.words)
	h.words = append(h.words, make([]uint64, w)...)
	all := h.words[start:]
	for k := range n {
		for j, x := range h.words[k*w : (k+1)*w] {
			all[j] |= x
		}
	}
	for t := 0; t <= n; t++ {
		T := h.words[t*w : (t+1)*w]
		size := 0
		for _, x := range T {
			size += bits.OnesCount64(x)
		}
		need := 0
		last := -1
		for k := range n {
			if subset(h.words[k*w:(k+1)*w], T) {
				need += h.need[k]
				last = k
			}
		}
		if need > size {
			return shortfall{cs: h.cs[last], n: size, need: need}, true
		}
	}
	return shortfall{}, false
}

// subset: every bit of x is set in y.
func subset(x, y []uint64) bool {
	for i := range x {
		if x[i]&^y[i] != 0 {
			return false
		}
	}
	return true
}

// pigeonholeReason is "requests of the claims need N distinct devices of M that match and are free",
// naming the last claim whose requests count, built in the call's buffer.
func (a *allocation) pigeonholeReason(sf shortfall) string {
	b := a.textBuf[:0]
	b = append(b, "ResourceClaim "...)
	b = append(b, sf.cs.claim.Namespace...)
	b = append(b, '/')
	b = append(b, sf.cs.claim.Name...)
	b = append(b, ": together with the requests before it, needs "...)
	b = strconv.AppendInt(b, int64(sf.need), 10)
	b = append(b, " distinct devices of "...)
	b = strconv.AppendInt(b, int64(sf.n), 10)
	b = append(b, " that match and are free"...)
	a.textBuf = b
	return string(b)
}
