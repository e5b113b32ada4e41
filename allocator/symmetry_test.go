package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// TestSymmetryKeepsSearchSmall: two requests that each have enough candidates but together need more
// devices than the node has. Every request passes the candidate count, so only the search can tell; the
// Kubernetes allocator tries every combination of the first request (C(21,10) of them). Devices that no
// check of the call tells apart are interchangeable, and the search tries one of each kind per position.
func TestSymmetryKeepsSearchSmall(t *testing.T) {
	const budget = 5000
	for _, tc := range []struct {
		name        string
		attrs       func(i int) map[string]any
		constraints []resourceapi.DeviceConstraint
		// derived: request b asks for 11 instead of 12 devices and derives example.com/serial (the serial
		// modulo 5), which counting before the search does not compare; the call keeps symmetry to twins.
		derived bool
		wantErr error
	}{
		{
			name:    "21 identical devices: does not fit, decided within the step budget",
			attrs:   func(int) map[string]any { return map[string]any{"model": "a100"} },
			wantErr: allocator.ErrUnsatisfiable,
		},
		{
			name:    "21 devices with serials nothing reads: the same verdicts everywhere, decided within the step budget",
			attrs:   func(i int) map[string]any { return map[string]any{"model": "a100", "serial": i} },
			wantErr: allocator.ErrUnsatisfiable,
		},
		{
			name:        "21 devices whose serials a constraint compares: does not fit, decided by counting the distinct serials",
			attrs:       func(i int) map[string]any { return map[string]any{"model": "a100", "serial": i} },
			constraints: []resourceapi.DeviceConstraint{distinctAttr(driverA+"/serial", "a", "b")},
			wantErr:     allocator.ErrUnsatisfiable,
		},
		{
			name:        "21 devices whose serials a derived attribute reads, five values for eleven devices: the search gives up, reported apart from does not fit",
			attrs:       func(i int) map[string]any { return map[string]any{"model": "a100", "serial": i} },
			derived:     true,
			constraints: []resourceapi.DeviceConstraint{distinctAttr("example.com/serial", "b")},
			wantErr:     allocator.ErrSearchBudget,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var devs []resourceapi.Device
			for i := range 21 {
				devs = append(devs, device(fmt.Sprintf("gpu-%d", i), tc.attrs(i)))
			}
			for _, strategy := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit, allocator.Spread} {
				f := allocator.DefaultFeatures()
				f.DRADerivedAttributes = true
				s := allocator.NewSnapshot(allocator.Options{StepBudget: budget, Strategy: strategy, Features: &f})
				if err := s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, node1, devs...)); err != nil {
					t.Fatal(err)
				}
				if err := s.AddOrUpdateClass(class("gpu", `device.attributes["`+driverA+`"].model == "a100"`)); err != nil {
					t.Fatal(err)
				}
				b := exact("b", "gpu", 12)
				if tc.derived {
					b = withDerived(exact("b", "gpu", 11), "example.com/serial", `device.attributes["`+driverA+`"].serial % 5`)
				}
				c := withConstraints(claim("c", exact("a", "gpu", 10), b), tc.constraints...)
				_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("%s: got %v, want %v", strategy, err, tc.wantErr)
				}
				if errors.Is(err, allocator.ErrSearchBudget) && errors.Is(err, allocator.ErrUnsatisfiable) {
					t.Fatalf("%s: %v is both gave up and does not fit", strategy, err)
				}
			}
		})
	}
}

// Devices that take shares are interchangeable while the same capacity is left on them: 13 shares of 6Gi
// on 12 devices of 10Gi (one share each) do not fit, and the search decides it within its budget
// although every device has a distinct serial.
func TestSymmetryOfSharedDevices(t *testing.T) {
	var devs []resourceapi.Device
	for i := range 12 {
		d := shareable(fmt.Sprintf("nic-%d", i), "10Gi", nil)
		d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"serial": {IntValue: ptr(int64(i))}}
		devs = append(devs, d)
	}
	s := allocator.NewSnapshot(allocator.Options{StepBudget: 5000})
	must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool-1", devs...)))
	must(t, s.AddOrUpdateClass(anyClass))
	c := claim("c", withCapacity(exact("a", "any", 4), "6Gi"), withCapacity(exact("b", "any", 8), "6Gi"), withCapacity(exact("c", "any", 1), "6Gi"))
	_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
	if !errors.Is(err, allocator.ErrUnsatisfiable) {
		t.Fatalf("got %v, want does not fit within the budget", err)
	}
	// With room for the thirteenth share on one device, it fits.
	devs[11] = shareable("nic-11", "12Gi", nil)
	must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool-1", devs...)))
	if _, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c}); err != nil {
		t.Fatalf("with a 12Gi device: %v", err)
	}
}

