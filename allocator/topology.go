package allocator

import (
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// Standard device attributes that name where a device sits on its node, as NVIDIA's driver and the
// inventory package publish them: the PCIe root (a string) and the NUMA node (KEP-6072; an int, or a
// one-element list with list-type attributes).
const (
	AttributeNUMANode resourceapi.FullyQualifiedName = "resource.kubernetes.io/numaNode"
	AttributePCIeRoot resourceapi.FullyQualifiedName = "resource.kubernetes.io/pcieRoot"
)

// Topology is a preference among valid allocations for devices that sit close together. It judges the
// whole placement of one call's claims on the node — every device of every request of every claim, as
// allocator/pods allocates a pod's claims in one call —, by this measure:
//
//	for each attribute of Attributes, outermost first: the number of distinct domains among the
//	devices of the placement, a domain being a value of the attribute (the same value published by
//	two drivers is one domain: a GPU and a NIC on PCIe root pci0000:03 share it) and a device
//	without the attribute counting as a domain of its own (its place is unknown); placements
//	compare lexicographically, the first attribute that differs deciding.
//
// With the default attributes, a placement on one NUMA node beats any placement on two, and among those
// on one NUMA node, one on fewer PCIe roots wins: a GPU and a NIC on one root measure (1, 1), on two
// roots of one NUMA node (1, 2), on two NUMA nodes (2, 2). A device with several shares in the call
// counts once.
//
// The search first orders each request's candidates: devices that share a domain with devices the call
// took before (for any of its claims: a NIC claim follows the pod's GPU claim), then those of a domain
// with enough devices free for the whole request (the smallest such domain, so that larger ones stay
// whole), then those of the largest domains, devices without the attribute last; attributes are applied
// in order, ties keep the strategy's order. The first placement found in this order is kept, and the
// search goes on from it as a branch and bound: a branch whose devices already span as many domains as
// the best placement is cut (devices are only added along a branch), a placement that measures less
// replaces the best, and the search ends when the best spans one domain of every attribute, or as few
// as the node allows (n devices need at least n divided by the devices of its widest domain, where no
// device takes shares and no request has admin access), when no placement is left, or when Steps more
// steps are spent. Devices the search treats as interchangeable
// (see the package's Cost section) are so only if they also lie in the same domains. The improvement
// keeps the alternatives of firstAvailable requests that the first placement takes: closeness never
// trades a subrequest a claim prefers for a later one, and placements are compared among those taking
// the same alternatives. A placement of equal measure never replaces the first, so the preference
// answers as it orders where its order already finds a closest placement.
//
// Within the budget the result is the closest placement there is (among those taking the first's
// alternatives); past it, the closest of those found. When the budget runs out first, the placement the
// call finds without the preference (the strategy's order, as Fits searches) is computed as well and
// returned where it takes the same alternatives and is closer, so the preference never does worse than
// no preference on its measure.
//
// The preference rules no device out. Claims fit with it exactly when they fit without it (as with
// BestFit, an error met at one device, [InputError] with NodeDependent, may come under one order and not
// another), and every placement it considers passes every check of the search (constraints, counters,
// capacity, taints, quota). The improvement never turns a fit into an error: an error met at a device
// while improving (a capacity check that fails on a device the first placement's search never tried)
// ends it as a spent budget does; only the end of the context fails the call. Like the strategies other than FirstFit, it
// evaluates the selectors of every candidate of a request before taking any. A call whose placement
// improves on the first draws the share IDs of the placement it returns after those of the first
// (Options.ShareIDs is called for both). Fits does not apply the preference and pays nothing for it.
type Topology struct {
	// Attributes name the topology domains, outermost first; nil or empty means
	// [DefaultTopologyAttributes]. A device's attribute is looked up as matchAttribute looks it up (the
	// fully qualified name, or the short name in the driver's own domain); a one-element list is its
	// element, longer lists are not domains.
	Attributes []resourceapi.FullyQualifiedName
	// Steps bound the search for a closer placement once the first is found: at most this many more
	// search steps (as Options.StepBudget counts them) per call. 0 means [DefaultTopologySteps];
	// a negative value is invalid.
	Steps int
}

// DefaultTopologyAttributes are the domains [Topology] uses when it names none: the NUMA node, then the
// PCIe root.
func DefaultTopologyAttributes() []resourceapi.FullyQualifiedName {
	return []resourceapi.FullyQualifiedName{AttributeNUMANode, AttributePCIeRoot}
}

// MaxTopologyAttributes bounds Topology.Attributes: each level is one more pass over a request's
// candidates on every node, and machines nest far fewer levels (socket, NUMA node, PCIe root, switch).
const MaxTopologyAttributes = 8

// validate checks that every attribute is a fully qualified name (domain/name), as matchAttribute's
// are: a name without a domain would silently match no device.
func (t *Topology) validate() error {
	if t.Steps < 0 {
		return fmt.Errorf("%w: Options.Topology.Steps: %d, must not be negative", ErrInvalidInput, t.Steps)
	}
	if len(t.Attributes) > MaxTopologyAttributes {
		return fmt.Errorf("%w: Options.Topology.Attributes: %d names, more than the %d levels a preference may have", ErrInvalidInput, len(t.Attributes), MaxTopologyAttributes)
	}
	for i, name := range t.Attributes {
		domain, short, ok := strings.Cut(string(name), "/")
		if !ok || domain == "" || short == "" {
			return fmt.Errorf("%w: Options.Topology.Attributes[%d]: %q is not a fully qualified attribute name (domain/name)", ErrInvalidInput, i, name)
		}
	}
	return nil
}

// defaultAttributes is DefaultTopologyAttributes, shared read-only by the calls, which keep the list
// for the call (topoBest) and so would allocate a fresh one each.
var defaultAttributes = DefaultTopologyAttributes()

func (t *Topology) attributes() []resourceapi.FullyQualifiedName {
	if len(t.Attributes) == 0 {
		return defaultAttributes
	}
	return t.Attributes
}

// ranks reports whether the search walks each request's candidates in a ranked order (allocateRanked)
// rather than in upstream order.
func (a *allocation) ranks() bool {
	return a.strategy != FirstFit || a.prefersTopology() || len(a.prefer) > 0
}

// prefersTopology: the snapshot's Topology preference orders this call's search (every call but Fits).
func (a *allocation) prefersTopology() bool {
	return a.s != nil && a.s.opts.Topology != nil && !a.fitsOnly
}

// domain is one value of a topology attribute; the zero domain is "no value".
type domain struct {
	kind byte // 's' string, 'v' version, 'i' int, 'b' bool; 0 none
	s    string
	i    int64
}

// domainOf is the device's domain of the attribute, read from its slice's column (see sliceEntry.column)
// when the slice is col's, col being nil then or past maxColumns.
func domainOf(d *deviceEntry, name resourceapi.FullyQualifiedName, col []*resourceapi.DeviceAttribute) domain {
	if col != nil {
		return domainOfValue(col[d.idx])
	}
	if v, ok := staticAttribute(d, name); ok {
		return domainOfValue(&v)
	}
	return domain{}
}

func domainOfValue(v *resourceapi.DeviceAttribute) domain {
	switch {
	case v == nil:
		return domain{}
	case v.StringValue != nil:
		return domain{kind: 's', s: *v.StringValue}
	case v.VersionValue != nil:
		return domain{kind: 'v', s: *v.VersionValue}
	case v.IntValue != nil:
		return domain{kind: 'i', i: *v.IntValue}
	case v.BoolValue != nil:
		b := int64(0)
		if *v.BoolValue {
			b = 1
		}
		return domain{kind: 'b', i: b}
	case len(v.IntValues) == 1:
		return domain{kind: 'i', i: v.IntValues[0]}
	case len(v.StringValues) == 1:
		return domain{kind: 's', s: v.StringValues[0]}
	case len(v.VersionValues) == 1:
		return domain{kind: 'v', s: v.VersionValues[0]}
	}
	return domain{}
}

// topoLevel is a candidate's sort key for one attribute: its tier, then size (ascending), then the
// position of its domain's first candidate, which keeps a domain's devices together.
type topoLevel struct {
	tier  int8 // 0 the call already holds the domain, 1 the domain can take the whole request, 2 smaller, 3 none
	size  int
	first int
}

// preferTopology reorders list, the candidates of request r in the strategy's order, by the snapshot's
// Topology preference (see Topology); ties keep list's order. The domains' sizes count the candidates
// not allocated and not taken in this call, an estimate of what the request can take from each (a
// candidate may still fail on capacity, counters or taints).
func (a *allocation) preferTopology(r *request, list []ranked) {
	attrs := a.s.opts.Topology.attributes()
	if len(list) < 2 || len(attrs) == 0 {
		return
	}
	ts := &a.topo
	need := r.numDevices
	ts.devs = slices.Grow(ts.devs[:0], len(list))
	for i := range list {
		at := list[i].at
		ts.devs = append(ts.devs, a.pools[at.pool].slices[at.slice].devices()[at.device])
	}
	ts.keys = slices.Grow(ts.keys[:0], len(list)*len(attrs))[:len(list)*len(attrs)]
	ts.doms = slices.Grow(ts.doms[:0], len(list))[:len(list)]
	if ts.groups == nil {
		ts.groups, ts.held = map[domain]int{}, map[domain]bool{}
	}
	for k, name := range attrs {
		clear(ts.groups)
		clear(ts.held)
		ts.free, ts.first = ts.free[:0], ts.first[:0]
		var colEntry *sliceEntry
		var col []*resourceapi.DeviceAttribute
		for i, d := range ts.devs {
			if d.slice != colEntry {
				colEntry, col = d.slice, d.slice.column(name)
			}
			ts.doms[i] = domainOf(d, name, col)
			if ts.doms[i].kind == 0 {
				continue
			}
			g, ok := ts.groups[ts.doms[i]]
			if !ok {
				g = len(ts.free)
				ts.groups[ts.doms[i]] = g
				ts.free, ts.first = append(ts.free, 0), append(ts.first, i)
			}
			if d.multi || !a.st.allocated(d.id) && !a.taken.has(d) {
				ts.free[g]++
			}
		}
		// The devices the call took before this request, for this claim and the pod's other claims
		// (a GPU claim and a NIC claim of one pod are placed together).
		for ci := range a.claims {
			for _, res := range a.perClaim[ci].results {
				if dom := domainOf(res.dev, name, nil); dom.kind != 0 {
					ts.held[dom] = true
				}
			}
		}
		for i := range ts.devs {
			lv := &ts.keys[i*len(attrs)+k]
			g, ok := ts.groups[ts.doms[i]]
			switch {
			case !ok:
				*lv = topoLevel{tier: 3, first: i}
			case ts.held[ts.doms[i]]:
				*lv = topoLevel{tier: 0, first: ts.first[g]}
			case ts.free[g] >= need:
				*lv = topoLevel{tier: 1, size: ts.free[g], first: ts.first[g]}
			default:
				*lv = topoLevel{tier: 2, size: -ts.free[g], first: ts.first[g]}
			}
		}
	}
	ts.perm = ts.perm[:0]
	for i := range list {
		ts.perm = append(ts.perm, i)
	}
	keys, n := ts.keys, len(attrs)
	slices.SortStableFunc(ts.perm, func(x, y int) int {
		for k := range n {
			if c := compareLevel(keys[x*n+k], keys[y*n+k]); c != 0 {
				return c
			}
		}
		return 0
	})
	ts.sorted = ts.sorted[:0]
	for _, j := range ts.perm {
		ts.sorted = append(ts.sorted, list[j])
	}
	copy(list, ts.sorted)
}

// topoScratch is preferTopology's working memory, kept in the pooled allocation between calls: a filter
// pass ranks the candidates of every node.
type topoScratch struct {
	devs        []*deviceEntry
	keys        []topoLevel
	doms        []domain
	groups      map[domain]int // a domain's index in free and first
	free, first []int
	held        map[domain]bool
	perm        []int
	sorted      []ranked
}

// reset drops what points into the snapshot, keeping the buffers.
func (ts *topoScratch) reset() {
	clear(ts.devs)
	clear(ts.doms)
	clear(ts.groups)
	clear(ts.held)
	ts.devs, ts.doms = ts.devs[:0], ts.doms[:0]
}

func compareLevel(x, y topoLevel) int {
	switch {
	case x.tier != y.tier:
		return int(x.tier) - int(y.tier)
	case x.size != y.size:
		return x.size - y.size
	}
	return x.first - y.first
}

// preferDevices moves the candidates in a.prefer to the front of list, in the order of their rank;
// the others keep their order behind them.
func (a *allocation) preferDevices(list []ranked) {
	if len(a.prefer) == 0 || len(list) < 2 {
		return
	}
	rankOf := func(c ranked) int {
		d := a.pools[c.at.pool].slices[c.at.slice].devices()[c.at.device]
		if r, ok := a.prefer[d.id]; ok {
			return r
		}
		return len(a.prefer)
	}
	slices.SortStableFunc(list, func(x, y ranked) int { return rankOf(x) - rankOf(y) })
}
