package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// modelDevices are devices with a string attribute "model".
func modelDevices(nameModel ...string) []resourceapi.Device {
	var out []resourceapi.Device
	for i := 0; i < len(nameModel); i += 2 {
		out = append(out, device(nameModel[i], map[string]any{"model": nameModel[i+1]}))
	}
	return out
}

func model(m string) string {
	return fmt.Sprintf(`device.attributes[%q].model == %q`, driverA, m)
}

func manyDevices(n int) []resourceapi.Device {
	out := make([]resourceapi.Device, n)
	for i := range out {
		out[i] = device(fmt.Sprintf("dev-%02d", i), nil)
	}
	return out
}

func TestAllocateAllocationModeAll(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass, class("model-a", model("a"))}
	twoA := []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1", modelDevices("dev-1", "a", "dev-2", "a", "dev-3", "b")...)}
	runAll(t, []scenario{{
		name: "all devices that match the class", slices: twoA, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", allOf("req", "model-a"))},
		want:   [][]string{{"req=pool-1/dev-1", "req=pool-1/dev-2"}},
	}, {
		name: "all devices, one already allocated: does not fit", slices: twoA, classes: classes,
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "dev-2"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", allOf("req", "model-a"))},
		wantErr:   allocator.ErrUnsatisfiable,
	}, {
		name: "all devices while a pool on the node is incomplete: the allocation stops",
		slices: []*resourceapi.ResourceSlice{
			twoA[0],
			withPool(nodeSlice("s2", node1, driverA, "pool-2", devices("dev-9")...), 1, 2),
		},
		classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", allOf("req", "model-a"))},
		wantErr: allocator.ErrPoolNotReady, wantErrText: "pool-2 is currently being updated",
	}, {
		name:    "all devices when none match: does not fit",
		slices:  []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1", modelDevices("dev-1", "b")...)},
		classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", allOf("req", "model-a"))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "all devices after a request that took one of them: does not fit", slices: twoA, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("one", "model-a", 1), allOf("all", "model-a"))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "all devices and then one more of another kind", slices: twoA, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", allOf("all", "model-a"), exact("one", "any", 1))},
		want:   [][]string{{"all=pool-1/dev-1", "all=pool-1/dev-2", "one=pool-1/dev-3"}},
	}, {
		name: "all devices breaking a claim constraint is an error, as in Kubernetes",
		slices: []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1",
			modelDevices("dev-1", "a", "dev-2", "b")...)},
		classes: classes,
		claims:  []*resourceapi.ResourceClaim{withConstraints(claim("c", allOf("req", "any")), matchAttr(driverA+"/model"))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "constraint would not be satisfied",
	}})
}

func TestAllocatePrioritizedList(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	ab := []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1", modelDevices("dev-1", "a", "dev-2", "b")...)}
	noPrioritized := allocator.DefaultFeatures()
	noPrioritized.DRAPrioritizedList = false
	runAll(t, []scenario{{
		name: "the first subrequest that fits is used and named request/subrequest", slices: ab, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", firstAvailable("req",
			sub("h200", "any", 1, model("h200")), sub("b", "any", 1, model("b"))))},
		want: [][]string{{"req/b=pool-1/dev-2"}},
	}, {
		name: "no subrequest fits: does not fit", slices: ab, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", firstAvailable("req",
			sub("x", "any", 1, model("x")), sub("three", "any", 3)))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "a later request's failure moves an earlier request to its next alternative", slices: ab, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c",
			firstAvailable("first", sub("two", "any", 2), sub("b", "any", 1, model("b"))),
			exact("second", "any", 1, model("a")))},
		want: [][]string{{"first/b=pool-1/dev-2", "second=pool-1/dev-1"}},
	}, {
		name: "a later claim's failure moves an earlier claim to its next alternative", slices: ab, classes: classes,
		claims: []*resourceapi.ResourceClaim{
			claim("c1", firstAvailable("req", sub("a", "any", 1, model("a")), sub("b", "any", 1, model("b")))),
			claim("c2", exact("req", "any", 1, model("a"))),
		},
		want: [][]string{{"req/b=pool-1/dev-2"}, {"req=pool-1/dev-1"}},
	}, {
		name: "subrequests are rejected when DRAPrioritizedList is off", features: &noPrioritized, slices: ab, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", firstAvailable("req", sub("any", "any", 1)))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "spec.devices.requests[0].firstAvailable",
	}, {
		name: "a subrequest asking for all devices of an empty class falls through", slices: ab,
		classes: []*resourceapi.DeviceClass{anyClass, class("none", "false")},
		claims: []*resourceapi.ResourceClaim{claim("c", firstAvailable("req",
			resourceapi.DeviceSubRequest{Name: "all", DeviceClassName: "none", AllocationMode: resourceapi.DeviceAllocationModeAll},
			sub("one", "any", 1)))},
		want: [][]string{{"req/one=pool-1/dev-1"}},
	}, {
		name: "a constraint naming the request applies to its subrequests",
		slices: []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1",
			modelDevices("dev-1", "a", "dev-2", "b", "dev-3", "b")...)},
		classes: classes,
		claims: []*resourceapi.ResourceClaim{withConstraints(claim("c",
			exact("fixed", "any", 1, model("b")),
			firstAvailable("flex", sub("one", "any", 1))),
			matchAttr(driverA+"/model", "fixed", "flex"))},
		want: [][]string{{"fixed=pool-1/dev-2", "flex/one=pool-1/dev-3"}},
	}, {
		name: "a constraint naming one subrequest does not apply to the others",
		slices: []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1",
			modelDevices("dev-1", "a", "dev-2", "b")...)},
		classes: classes,
		claims: []*resourceapi.ResourceClaim{withConstraints(claim("c",
			exact("fixed", "any", 1, model("b")),
			firstAvailable("flex", sub("first", "any", 1), sub("second", "any", 1))),
			matchAttr(driverA+"/model", "fixed", "flex/second"))},
		want: [][]string{{"fixed=pool-1/dev-2", "flex/first=pool-1/dev-1"}},
	}})
}

