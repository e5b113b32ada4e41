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
func (c *constraintBase) lookup(r *request, d *deviceEntry, name resourceapi.FullyQualifiedName) (*resourceapi.DeviceAttribute, error) {
	return c.a.attributeOf(r, d, name)
}

// attributeOf is constraintBase.lookup; derived values are kept for the call.
func (a *allocation) attributeOf(r *request, d *deviceEntry, name resourceapi.FullyQualifiedName) (*resourceapi.DeviceAttribute, error) {
	if expr, ok := r.derived[name]; ok {
		key := derivedKey{dev: d, expr: expr}
		if v, ok := a.derived[key]; ok {
			return v, nil
		}
		prog, err := a.s.env.CompileDerived(expr)
		if err != nil {
			return nil, inputError(a.perClaim[r.claimIdx].name(), r.path()+".derivedAttributes", fmt.Errorf("compile derived attribute %s: %w", name, err))
		}
		v, err := prog.Evaluate(a.ctx, d.cel.view())
		if err != nil && a.ctx.Err() != nil {
			return nil, aborted(a.ctx)
		}
		if err != nil {
			return nil, nodeInputError(a.perClaim[r.claimIdx].name(), r.path()+".derivedAttributes", fmt.Errorf("evaluate derived attribute %s on device %s: %w", name, d.id, err))
		}
		attr := &v
		if a.derived == nil {
			a.derived = map[derivedKey]*resourceapi.DeviceAttribute{}
		}
		a.derived[key] = attr
		return attr, nil
	}
	return staticAttribute(d, name), nil
}

func staticAttribute(d *deviceEntry, name resourceapi.FullyQualifiedName) *resourceapi.DeviceAttribute {
	if v, ok := d.api.Attributes[resourceapi.QualifiedName(name)]; ok {
		return &v
	}
	domain, short, ok := strings.Cut(string(name), "/")
	if !ok || domain != d.id.Driver {
		return nil
	}
	if v, ok := d.api.Attributes[resourceapi.QualifiedName(short)]; ok {
		return &v
	}
	return nil
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

// intersect returns the common values, or nil when there are none or the types differ.
func (s *valueSet) intersect(o *valueSet) *valueSet {
	if s.kind != o.kind {
		return nil
	}
	out := &valueSet{kind: s.kind}
	switch s.kind {
	case 'i':
		for _, v := range s.ints {
			if slices.Contains(o.ints, v) && !slices.Contains(out.ints, v) {
				out.ints = append(out.ints, v)
			}
		}
		if len(out.ints) == 0 {
			return nil
		}
	case 'b':
		for _, v := range s.bools {
			if slices.Contains(o.bools, v) && !slices.Contains(out.bools, v) {
				out.bools = append(out.bools, v)
			}
		}
		if len(out.bools) == 0 {
			return nil
		}
	default:
		for _, v := range s.strings {
			if slices.Contains(o.strings, v) && !slices.Contains(out.strings, v) {
				out.strings = append(out.strings, v)
			}
		}
		if len(out.strings) == 0 {
			return nil
		}
	}
	return out
}

// matchAttribute: all devices of the named requests have the same value of the attribute (with list-type
// attributes: share at least one value across all of them).
type matchAttribute struct {
	constraintBase
	attr resourceapi.FullyQualifiedName
	// first is the attribute of the first device (scalar comparison); sets is the running intersection
	// after each added device (list-type attributes).
	first *resourceapi.DeviceAttribute
	sets  []*valueSet
	n     int
}

func (m *matchAttribute) add(r *request, d *deviceEntry) (bool, error) {
	if !m.appliesTo(r) {
		return true, nil
	}
	attr, err := m.lookup(r, d, m.attr)
	if err != nil || attr == nil {
		return false, err
	}
	list := m.a.f.DRAListTypeAttributes
	if m.n == 0 {
		if list {
			s := asSet(attr)
			if s == nil {
				return false, nil
			}
			m.sets = append(m.sets, s)
		} else {
			m.first = attr
		}
		m.n = 1
		return true, nil
	}
	if list {
		s := asSet(attr)
		if s == nil {
			return false, nil
		}
		narrowed := m.sets[m.n-1].intersect(s)
		if narrowed == nil {
			return false, nil
		}
		m.sets = append(m.sets, narrowed)
	} else if !sameScalar(m.first, attr) {
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
	if m.a.f.DRAListTypeAttributes {
		m.sets = m.sets[:m.n]
	}
}

// distinctAttribute: no two devices of the named requests share a value of the attribute.
func (m *matchAttribute) attribute() resourceapi.FullyQualifiedName { return m.attr }

type distinctAttribute struct {
	constraintBase
	attr  resourceapi.FullyQualifiedName
	added []*resourceapi.DeviceAttribute
}

func (m *distinctAttribute) attribute() resourceapi.FullyQualifiedName { return m.attr }

func (m *distinctAttribute) add(r *request, d *deviceEntry) (bool, error) {
	if !m.appliesTo(r) {
		return true, nil
	}
	attr, err := m.lookup(r, d, m.attr)
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
		s := asSet(attr)
		if s == nil {
			return false
		}
		for _, prev := range m.added {
			if ps := asSet(prev); ps != nil && s.intersect(ps) != nil {
				return false
			}
		}
		return true
	}
	for _, prev := range m.added {
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
