package allocator

import (
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// constraint is a claim's matchAttribute or distinctAttribute constraint, checked incrementally as the
// search adds and removes devices.
type constraint interface {
	// add reports whether the device can join the devices already added; when it returns true the
	// device has been added.
	add(r *request, d *deviceEntry) (bool, error)
	// remove takes back the device added last for r.
	remove(r *request, d *deviceEntry)
	// appliesTo: the constraint names r.
	appliesTo(r *request) bool
	// attribute is the attribute the constraint compares.
	attribute() resourceapi.FullyQualifiedName
}

type constraintBase struct {
	a        *allocation
	requests []string // empty: all requests
	// colEntry and col are the slice entry whose attribute column attr read last, and that column.
	colEntry *sliceEntry
	col      []*resourceapi.DeviceAttribute
}

// appliesTo: the constraint names the request, or for a subrequest either its request or
// "request/subrequest".
func (c *constraintBase) appliesTo(r *request) bool {
	if len(c.requests) == 0 {
		return true
	}
	if r.parent != "" {
		return slices.Contains(c.requests, r.parent) || slices.Contains(c.requests, r.fullName())
	}
	return slices.Contains(c.requests, r.name)
}

// lookup finds an attribute of a device: a derived attribute of the request when it defines one under that
// name, else the device's own attribute, by its fully qualified name or, for the driver's own domain, by
// the short name.
// The attribute is returned by value (false when the device has none), so that looking one up allocates
// nothing.
func (c *constraintBase) lookup(r *request, d *deviceEntry, name resourceapi.FullyQualifiedName) (resourceapi.DeviceAttribute, bool, error) {
	return c.a.attributeOf(r, d, name)
}

// attributeOf is constraintBase.lookup; derived values are kept for the call.
func (a *allocation) attributeOf(r *request, d *deviceEntry, name resourceapi.FullyQualifiedName) (resourceapi.DeviceAttribute, bool, error) {
	if expr, ok := r.derived[name]; ok {
		key := derivedKey{dev: d, expr: expr}
		if v, ok := a.derived[key]; ok {
			return *v, true, nil
		}
		prog, err := a.s.env.CompileDerived(expr)
		if err != nil {
			return resourceapi.DeviceAttribute{}, false, inputError(a.perClaim[r.claimIdx].name(), r.path()+".derivedAttributes", fmt.Errorf("compile derived attribute %s: %w", name, err))
		}
		v, err := prog.Evaluate(a.ctx, d.view())
		if err != nil && a.ctx.Err() != nil {
			return resourceapi.DeviceAttribute{}, false, aborted(a.ctx)
		}
		if err != nil {
			return resourceapi.DeviceAttribute{}, false, nodeInputError(a.perClaim[r.claimIdx].name(), r.path()+".derivedAttributes", fmt.Errorf("evaluate derived attribute %s on device %s: %w", name, d.id, err))
		}
		attr := &v
		if a.derived == nil {
			a.derived = map[derivedKey]*resourceapi.DeviceAttribute{}
		}
		a.derived[key] = attr
		return v, true, nil
	}
	v, ok := staticAttribute(d, name)
	return v, ok, nil
}

// staticAttribute is the device's own attribute by its fully qualified name or, for the driver's own
// domain, by the short name; false when it has none.
func staticAttribute(d *deviceEntry, name resourceapi.FullyQualifiedName) (resourceapi.DeviceAttribute, bool) {
	return attributeOf(d.api, d.id.Driver, name)
}

// attributeOf is staticAttribute for a device of the driver.
func attributeOf(dev *resourceapi.Device, driver string, name resourceapi.FullyQualifiedName) (resourceapi.DeviceAttribute, bool) {
	if v, ok := dev.Attributes[resourceapi.QualifiedName(name)]; ok {
		return v, true
	}
	domain, short, ok := strings.Cut(string(name), "/")
	if !ok || domain != driver {
		return resourceapi.DeviceAttribute{}, false
	}
	v, ok := dev.Attributes[resourceapi.QualifiedName(short)]
	return v, ok
}

// attr is the constraint's attribute of a device, nil when it has none: a derived attribute as
// attributeOf computes it, else read from the column of the device's slice (see sliceEntry.column),
// which the constraint keeps while the devices come from one slice.
func (c *constraintBase) attr(r *request, d *deviceEntry, name resourceapi.FullyQualifiedName) (*resourceapi.DeviceAttribute, error) {
	if _, derived := r.derived[name]; derived {
		v, ok, err := c.a.attributeOf(r, d, name)
		if !ok || err != nil {
			return nil, err
		}
		return &v, nil
	}
	if d.slice != c.colEntry {
		c.colEntry, c.col = d.slice, d.slice.column(name)
	}
	if c.col == nil {
		v, ok := staticAttribute(d, name)
		if !ok {
			return nil, nil
		}
		return &v, nil
	}
	return c.col[d.idx], nil
}

// valueSet is an attribute as a set of values of one type (list-type attributes, DRAListTypeAttributes).
type valueSet struct {
	kind    byte // 'i', 'b', 's', 'v'
	ints    []int64
	bools   []bool
	strings []string // strings or versions
}

// asSet converts an attribute; list values win over scalar ones; nil for an attribute without a value.
func asSet(attr *resourceapi.DeviceAttribute) *valueSet {
	switch {
	case attr == nil:
		return nil
	case len(attr.IntValues) > 0:
		return &valueSet{kind: 'i', ints: attr.IntValues}
	case len(attr.BoolValues) > 0:
		return &valueSet{kind: 'b', bools: attr.BoolValues}
	case len(attr.StringValues) > 0:
		return &valueSet{kind: 's', strings: attr.StringValues}
	case len(attr.VersionValues) > 0:
		return &valueSet{kind: 'v', strings: attr.VersionValues}
	case attr.IntValue != nil:
		return &valueSet{kind: 'i', ints: []int64{*attr.IntValue}}
	case attr.BoolValue != nil:
		return &valueSet{kind: 'b', bools: []bool{*attr.BoolValue}}
	case attr.StringValue != nil:
		return &valueSet{kind: 's', strings: []string{*attr.StringValue}}
	case attr.VersionValue != nil:
		return &valueSet{kind: 'v', strings: []string{*attr.VersionValue}}
	}
	return nil
}

// matchAttribute: all devices of the named requests have the same value of the attribute (with list-type
// attributes: share at least one value across all of them).
type matchAttribute struct {
	constraintBase
	name resourceapi.FullyQualifiedName
	// first is the attribute of the first device (scalar comparison); sets[k] is the running
	// intersection after k+1 added devices (list-type attributes), its buffers kept for the next call.
	first *resourceapi.DeviceAttribute
	sets  []valueSet
	n     int
	// count, countReq and counts are the candidates per value of the call's request (see matchAttribute.enough).
	count    byte
	countReq *request
	counts   []valueCount
}

func (m *matchAttribute) add(r *request, d *deviceEntry) (bool, error) {
	if !m.appliesTo(r) {
		return true, nil
	}
	attr, err := m.attr(r, d, m.name)
	if err != nil || attr == nil {
		return false, err
	}
	list := m.a.f.DRAListTypeAttributes
	if !list {
		if m.n == 0 {
			if ok, err := m.enough(r, d, attr); err != nil || !ok {
				return false, err
			}
			m.first = attr
		} else if !sameScalar(m.first, attr) {
			return false, nil
		}
		m.n++
		return true, nil
	}
	s, ok := setOf(attr)
	if !ok {
		return false, nil
	}
	if len(m.sets) <= m.n {
		m.sets = append(m.sets, valueSet{})
	}
	dst := &m.sets[m.n]
	if m.n == 0 {
		dst.assign(&s)
	} else if !dst.intersectOf(&m.sets[m.n-1], &s) {
		return false, nil
	}
	m.n++
	return true, nil
}

// sameScalar compares by the type of the new value, as Kubernetes does; list values never match.
func sameScalar(first, attr *resourceapi.DeviceAttribute) bool {
	switch {
	case attr.StringValue != nil:
		return first.StringValue != nil && *first.StringValue == *attr.StringValue
	case attr.IntValue != nil:
		return first.IntValue != nil && *first.IntValue == *attr.IntValue
	case attr.BoolValue != nil:
		return first.BoolValue != nil && *first.BoolValue == *attr.BoolValue
	case attr.VersionValue != nil:
		return first.VersionValue != nil && *first.VersionValue == *attr.VersionValue
	}
	return false
}

func (m *matchAttribute) remove(r *request, _ *deviceEntry) {
	if !m.appliesTo(r) {
		return
	}
	m.n--
}

func (m *matchAttribute) attribute() resourceapi.FullyQualifiedName { return m.name }

// distinctAttribute: no two devices of the named requests share a value of the attribute.
type distinctAttribute struct {
	constraintBase
	name  resourceapi.FullyQualifiedName
	added []*resourceapi.DeviceAttribute
}

func (m *distinctAttribute) attribute() resourceapi.FullyQualifiedName { return m.name }

func (m *distinctAttribute) add(r *request, d *deviceEntry) (bool, error) {
	if !m.appliesTo(r) {
		return true, nil
	}
	attr, err := m.attr(r, d, m.name)
	if err != nil || attr == nil {
		return false, err
	}
	if !m.distinct(attr) {
		return false, nil
	}
	m.added = append(m.added, attr)
	return true, nil
}

func (m *distinctAttribute) distinct(attr *resourceapi.DeviceAttribute) bool {
	if m.a.f.DRAListTypeAttributes {
		s, ok := setOf(attr)
		if !ok {
			return false
		}
		for i := range m.added {
			if ps, ok := setOf(m.added[i]); ok && ps.overlaps(&s) {
				return false
			}
		}
		return true
	}
	for i := range m.added {
		prev := m.added[i]
		switch {
		case attr.StringValue != nil:
			if prev.StringValue != nil && *prev.StringValue == *attr.StringValue {
				return false
			}
		case attr.IntValue != nil:
			if prev.IntValue != nil && *prev.IntValue == *attr.IntValue {
				return false
			}
		case attr.BoolValue != nil:
			if prev.BoolValue != nil && *prev.BoolValue == *attr.BoolValue {
				return false
			}
		case attr.VersionValue != nil:
			if prev.VersionValue != nil && *prev.VersionValue == *attr.VersionValue {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (m *distinctAttribute) remove(r *request, _ *deviceEntry) {
	if !m.appliesTo(r) {
		return
	}
	m.added = m.added[:len(m.added)-1]
}

// attrSet is an attribute seen as a set of values of one type without copying it: its list values, or
// its one scalar value (the order of asSet: list values win over scalar ones).
type attrSet struct {
	kind    byte // 'i', 'b', 's', 'v'
	ints    []int64
	bools   []bool
	strings []string
	// scalar: the set is the one value below rather than a list.
	scalar bool
	i      int64
	b      bool
	s      string
}

// setOf is asSet without allocating; false for an attribute without a value.
func setOf(attr *resourceapi.DeviceAttribute) (attrSet, bool) {
	switch {
	case len(attr.IntValues) > 0:
		return attrSet{kind: 'i', ints: attr.IntValues}, true
	case len(attr.BoolValues) > 0:
		return attrSet{kind: 'b', bools: attr.BoolValues}, true
	case len(attr.StringValues) > 0:
		return attrSet{kind: 's', strings: attr.StringValues}, true
	case len(attr.VersionValues) > 0:
		return attrSet{kind: 'v', strings: attr.VersionValues}, true
	case attr.IntValue != nil:
		return attrSet{kind: 'i', scalar: true, i: *attr.IntValue}, true
	case attr.BoolValue != nil:
		return attrSet{kind: 'b', scalar: true, b: *attr.BoolValue}, true
	case attr.StringValue != nil:
		return attrSet{kind: 's', scalar: true, s: *attr.StringValue}, true
	case attr.VersionValue != nil:
		return attrSet{kind: 'v', scalar: true, s: *attr.VersionValue}, true
	}
	return attrSet{}, false
}

func (a *attrSet) hasInt(v int64) bool {
	if a.scalar {
		return a.i == v
	}
	return slices.Contains(a.ints, v)
}

func (a *attrSet) hasBool(v bool) bool {
	if a.scalar {
		return a.b == v
	}
	return slices.Contains(a.bools, v)
}

func (a *attrSet) hasString(v string) bool {
	if a.scalar {
		return a.s == v
	}
	return slices.Contains(a.strings, v)
}

// overlaps: the two sets are of one type and share a value.
func (a *attrSet) overlaps(o *attrSet) bool {
	if a.kind != o.kind {
		return false
	}
	switch {
	case a.kind == 'i' && a.scalar:
		return o.hasInt(a.i)
	case a.kind == 'i':
		for _, v := range a.ints {
			if o.hasInt(v) {
				return true
			}
		}
	case a.kind == 'b' && a.scalar:
		return o.hasBool(a.b)
	case a.kind == 'b':
		for _, v := range a.bools {
			if o.hasBool(v) {
				return true
			}
		}
	case a.scalar:
		return o.hasString(a.s)
	default:
		for _, v := range a.strings {
			if o.hasString(v) {
				return true
			}
		}
	}
	return false
}

// assign makes s the values of a, in a's order, reusing s's buffers.
func (s *valueSet) assign(a *attrSet) {
	s.kind = a.kind
	s.ints, s.bools, s.strings = s.ints[:0], s.bools[:0], s.strings[:0]
	switch {
	case a.kind == 'i' && a.scalar:
		s.ints = append(s.ints, a.i)
	case a.kind == 'i':
		s.ints = append(s.ints, a.ints...)
	case a.kind == 'b' && a.scalar:
		s.bools = append(s.bools, a.b)
	case a.kind == 'b':
		s.bools = append(s.bools, a.bools...)
	case a.scalar:
		s.strings = append(s.strings, a.s)
	default:
		s.strings = append(s.strings, a.strings...)
	}
}

// intersectOf makes s the values of prev that a holds too, in prev's order and once each, reusing s's
// buffers; false when there are none or the types differ.
func (s *valueSet) intersectOf(prev *valueSet, a *attrSet) bool {
	if prev.kind != a.kind {
		return false
	}
	s.kind = prev.kind
	s.ints, s.bools, s.strings = s.ints[:0], s.bools[:0], s.strings[:0]
	switch prev.kind {
	case 'i':
		for _, v := range prev.ints {
			if a.hasInt(v) && !slices.Contains(s.ints, v) {
				s.ints = append(s.ints, v)
			}
		}
		return len(s.ints) > 0
	case 'b':
		for _, v := range prev.bools {
			if a.hasBool(v) && !slices.Contains(s.bools, v) {
				s.bools = append(s.bools, v)
			}
		}
		return len(s.bools) > 0
	default:
		for _, v := range prev.strings {
			if a.hasString(v) && !slices.Contains(s.strings, v) {
				s.strings = append(s.strings, v)
			}
		}
		return len(s.strings) > 0
	}
}
