package allocator_test

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

func attrSlice(devs ...resourceapi.Device) []*resourceapi.ResourceSlice {
	return []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1", devs...)}
}

func withDerived(r resourceapi.DeviceRequest, name, expr string) resourceapi.DeviceRequest {
	r.Exactly.DerivedAttributes = append(r.Exactly.DerivedAttributes, resourceapi.DeviceDerivedAttribute{
		Name: resourceapi.FullyQualifiedName(name), Expression: expr,
	})
	return r
}

func TestAllocateMatchAttribute(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	two := func(cs ...resourceapi.DeviceConstraint) []*resourceapi.ResourceClaim {
		return []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("req", "any", 2)), cs...)}
	}
	runAll(t, []scenario{{
		name: "string attribute: the first device fixes the value",
		slices: attrSlice(device("dev-1", map[string]any{"numa": "x"}), device("dev-2", map[string]any{"numa": "y"}),
			device("dev-3", map[string]any{"numa": "x"})),
		classes: classes, claims: two(matchAttr(driverA + "/numa")),
		want: [][]string{{"req=pool-1/dev-1", "req=pool-1/dev-3"}},
	}, {
		name: "int attribute: backtracks when no partner for the first device exists",
		slices: attrSlice(device("dev-1", map[string]any{"numa": 0}), device("dev-2", map[string]any{"numa": 1}),
			device("dev-3", map[string]any{"numa": 1})),
		classes: classes, claims: two(matchAttr(driverA + "/numa")),
		want: [][]string{{"req=pool-1/dev-2", "req=pool-1/dev-3"}},
	}, {
		name:    "bool attribute that differs: does not fit",
		slices:  attrSlice(device("dev-1", map[string]any{"on": true}), device("dev-2", map[string]any{"on": false})),
		classes: classes, claims: two(matchAttr(driverA + "/on")),
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "version attributes compare as strings",
		slices: attrSlice(device("dev-1", map[string]any{"fw": version("1.0.0")}), device("dev-2", map[string]any{"fw": version("1.0.1")}),
			device("dev-3", map[string]any{"fw": version("1.0.0")})),
		classes: classes, claims: two(matchAttr(driverA + "/fw")),
		want: [][]string{{"req=pool-1/dev-1", "req=pool-1/dev-3"}},
	}, {
		name:    "a device without the attribute never satisfies the constraint",
		slices:  attrSlice(device("dev-1", nil), device("dev-2", map[string]any{"numa": 1}), device("dev-3", map[string]any{"numa": 1})),
		classes: classes, claims: two(matchAttr(driverA + "/numa")),
		want: [][]string{{"req=pool-1/dev-2", "req=pool-1/dev-3"}},
	}, {
		name:    "an attribute of another domain is looked up by its full name",
		slices:  attrSlice(device("dev-1", map[string]any{"other.example.com/numa": 1}), device("dev-2", map[string]any{"other.example.com/numa": 1})),
		classes: classes, claims: two(matchAttr("other.example.com/numa")),
		want: [][]string{{"req=pool-1/dev-1", "req=pool-1/dev-2"}},
	}, {
		name: "a constraint limited to some requests ignores the others",
		slices: attrSlice(device("dev-1", map[string]any{"numa": 0}), device("dev-2", map[string]any{"numa": 1}),
			device("dev-3", map[string]any{"numa": 1})),
		classes: classes,
		claims: []*resourceapi.ResourceClaim{withConstraints(claim("c",
			exact("free", "any", 1), exact("x", "any", 1), exact("y", "any", 1)),
			matchAttr(driverA+"/numa", "x", "y"))},
		want: [][]string{{"free=pool-1/dev-1", "x=pool-1/dev-2", "y=pool-1/dev-3"}},
	}, {
		name: "list-type attributes are not comparable without DRAListTypeAttributes",
		slices: attrSlice(device("dev-1", map[string]any{"numa": []int64{0, 1}}),
			device("dev-2", map[string]any{"numa": []int64{1}})),
		classes: classes, claims: two(matchAttr(driverA + "/numa")),
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name:     "list-type attributes match when all devices share a value",
		features: ptr(allocator.AllFeatures()),
		slices: attrSlice(device("dev-1", map[string]any{"numa": []int64{0, 1}}),
			device("dev-2", map[string]any{"numa": []int64{2}}), device("dev-3", map[string]any{"numa": 1})),
		classes: classes, claims: two(matchAttr(driverA + "/numa")),
		want: [][]string{{"req=pool-1/dev-1", "req=pool-1/dev-3"}},
	}, {
		name:     "derived attributes take the place of the device's attribute",
		features: ptr(allocator.AllFeatures()),
		slices: attrSlice(device("dev-1", map[string]any{"model": "h100"}), device("dev-2", map[string]any{"model": "a100"}),
			device("dev-3", map[string]any{"model": "h200"})),
		classes: classes,
		claims: []*resourceapi.ResourceClaim{withConstraints(claim("c", withDerived(exact("req", "any", 2), "example.com/family",
			`device.attributes["`+driverA+`"].model.startsWith("h") ? "hopper" : "other"`)),
			matchAttr("example.com/family"))},
		want: [][]string{{"req=pool-1/dev-1", "req=pool-1/dev-3"}},
	}, {
		name:    "derived attributes are rejected when DRADerivedAttributes is off",
		slices:  attrSlice(device("dev-1", nil)),
		classes: classes,
		claims: []*resourceapi.ResourceClaim{withConstraints(claim("c", withDerived(exact("req", "any", 1), "example.com/x", `"x"`)),
			matchAttr("example.com/x"))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "derivedAttributes",
	}, {
		name:    "an empty constraint is invalid",
		slices:  attrSlice(device("dev-1", nil)),
		classes: classes,
		claims:  []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("req", "any", 1)), resourceapi.DeviceConstraint{})},
		wantErr: allocator.ErrInvalidInput, wantErrText: "spec.devices.constraints[0]",
	}})
}