func TestAllocateResultLimit(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	many := []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1", manyDevices(40)...)}
	runAll(t, []scenario{{
		name: "32 devices in one claim fit", slices: many, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 32))},
		check: func(t *testing.T, r []resourceapi.AllocationResult) {
			if n := len(r[0].Devices.Results); n != 32 {
				t.Errorf("got %d devices", n)
			}
		},
	}, {
		name: "33 devices in one request are invalid", slices: many, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 33))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "exceeds the claim limit of 32",
	}, {
		name: "requests summing to 33 devices are invalid", slices: many, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("a", "any", 16), exact("b", "any", 17))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "with 16 already accounted for",
	}, {
		name: "all devices beyond 32 are invalid", slices: many, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", allOf("req", "any"))},
		wantErr: allocator.ErrInvalidInput,
	}, {
		name: "a subrequest that cannot fit within 32 results is skipped", slices: many, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c",
			exact("first", "any", 2),
			firstAvailable("second", sub("big", "any", 31), sub("small", "any", 1)))},
		check: func(t *testing.T, r []resourceapi.AllocationResult) {
			got := describe(r)[0]
			if len(got) != 3 || got[2] != "second/small=pool-1/dev-02" {
				t.Errorf("got %q", got)
			}
		},
	}})
}

func TestAllocateFailsFast(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass, class("none", "false")}
	many := []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1", manyDevices(32)...)}
	runAll(t, []scenario{{
		// Without the check the search tries every 8 of 32 devices before giving up.
		name: "a request nothing can serve ends the search before it starts", slices: many, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("gpus", "any", 8), exact("nic", "none", 1))},
		wantErr: allocator.ErrUnsatisfiable, wantErrText: `claim default/c, request "nic": needs 1 device, 0 match and are free`,
	}, {
		name: "a selector error on a later request is still reported when the search reaches it", slices: many, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", exact("gpus", "any", 1),
			exact("bad", "any", 1, `device.attributes["`+driverA+`"].missing == 1`))},
		wantErr: allocator.ErrInvalidInput,
	}, {
		name: "a selector error on a later request is not reported when an earlier request cannot be served", slices: many, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", exact("nic", "none", 1),
			exact("bad", "any", 1, `device.attributes["`+driverA+`"].missing == 1`))},
		wantErr: allocator.ErrUnsatisfiable,
	}})
}

// A claim past the result limit is refused on every node of a filter pass, so the refusal is cheap: the
// error names the claim and the request and says how many devices, in two allocations.
func TestClaimLimitErrorIsCheap(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	if err := s.AddOrUpdateSlice(nodeSlice("s1", node1, driverA, "pool-1", manyDevices(40)...)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddOrUpdateClass(anyClass); err != nil {
		t.Fatal(err)
	}
	claims := []*resourceapi.ResourceClaim{claim("c", exact("a", "any", 16), exact("b", "any", 17))}
	ctx, n := context.Background(), node(node1, nil)
	_, err := s.Fits(ctx, n, claims)
	var ie *allocator.InputError
	if !errors.As(err, &ie) || !errors.Is(err, allocator.ErrInvalidInput) {
		t.Fatalf("got %v, want an InputError", err)
	}
	want := "ResourceClaim default/c: spec.devices.requests[1]: adding 17 devices exceeds the claim limit of 32, with 16 already accounted for"
	if ie.Object != "ResourceClaim default/c" || ie.Field != "spec.devices.requests[1]" || err.Error() != want {
		t.Errorf("got object %q, field %q, message %q; want %q", ie.Object, ie.Field, err.Error(), want)
	}
	if raceDetector {
		return // allocation counts mean nothing under the race detector
	}
	if allocs := testing.AllocsPerRun(20, func() { _, _ = s.Fits(ctx, n, claims) }); allocs > 2 {
		t.Errorf("%v allocations, want at most 2", allocs)
	}
}
