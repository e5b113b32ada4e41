package verify

import (
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// checkConstraints checks every matchAttribute and distinctAttribute constraint of the claim over the devices of
// the requests it names (all requests when it names none), in result order, as the Kubernetes allocator adds
// them.
func (cc *claimCheck) checkConstraints() {
	for ci, con := range cc.claim.Spec.Devices.Constraints {
		var attr resourceapi.FullyQualifiedName
		distinct := false
		switch {
		case con.MatchAttribute != nil:
			attr = *con.MatchAttribute
		case con.DistinctAttribute != nil:
			attr, distinct = *con.DistinctAttribute, true
		default:
			continue
		}
		var values []*resourceapi.DeviceAttribute
		var idx []int
		for i, d := range cc.devs {
			req := cc.reqs[i]
			if d == nil || req == nil || !constraintApplies(con.Requests, req) {
				continue
			}
			v, err := cc.attribute(req, d, attr)
			if err != nil {
				cc.violation(RuleCEL, req.name, i, d.id, "constraint #%d: %v", ci, err)
				continue
			}
			if v == nil {
				cc.violation(RuleConstraint, req.name, i, d.id, "constraint #%d: the device has no attribute %s", ci, attr)
				continue
			}
			values = append(values, v)
			idx = append(idx, i)
		}
		var bad int
		if distinct {
			bad = cc.firstNotDistinct(values)
		} else {
			bad = cc.firstNotMatching(values)
		}
		if bad >= 0 {
			i := idx[bad]
			kind := "matchAttribute"
			if distinct {
				kind = "distinctAttribute"
			}
			cc.violation(RuleConstraint, cc.reqs[i].name, i, cc.devs[i].id, "constraint #%d: %s %s is broken by value %s", ci, kind, attr, formatAttribute(values[bad]))
		}
	}
}

// constraintApplies mirrors Kubernetes: a constraint naming requests applies to a subrequest when it names the
// parent request or the subrequest itself.
func constraintApplies(names []string, req *request) bool {
	if len(names) == 0 {
		return true
	}
	if req.parent != "" && slices.Contains(names, req.parent) {
		return true
	}
	return slices.Contains(names, req.name)
}

// attribute looks up the attribute of a device for a constraint: a derived attribute of the request first, then
// the device's attributes under the full name, then under the short name when the domain is the driver.
func (cc *claimCheck) attribute(req *request, d *device, name resourceapi.FullyQualifiedName) (*resourceapi.DeviceAttribute, error) {
	for _, da := range req.derived {
		if da.Name != name {
			continue
		}
		expr, err := cc.env.CompileDerived(da.Expression)
		if err != nil {
			return nil, fmt.Errorf("compile derived attribute %s failed: %w", name, err)
		}
		v, err := expr.Evaluate(cc.ctx, d.celView())
		if err != nil {
			return nil, fmt.Errorf("evaluate derived attribute %s on device %s failed: %w", name, d.id, err)
		}
		return &v, nil
	}
	if v, ok := d.dev.Attributes[resourceapi.QualifiedName(name)]; ok {
		return &v, nil
	}
	domain, short, ok := strings.Cut(string(name), "/")
	if !ok || domain != d.id.Driver {
		return nil, nil
	}
	if v, ok := d.dev.Attributes[resourceapi.QualifiedName(short)]; ok {
		return &v, nil
	}
	return nil, nil
}

// valueSet is an attribute as a typed set, the view Kubernetes takes with DRAListTypeAttributes: a scalar is a
// set of one.
type valueSet struct {
	kind   string
	values map[string]bool
}

func asSet(a *resourceapi.DeviceAttribute) *valueSet {
	s := &valueSet{values: map[string]bool{}}
	switch {
	case len(a.IntValues) > 0:
		s.kind = "int"
		for _, v := range a.IntValues {
			s.values[fmt.Sprint(v)] = true
		}
	case len(a.BoolValues) > 0:
		s.kind = "bool"
		for _, v := range a.BoolValues {
			s.values[fmt.Sprint(v)] = true
		}
	case len(a.StringValues) > 0:
		s.kind = "string"
		for _, v := range a.StringValues {
			s.values[v] = true
		}
	case len(a.VersionValues) > 0:
		s.kind = "version"
		for _, v := range a.VersionValues {
			s.values[v] = true
		}
	default:
		k, v, ok := scalar(a)
		if !ok {
			return nil
		}
		s.kind = k
		s.values[v] = true
	}
	return s
}

// scalar returns the type and value of a single-valued attribute.
func scalar(a *resourceapi.DeviceAttribute) (string, string, bool) {
	switch {
	case a.IntValue != nil:
		return "int", fmt.Sprint(*a.IntValue), true
	case a.BoolValue != nil:
		return "bool", fmt.Sprint(*a.BoolValue), true
	case a.StringValue != nil:
		return "string", *a.StringValue, true
	case a.VersionValue != nil:
		return "version", *a.VersionValue, true
	}
	return "", "", false
}

func intersect(a, b *valueSet) *valueSet {
	if a == nil || b == nil || a.kind != b.kind {
		return nil
	}
	out := &valueSet{kind: a.kind, values: map[string]bool{}}
	for v := range a.values {
		if b.values[v] {
			out.values[v] = true
		}
	}
	if len(out.values) == 0 {
		return nil
	}
	return out
}

// firstNotMatching returns the index of the first value that breaks matchAttribute, or -1. With list-typed
// attributes all values must share an element (of the same type); without, all must be equal scalars.
func (cc *claimCheck) firstNotMatching(values []*resourceapi.DeviceAttribute) int {
	if cc.features.DRAListTypeAttributes {
		var common *valueSet
		for i, v := range values {
			s := asSet(v)
			if s == nil {
				return i
			}
			if i == 0 {
				common = s
				continue
			}
			if common = intersect(common, s); common == nil {
				return i
			}
		}
		return -1
	}
	for i := 1; i < len(values); i++ {
		k0, v0, ok0 := scalar(values[0])
		k, v, ok := scalar(values[i])
		if !ok || !ok0 || k != k0 || v != v0 {
			return i
		}
	}
	return -1
}

// firstNotDistinct returns the index of the first value that shares an element (list-typed) or equals (scalar)
// an earlier value of the same type, or -1.
func (cc *claimCheck) firstNotDistinct(values []*resourceapi.DeviceAttribute) int {
	for i, v := range values {
		if cc.features.DRAListTypeAttributes {
			s := asSet(v)
			if s == nil {
				return i
			}
			for _, prev := range values[:i] {
				if intersect(s, asSet(prev)) != nil {
					return i
				}
			}
			continue
		}
		k, val, ok := scalar(v)
		if !ok {
			if i == 0 {
				// Kubernetes compares a value only with earlier ones, so a first list value passes.
				continue
			}
			return i
		}
		for _, prev := range values[:i] {
			if pk, pv, pok := scalar(prev); pok && pk == k && pv == val {
				return i
			}
		}
	}
	return -1
}

func formatAttribute(a *resourceapi.DeviceAttribute) string {
	if k, v, ok := scalar(a); ok {
		return k + " " + v
	}
	if s := asSet(a); s != nil {
		vals := make([]string, 0, len(s.values))
		for v := range s.values {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		return s.kind + " list [" + strings.Join(vals, ", ") + "]"
	}
	return "of unknown type"
}