func TestAllocateDistinctAttribute(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	two := func(cs ...resourceapi.DeviceConstraint) []*resourceapi.ResourceClaim {
		return []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("req", "any", 2)), cs...)}
	}
	runAll(t, []scenario{{
		name: "devices get different values",
		slices: attrSlice(device("dev-1", map[string]any{"numa": 0}), device("dev-2", map[string]any{"numa": 0}),
			device("dev-3", map[string]any{"numa": 1})),
		classes: classes, claims: two(distinctAttr(driverA + "/numa")),
		want: [][]string{{"req=pool-1/dev-1", "req=pool-1/dev-3"}},
	}, {
		name:    "all values equal: does not fit",
		slices:  attrSlice(device("dev-1", map[string]any{"numa": "x"}), device("dev-2", map[string]any{"numa": "x"})),
		classes: classes, claims: two(distinctAttr(driverA + "/numa")),
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name:     "list-type attributes must be disjoint",
		features: ptr(allocator.AllFeatures()),
		slices: attrSlice(device("dev-1", map[string]any{"ports": []string{"p1", "p2"}}),
			device("dev-2", map[string]any{"ports": []string{"p2"}}), device("dev-3", map[string]any{"ports": "p3"})),
		classes: classes, claims: two(distinctAttr(driverA + "/ports")),
		want: [][]string{{"req=pool-1/dev-1", "req=pool-1/dev-3"}},
	}, {
		name:    "a device without the attribute never satisfies the constraint",
		slices:  attrSlice(device("dev-1", nil), device("dev-2", map[string]any{"numa": 0}), device("dev-3", map[string]any{"numa": 1})),
		classes: classes, claims: two(distinctAttr(driverA + "/numa")),
		want: [][]string{{"req=pool-1/dev-2", "req=pool-1/dev-3"}},
	}})
}
