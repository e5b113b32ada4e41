package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

const (
	rqModelA   = `device.attributes["gpu.example.com"].model == "a"`
	rqModelB   = `device.attributes["gpu.example.com"].model == "b"`
	rqBig      = `device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0`
	rqNeedsECC = `device.attributes["gpu.example.com"].ecc`
)

type rqEvent func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error)

func rqNoErr(f func(ctx context.Context, r *allocator.Requeue) []types.NamespacedName) rqEvent {
	return func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) { return f(ctx, r), nil }
}

func TestRequeueWakesTheClaimsAnEventMayLetFit(t *testing.T) {
	partition := func(name, set string) resourceapi.Device {
		d := rqGPU(name, "a", 10)
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set}}
		return d
	}
	classes := []*resourceapi.DeviceClass{rqClass("gpu", ""), rqClass("gpu-a", rqModelA), rqClass("gpu-b", rqModelB)}
	for _, tc := range []struct {
		name    string
		classes []*resourceapi.DeviceClass
		slices  []*resourceapi.ResourceSlice
		rules   []*resourceapi.DeviceTaintRule
		pending []*resourceapi.ResourceClaim
		event   rqEvent
		want    []string
	}{{
		name: "a new slice wakes the claims whose class selects one of its devices",
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"}),
			rqClaim("ns", "wants-b", rqRequest{class: "gpu-b"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 40)))
		},
		want: []string{"ns/wants-a"},
	}, {
		name: "a request selector that rejects every new device keeps the claim asleep",
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "wants-big-a", rqRequest{class: "gpu-a", exprs: []string{rqBig}}),
			rqClaim("ns", "wants-any-a", rqRequest{class: "gpu-a"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 40)))
		},
		want: []string{"ns/wants-any-a"},
	}, {
		name:   "a changed attribute wakes the claims the changed device now serves",
		slices: []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "a", 40), rqGPU("gpu-1", "b", 40))},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"}),
			rqClaim("ns", "wants-b", rqRequest{class: "gpu-b"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 40), rqGPU("gpu-1", "a", 40)))
		},
		want: []string{"ns/wants-a"},
	}, {
		name:    "republishing an unchanged slice wakes nobody",
		slices:  []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "a", 40))},
		pending: []*resourceapi.ResourceClaim{rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"})},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 40)))
		},
	}, {
		name:   "removing a device wakes requests for all devices of its class only",
		slices: []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "a", 40), rqGPU("gpu-1", "b", 40))},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "all-b", rqRequest{class: "gpu-b", all: true}),
			rqClaim("ns", "one-b", rqRequest{class: "gpu-b"}),
			rqClaim("ns", "all-a", rqRequest{class: "gpu-a", all: true}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 40)))
		},
		// The pool's shape changed, so gpu-0 counts as available again: "all-a" may have waited for the
		// pool to become valid.
		want: []string{"ns/all-a", "ns/all-b"},
	}, {
		name:   "a deleted slice wakes requests for all devices of its classes",
		slices: []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "b", 40))},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "all-b", rqRequest{class: "gpu-b", all: true}),
			rqClaim("ns", "one-b", rqRequest{class: "gpu-b"}),
		},
		event: rqNoErr(func(ctx context.Context, r *allocator.Requeue) []types.NamespacedName {
			return r.DeleteSlice(ctx, "n1-gpus")
		}),
		want: []string{"ns/all-b"},
	}, {
		name:   "a device on which a selector failed wakes the claim when it changes",
		slices: []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "b", 40))},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "wants-ecc", rqRequest{class: "gpu", exprs: []string{rqNeedsECC}}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			// gpu-0 becomes model "a": the selector still fails on it, and the failure alone blocks.
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 40)))
		},
		want: []string{"ns/wants-ecc"},
	}, {
		name:    "claims that name a missing class wake when it appears, whatever it selects",
		classes: []*resourceapi.DeviceClass{rqClass("gpu", "")},
		slices:  []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "a", 40))},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"}),
			// The missing class failed the whole claim although the second alternative fits.
			rqClaim("ns", "b-or-any", rqRequest{alternatives: []rqRequest{{class: "gpu-b"}, {class: "gpu"}}}),
			rqClaim("ns", "wants-any", rqRequest{class: "gpu"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateClass(ctx, rqClass("gpu-b", rqModelB))
		},
		want: []string{"ns/b-or-any"},
	}, {
		name:    "a claim that still names a missing class is not woken by devices for its other requests",
		classes: []*resourceapi.DeviceClass{rqClass("gpu", ""), rqClass("gpu-a", rqModelA)},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "a-and-b", rqRequest{class: "gpu-a"}, rqRequest{class: "gpu-b"}),
			rqClaim("ns", "a-or-b", rqRequest{alternatives: []rqRequest{{class: "gpu-a"}, {class: "gpu-b"}}}),
			rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 40)))
		},
		want: []string{"ns/wants-a"},
	}, {
		name:    "a deleted class puts its claims to sleep until it is back",
		classes: []*resourceapi.DeviceClass{rqClass("gpu", ""), rqClass("gpu-a", rqModelA), rqClass("gpu-b", rqModelB)},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "a-and-b", rqRequest{class: "gpu-a"}, rqRequest{class: "gpu-b"}),
			rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			if err := r.DeleteClass(ctx, "gpu-b"); err != nil {
				return nil, err
			}
			got, err := r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 40)))
			if err != nil || !slices.Equal(rqNames(got), []string{"ns/wants-a"}) {
				return nil, fmt.Errorf("with gpu-b deleted: woken %v (%v), want [ns/wants-a]", rqNames(got), err)
			}
			return r.AddOrUpdateClass(ctx, rqClass("gpu-b", rqModelB))
		},
		want: []string{"ns/a-and-b"},
	}, {
		name:    "a class added with a selector that does not compile counts as missing",
		classes: []*resourceapi.DeviceClass{rqClass("gpu", ""), rqClass("gpu-a", rqModelA)},
		slices:  []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "a", 40))},
		pending: []*resourceapi.ResourceClaim{rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"})},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			if _, err := r.AddOrUpdateClass(ctx, rqClass("gpu-a", "device.")); err == nil {
				return nil, errors.New("a selector that does not compile was accepted")
			}
			return r.AddOrUpdateClass(ctx, rqClass("gpu-a", rqModelA))
		},
		want: []string{"ns/wants-a"},
	}, {
		name:   "a changed class wakes the requests for the devices it now selects",
		slices: []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "a", 40), rqGPU("gpu-1", "b", 40))},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"}),
			rqClaim("ns", "wants-b", rqRequest{class: "gpu-b"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateClass(ctx, rqClass("gpu-b", `device.attributes["gpu.example.com"].model != ""`))
		},
		want: []string{"ns/wants-b"},
	}, {
		name:   "deallocation wakes claims the freed device serves, but not admin access requests",
		slices: []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "a", 40), rqGPU("gpu-1", "b", 40))},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"}),
			rqClaim("ns", "admin-a", rqRequest{class: "gpu-a", admin: true}),
			rqClaim("ns", "wants-b", rqRequest{class: "gpu-b"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqAllocated("holder", "n1", false, "gpu-0"))
		},
		want: []string{"ns/wants-a"},
	}, {
		name:   "deallocation of an admin access result frees nothing",
		slices: []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "a", 40))},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqAllocated("holder", "n1", true, "gpu-0"))
		},
	}, {
		name: "deallocation of a partition wakes claims for the devices that share its counters",
		classes: append(slices.Clone(classes),
			rqClass("whole", `device.attributes["gpu.example.com"].model == "whole"`)),
		slices: []*resourceapi.ResourceSlice{rqSlice("n1",
			partition("gpu-0-p0", "gpu-0"), partition("gpu-0-p1", "gpu-0"), partition("gpu-1-p0", "gpu-1"),
			func() resourceapi.Device {
				d := rqGPU("gpu-0-whole", "whole", 80)
				d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0"}}
				return d
			}())},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "wants-whole", rqRequest{class: "whole"}),
			rqClaim("ns", "wants-b", rqRequest{class: "gpu-b"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqAllocated("holder", "n1", false, "gpu-0-p1"))
		},
		want: []string{"ns/wants-whole"},
	}, {
		name:   "a changed taint rule wakes the claims the devices it tainted serve",
		slices: []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "a", 40), rqGPU("gpu-1", "b", 40))},
		rules:  []*resourceapi.DeviceTaintRule{rqRule("broken", "n1", "gpu-0", resourceapi.DeviceTaintEffectNoSchedule)},
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"}),
			rqClaim("ns", "wants-b", rqRequest{class: "gpu-b"}),
		},
		event: rqNoErr(func(ctx context.Context, r *allocator.Requeue) []types.NamespacedName {
			return r.DeleteTaintRule(ctx, "broken")
		}),
		want: []string{"ns/wants-a"},
	}, {
		name:    "removing a taint rule with effect None wakes nobody",
		slices:  []*resourceapi.ResourceSlice{rqSlice("n1", rqGPU("gpu-0", "a", 40))},
		rules:   []*resourceapi.DeviceTaintRule{rqRule("note", "n1", "gpu-0", resourceapi.DeviceTaintEffectNone)},
		pending: []*resourceapi.ResourceClaim{rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"})},
		event: rqNoErr(func(ctx context.Context, r *allocator.Requeue) []types.NamespacedName {
			return r.DeleteTaintRule(ctx, "note")
		}),
	}, {
		name: "firstAvailable subrequests are woken through the class of every alternative",
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "a-or-b", rqRequest{alternatives: []rqRequest{{class: "gpu-a"}, {class: "gpu-b"}}}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "b", 40)))
		},
		want: []string{"ns/a-or-b"},
	}, {
		name: "the answer is sorted by namespace and name and lists each claim once",
		pending: []*resourceapi.ResourceClaim{
			rqClaim("zz", "a", rqRequest{class: "gpu"}),
			rqClaim("aa", "z", rqRequest{class: "gpu-a"}, rqRequest{class: "gpu"}),
			rqClaim("aa", "b", rqRequest{class: "gpu"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 40), rqGPU("gpu-1", "a", 40)))
		},
		want: []string{"aa/b", "aa/z", "zz/a"},
	}, {
		name: "a claim that is no longer pending is never returned",
		pending: []*resourceapi.ResourceClaim{
			rqClaim("ns", "done", rqRequest{class: "gpu-a"}),
			rqClaim("ns", "waiting", rqRequest{class: "gpu-a"}),
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			r.RemovePending("ns", "done")
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 40)))
		},
		want: []string{"ns/waiting"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r, err := allocator.NewRequeue(allocator.RequeueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.classes == nil {
				tc.classes = classes
			}
			for _, c := range tc.classes {
				if _, err := r.AddOrUpdateClass(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range tc.slices {
				if _, err := r.AddOrUpdateSlice(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			for _, rule := range tc.rules {
				if _, err := r.AddOrUpdateTaintRule(ctx, rule); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range tc.pending {
				if err := r.AddPending(c); err != nil {
					t.Fatal(err)
				}
			}
			got, err := tc.event(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if want := append([]string{}, tc.want...); !slices.Equal(rqNames(got), want) {
				t.Errorf("woken %v, want %v", rqNames(got), want)
			}
		})
	}
}

func rqRule(name, pool, device string, effect resourceapi.DeviceTaintEffect) *resourceapi.DeviceTaintRule {
	driver := rqDriver
	return &resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &driver, Pool: &pool, Device: &device},
			Taint:          resourceapi.DeviceTaint{Key: "example.com/broken", Effect: effect},
		},
	}
}

func TestRequeueRejectsInvalidInput(t *testing.T) {
	ctx := context.Background()
	badSlice := rqSlice("n1", rqGPU("", "a", 1))
	noPool := rqSlice("n1")
	noPool.Spec.Pool.Name = ""
	allocated := rqAllocated("held", "n1", false, "gpu-0")
	for _, tc := range []struct {
		name, object, field string
		call                func(r *allocator.Requeue) error
	}{{
		name: "a claim selector that does not compile names the claim and the expression", object: "ResourceClaim ns/c",
		field: "spec.devices.requests[0].exactly.selectors[0].cel.expression",
		call: func(r *allocator.Requeue) error {
			return r.AddPending(rqClaim("ns", "c", rqRequest{class: "gpu", exprs: []string{"device.nope("}}))
		},
	}, {
		name: "a subrequest without a class names the subrequest", object: "ResourceClaim ns/c",
		field: "spec.devices.requests[0].firstAvailable[1].deviceClassName",
		call: func(r *allocator.Requeue) error {
			return r.AddPending(rqClaim("ns", "c", rqRequest{alternatives: []rqRequest{{class: "gpu"}, {}}}))
		},
	}, {
		name: "an allocated claim is not pending", object: "ResourceClaim default/held", field: "status.allocation",
		call: func(r *allocator.Requeue) error { return r.AddPending(allocated) },
	}, {
		name: "a class selector that does not compile names the class", object: "DeviceClass bad",
		field: "spec.selectors[0].cel.expression",
		call: func(r *allocator.Requeue) error {
			_, err := r.AddOrUpdateClass(ctx, rqClass("bad", "1 +"))
			return err
		},
	}, {
		name: "a device without a name names the device", object: "ResourceSlice n1-gpus", field: "spec.devices[0].name",
		call: func(r *allocator.Requeue) error { _, err := r.AddOrUpdateSlice(ctx, badSlice); return err },
	}, {
		name: "a slice without a pool names the pool", object: "ResourceSlice n1-gpus", field: "spec.pool.name",
		call: func(r *allocator.Requeue) error { _, err := r.AddOrUpdateSlice(ctx, noPool); return err },
	}, {
		name: "a nil slice is an error", object: "ResourceSlice",
		call: func(r *allocator.Requeue) error { _, err := r.AddOrUpdateSlice(ctx, nil); return err },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := allocator.NewRequeue(allocator.RequeueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = tc.call(r)
			wantInputError(t, err, tc.object, tc.field)
			if r.Len() != 0 {
				t.Errorf("%d pending claims after a rejected claim, want 0", r.Len())
			}
		})
	}
}

func TestRequeueDoesNotMutateInputs(t *testing.T) {
	ctx := context.Background()
	r, err := allocator.NewRequeue(allocator.RequeueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	class := rqClass("gpu-a", rqModelA)
	slice := rqSlice("n1", rqGPU("gpu-0", "a", 40))
	claim := rqClaim("ns", "c", rqRequest{class: "gpu-a", exprs: []string{rqBig}})
	held := rqAllocated("held", "n1", false, "gpu-0")
	before := []any{class.DeepCopy(), slice.DeepCopy(), claim.DeepCopy(), held.DeepCopy()}
	if _, err := r.AddOrUpdateClass(ctx, class); err != nil {
		t.Fatal(err)
	}
	if err := r.AddPending(claim); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AddOrUpdateSlice(ctx, slice); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ClaimDeallocated(ctx, held); err != nil {
		t.Fatal(err)
	}
	after := []any{class, slice, claim, held}
	for i := range before {
		if !reflect.DeepEqual(before[i], after[i]) {
			t.Errorf("input %d changed: %+v, want %+v", i, after[i], before[i])
		}
	}
}

func TestRequeueCancelledContextWakesMoreNeverLess(t *testing.T) {
	r, err := allocator.NewRequeue(allocator.RequeueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []*resourceapi.DeviceClass{rqClass("gpu-a", rqModelA), rqClass("gpu-b", rqModelB)} {
		if _, err := r.AddOrUpdateClass(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*resourceapi.ResourceClaim{
		rqClaim("ns", "big-a", rqRequest{class: "gpu-a", exprs: []string{rqBig}}),
		rqClaim("ns", "wants-b", rqRequest{class: "gpu-b"}),
	} {
		if err := r.AddPending(c); err != nil {
			t.Fatal(err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	got, err := r.AddOrUpdateSlice(cancelled, rqSlice("n1", rqGPU("gpu-0", "a", 40)))
	if err != nil {
		t.Fatal(err)
	}
	// The request selector could not be evaluated, so the claim counts as a candidate.
	if want := []string{"ns/big-a"}; !slices.Equal(rqNames(got), want) {
		t.Errorf("woken with a cancelled context: %v, want %v", rqNames(got), want)
	}
	// The class verdicts recorded under the cancelled context are exact: freeing the device later wakes
	// nothing for class gpu-b, and the request selector now rejects the 40Gi device.
	got, err = r.ClaimDeallocated(ctx, rqAllocated("held", "n1", false, "gpu-0"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("woken after the cancelled update: %v, want none", rqNames(got))
	}
}

// A class event is evaluated against every published device; a cancelled context ends it with the
// context's error and leaves the Requeue as if the event had not been delivered.
func TestRequeueClassEventsHonourTheContext(t *testing.T) {
	setup := func(t *testing.T) *allocator.Requeue {
		r, err := allocator.NewRequeue(allocator.RequeueOptions{})
		must(t, err)
		_, err = r.AddOrUpdateSlice(context.Background(), rqSlice("n1", rqGPU("gpu-0", "a", 40), rqGPU("gpu-1", "b", 40)))
		must(t, err)
		_, err = r.AddOrUpdateClass(context.Background(), rqClass("gpu-a", rqModelA))
		must(t, err)
		must(t, r.AddPending(rqClaim("ns", "wants-a", rqRequest{class: "gpu-a"})))
		return r
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	// What a later event wakes tells whether the class is known and with which selectors.
	wokenBySlice := func(t *testing.T, r *allocator.Requeue) []string {
		t.Helper()
		got, err := r.AddOrUpdateSlice(context.Background(), rqSlice("n2", rqGPU("gpu-0", "a", 40)))
		must(t, err)
		return rqNames(got)
	}
	for _, tc := range []struct {
		name  string
		event func(r *allocator.Requeue) error
	}{{
		name: "a class update",
		event: func(r *allocator.Requeue) error {
			_, err := r.AddOrUpdateClass(cancelled, rqClass("gpu-a", rqModelB))
			return err
		},
	}, {
		name: "a class update with a selector that does not compile",
		event: func(r *allocator.Requeue) error {
			_, err := r.AddOrUpdateClass(cancelled, rqClass("gpu-a", "device."))
			return err
		},
	}, {
		name:  "a class deletion",
		event: func(r *allocator.Requeue) error { return r.DeleteClass(cancelled, "gpu-a") },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := setup(t)
			if err := tc.event(r); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "DeviceClass gpu-a") {
				t.Fatalf("got %v, want the context's error naming the class", err)
			}
			if got := wokenBySlice(t, r); !slices.Equal(got, []string{"ns/wants-a"}) {
				t.Errorf("after the cancelled event a model-a GPU wakes %v, want [ns/wants-a]: the class must be unchanged", got)
			}
		})
	}
	t.Run("a live context applies the same events", func(t *testing.T) {
		r := setup(t)
		must(t, r.DeleteClass(context.Background(), "gpu-a"))
		if got := wokenBySlice(t, r); len(got) != 0 {
			t.Errorf("with the class deleted a model-a GPU wakes %v", got)
		}
	})
}

// wantInputError fails the test unless err is an *InputError wrapping ErrInvalidInput that names this
// object and field.
func wantInputError(t *testing.T, err error, object, field string) {
	t.Helper()
	var ie *allocator.InputError
	if !errors.As(err, &ie) || !errors.Is(err, allocator.ErrInvalidInput) {
		t.Fatalf("error %v, want an *InputError wrapping ErrInvalidInput", err)
	}
	if ie.Object != object || ie.Field != field {
		t.Errorf("error names %q field %q, want %q field %q", ie.Object, ie.Field, object, field)
	}
}
