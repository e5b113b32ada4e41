package allocator

import (
	"cmp"
	"slices"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
)

// obstacles looks, for claims whose requests each have enough candidates, for what keeps them from
// fitting together: the 32-results limit, constraints no group of candidates satisfies, requests that
// compete for too few devices. Each check is linear in the candidates: none enumerates combinations.
func (x *explainer) obstacles() ([]Obstacle, error) {
	if x.anyShort() {
		return nil, nil
	}
	a := x.a
	var out []Obstacle
	// The alternative the search would settle on first: the first with enough candidates.
	var chosen []explained
	for ci := range a.perClaim[:len(a.claims)] {
		cs := &a.perClaim[ci]
		total := 0
		var refs []RequestRef
		for ri := range cs.slots {
			q, ok := x.firstViable(ci, ri)
			if !ok {
				continue
			}
			chosen = append(chosen, q)
			total += q.r.numDevices
			refs = append(refs, x.ref(q.r))
		}
		if total > resourceapi.AllocationResultsMaxSize {
			out = append(out, Obstacle{Reason: ReasonTooManyResults, Requests: refs, Needed: total})
		}
		for i, con := range cs.constraints {
			o, err := x.constraint(ci, i, con, chosen)
			if err != nil {
				return nil, err
			}
			if o != nil {
				out = append(out, *o)
			}
		}
	}
	out = append(out, x.competing(chosen)...)
	return out, nil
}

// firstViable is the first alternative of a request slot with enough candidates.
func (x *explainer) firstViable(ci, ri int) (explained, bool) {
	for _, q := range x.reqs {
		if q.r.claimIdx == ci && q.r.reqIdx == ri && !q.re.Short() {
			return q, true
		}
	}
	return explained{}, false
}

func (x *explainer) ref(r *request) RequestRef {
	cs := &x.a.perClaim[r.claimIdx]
	return RequestRef{Claim: cs.claim.Namespace + "/" + cs.claim.Name, Request: r.fullName()}
}

// constraint checks one constraint of a claim against the candidates of the requests it names: for
// matchAttribute, whether one value is shared by enough candidates of every request; for
// distinctAttribute, whether there are enough distinct values. Both are counted per value, so the work
// is linear in the candidates.
func (x *explainer) constraint(ci, i int, con constraint, chosen []explained) (*Obstacle, error) {
	var reqs []explained
	for _, q := range chosen {
		if q.r.claimIdx == ci && con.appliesTo(q.r) {
			reqs = append(reqs, q)
		}
	}
	if len(reqs) == 0 {
		return nil, nil
	}
	o := &Obstacle{Reason: ReasonConstraint, Attribute: string(con.attribute()), Field: "spec.devices.constraints[" + strconv.Itoa(i) + "]"}
	list := x.a.f.DRAListTypeAttributes
	// perValue[v][j] counts the candidates of request j with value v; "" is the attribute missing.
	perValue := map[string][]int{}
	var values []string
	distinct := map[string]bool{}
	var base *constraintBase
	switch c := con.(type) {
	case *matchAttribute:
		base = &c.constraintBase
		o.Field += ".matchAttribute"
	case *distinctAttribute:
		base = &c.constraintBase
		o.Field += ".distinctAttribute"
	default:
		return nil, nil
	}
	for j, q := range reqs {
		o.Requests = append(o.Requests, x.ref(q.r))
		o.Needed += q.r.numDevices
		for _, c := range q.cands {
			attr, found, err := base.lookup(q.r, c.dev, con.attribute())
			if err != nil {
				return nil, err
			}
			var ap *resourceapi.DeviceAttribute
			if found {
				ap = &attr
			}
			for _, v := range attributeKeys(ap, list) {
				n, ok := perValue[v]
				if !ok {
					n = make([]int, len(reqs))
					perValue[v] = n
					values = append(values, v)
				}
				n[j]++
				if v != "" {
					distinct[v] = true
				}
			}
		}
	}
	for _, v := range values {
		n := 0
		for _, c := range perValue[v] {
			n += c
		}
		o.Values = append(o.Values, ValueCount{Value: v, Devices: n})
	}
	slices.SortStableFunc(o.Values, func(x, y ValueCount) int { return cmp.Compare(y.Devices, x.Devices) })
	if _, ok := con.(*distinctAttribute); ok {
		o.Largest = len(distinct)
	} else {
		for v, counts := range perValue {
			if v == "" {
				continue
			}
			n := 0
			for j, q := range reqs {
				n += min(counts[j], q.r.numDevices)
			}
			o.Largest = max(o.Largest, n)
		}
	}
	if o.Largest >= o.Needed {
		return nil, nil
	}
	return o, nil
}

// attributeKeys are the values of an attribute as text, typed so that 1 and "1" differ; list-type
// attributes give each value. A missing attribute gives "".
func attributeKeys(attr *resourceapi.DeviceAttribute, list bool) []string {
	if attr == nil {
		return []string{""}
	}
	var out []string
	if list {
		s := asSet(attr)
		if s == nil {
			return []string{""}
		}
		switch s.kind {
		case 'i':
			for _, v := range s.ints {
				out = append(out, strconv.FormatInt(v, 10))
			}
		case 'b':
			for _, v := range s.bools {
				out = append(out, strconv.FormatBool(v))
			}
		case 's':
			for _, v := range s.strings {
				out = append(out, strconv.Quote(v))
			}
		default:
			for _, v := range s.strings {
				out = append(out, "v"+v)
			}
		}
		return out
	}
	switch {
	case attr.StringValue != nil:
		return []string{strconv.Quote(*attr.StringValue)}
	case attr.IntValue != nil:
		return []string{strconv.FormatInt(*attr.IntValue, 10)}
	case attr.BoolValue != nil:
		return []string{strconv.FormatBool(*attr.BoolValue)}
	case attr.VersionValue != nil:
		return []string{"v" + *attr.VersionValue}
	}
	return []string{""}
}

// competing groups the chosen requests whose candidates overlap (exclusive devices only: a device that
// takes several allocations can serve several requests) and reports each group that needs more devices
// than its candidates number together.
func (x *explainer) competing(chosen []explained) []Obstacle {
	parent := make([]int, len(chosen))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	owner := map[*deviceEntry]int{}
	for i, q := range chosen {
		if q.r.adminAccess {
			continue
		}
		for _, c := range q.cands {
			if x.a.f.DRAConsumableCapacity && c.dev.multi {
				continue
			}
			if j, ok := owner[c.dev]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[c.dev] = i
			}
		}
	}
	union := make([]int, len(chosen))
	for _, j := range owner {
		union[find(j)]++
	}
	var out []Obstacle
	for root := range chosen {
		if find(root) != root {
			continue
		}
		o := Obstacle{Reason: ReasonCompeting, Largest: union[root]}
		for i, q := range chosen {
			if find(i) == root {
				o.Requests = append(o.Requests, x.ref(q.r))
				o.Needed += q.r.numDevices
			}
		}
		if len(o.Requests) > 1 && o.Needed > o.Largest {
			out = append(out, o)
		}
	}
	return out
}