// Devices that differ only in their allocated state are not interchangeable: a request with admin access
// may take a device another claim holds, where a request without it may not. Two identical devices, the
// second held; claim a (admin access) first takes the free one, after which b cannot fit, so the search
// must go on to the held twin for a and leave the free one to b, as the Kubernetes allocator does.
func TestSymmetryTellsAllocatedStateApart(t *testing.T) {
	held := []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "dev-2"))}
	claims := []*resourceapi.ResourceClaim{claim("a", admin(exact("req", "any", 1))), claim("b", exact("req", "any", 1))}
	runAll(t, []scenario{{
		name:      "twins of one slice, one held: a takes the held one, b the free one",
		slices:    attrSlice(devices("dev-1", "dev-2")...),
		classes:   []*resourceapi.DeviceClass{anyClass},
		allocated: held,
		claims:    claims,
		want:      [][]string{{"req=pool-1/dev-2"}, {"req=pool-1/dev-1"}},
	}, {
		name: "equal devices of two slices, one held: a takes the held one, b the free one",
		slices: []*resourceapi.ResourceSlice{
			withPool(nodeSlice("s1", node1, driverA, "pool-1", device("dev-1", nil)), 1, 2),
			withPool(nodeSlice("s2", node1, driverA, "pool-1", device("dev-2", nil)), 1, 2),
		},
		classes:   []*resourceapi.DeviceClass{anyClass},
		allocated: held,
		claims:    claims,
		want:      [][]string{{"req=pool-1/dev-2"}, {"req=pool-1/dev-1"}},
	}, {
		name:      "three twins, two held, two admin claims and one plain: the plain one gets the free device",
		slices:    attrSlice(devices("dev-1", "dev-2", "dev-3")...),
		classes:   []*resourceapi.DeviceClass{anyClass},
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "dev-2"), result(driverA, "pool-1", "dev-3"))},
		claims: []*resourceapi.ResourceClaim{
			claim("a", admin(exact("req", "any", 1))), claim("b", admin(exact("req", "any", 1))), claim("c", exact("req", "any", 1)),
		},
		want: [][]string{{"req=pool-1/dev-2"}, {"req=pool-1/dev-2"}, {"req=pool-1/dev-1"}},
	}})
}

// Twins are not interchangeable for a choice that a request for all devices follows: that request takes
// its devices in a fixed order and stops at the first it cannot add, silently when it is in use, with an
// error when it breaks a constraint. Claim a takes one of two identical devices; claim b asks for all of
// them under a distinctAttribute constraint on an attribute they lack. With dev-1 taken, b stops at dev-1
// in use; with dev-2 taken, it reaches dev-1 and breaks the constraint. Kubernetes tries both and
// reports the broken constraint, so the answer is that error, not "does not fit", with every strategy.
func TestSymmetryBeforeAnAllRequest(t *testing.T) {
	for _, strategy := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit, allocator.Spread} {
		s := allocator.NewSnapshot(allocator.Options{Strategy: strategy})
		must(t, s.AddOrUpdateSlice(attrSlice(devices("dev-1", "dev-2")...)[0]))
		must(t, s.AddOrUpdateClass(anyClass))
		b := withConstraints(claim("b", allOf("req", "any")), distinctAttr(driverA+"/numa"))
		_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{claim("a", exact("req", "any", 1)), b})
		var in *allocator.InputError
		if !errors.As(err, &in) || errors.Is(err, allocator.ErrUnsatisfiable) || !strings.Contains(err.Error(), "constraint would not be satisfied") {
			t.Fatalf("%s: got %v, want the input error of the broken constraint", strategy, err)
		}
	}
}
