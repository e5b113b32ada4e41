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

// Topology is a preference among valid allocations for devices that sit close together: among the
// devices a request may take, the search tries first those that share a topology domain (a value of one
// of Attributes) with the devices the claim's earlier requests took — a GPU on the PCIe root of the NIC
// the same claim asks for —, then those of a domain with enough devices free for the whole request (the
// smallest such domain, so that larger ones stay whole), then those of the largest domains; devices
// without the attribute come last. Attributes are applied in order: devices are grouped by the first
// attribute's domain, and within it by the second's. Ties keep the strategy's order.
//
// The preference orders the search; it never rules a device out. Claims fit with it exactly when they
// fit without it (as with BestFit, an error met at one device, [InputError] with NodeDependent, may come
// under one order and not another), and the search still takes the first combination it finds, so it is
// a preference, not an optimum: a request whose first choice of domain leaves a later request with no
// fit steps back as usual. Like the strategies other than FirstFit, it evaluates the selectors of every
// candidate of a request before taking any.
type Topology struct {
	// Attributes name the topology domains, outermost first; nil or empty means
	// [DefaultTopologyAttributes]. A device's attribute is looked up as matchAttribute looks it up (the
	// fully qualified name, or the short name in the driver's own domain); a one-element list is its
	// element, longer lists are not domains.
	Attributes []resourceapi.FullyQualifiedName
}

// DefaultTopologyAttributes are the domains [Topology] uses when it names none: the NUMA node, then the
// PCIe root.
func DefaultTopologyAttributes() []resourceapi.FullyQualifiedName {
	return []resourceapi.FullyQualifiedName{AttributeNUMANode, AttributePCIeRoot}
}

// validate checks that every attribute is a fully qualified name (domain/name), as matchAttribute's
// are: a name without a domain would silently match no device.
func (t *Topology) validate() error {
	for i, name := range t.Attributes {
		domain, short, ok := strings.Cut(string(name), "/")
		if !ok || domain == "" || short == "" {
			return fmt.Errorf("%w: Options.Topology.Attributes[%d]: %q is not a fully qualified attribute name (domain/name)", ErrInvalidInput, i, name)
		}
	}
	return nil
}

func (t *Topology) attributes() []resourceapi.FullyQualifiedName {
	if len(t.Attributes) == 0 {
		return DefaultTopologyAttributes()
	}
	return t.Attributes
}

// ranks reports whether the search walks each request's candidates in a ranked order (allocateRanked)
// rather than in upstream order.
func (a *allocation) ranks() bool {
	return a.strategy != FirstFit || a.s != nil && a.s.opts.Topology != nil
}

// domain is one value of a topology attribute; the zero domain is "no value".
type domain struct {
	kind byte // 's' string, 'v' version, 'i' int, 'b' bool; 0 none
	s    string
	i    int64
}

func domainOf(d *deviceEntry, name resourceapi.FullyQualifiedName) domain {
	v, ok := staticAttribute(d, name)
	switch {
	case !ok:
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
	tier  int8 // 0 the claim already holds the domain, 1 the domain can take the whole request, 2 smaller, 3 none
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
	need := r.numDevices
	devs := make([]*deviceEntry, len(list))
	for i := range list {
		at := list[i].at
		devs[i] = a.pools[at.pool].slices[at.slice].devices()[at.device]
	}
	held := a.perClaim[r.claimIdx].results
	keys := make([]topoLevel, len(list)*len(attrs))
	doms := make([]domain, len(list))
	for k, name := range attrs {
		type group struct{ free, first int }
		groups := make(map[domain]*group)
		for i, d := range devs {
			doms[i] = domainOf(d, name)
			if doms[i].kind == 0 {
				continue
			}
			g := groups[doms[i]]
			if g == nil {
				g = &group{first: i}
				groups[doms[i]] = g
			}
			if d.multi || !a.st.allocated(d.id) && !a.taken.has(d) {
				g.free++
			}
		}
		claimHas := make(map[domain]bool, len(held))
		for _, res := range held {
			if dom := domainOf(res.dev, name); dom.kind != 0 {
				claimHas[dom] = true
			}
		}
		for i := range devs {
			lv := &keys[i*len(attrs)+k]
			g := groups[doms[i]]
			switch {
			case g == nil:
				*lv = topoLevel{tier: 3, first: i}
			case claimHas[doms[i]]:
				*lv = topoLevel{tier: 0, first: g.first}
			case g.free >= need:
				*lv = topoLevel{tier: 1, size: g.free, first: g.first}
			default:
				*lv = topoLevel{tier: 2, size: -g.free, first: g.first}
			}
		}
	}
	perm := make([]int, len(list))
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(x, y int) int {
		kx, ky := keys[x*len(attrs):(x+1)*len(attrs)], keys[y*len(attrs):(y+1)*len(attrs)]
		for k := range kx {
			if c := compareLevel(kx[k], ky[k]); c != 0 {
				return c
			}
		}
		return 0
	})
	sorted := make([]ranked, len(list))
	for i, j := range perm {
		sorted[i] = list[j]
	}
	copy(list, sorted)
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
