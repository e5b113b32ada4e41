package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

// rqLimit is a limit of owner on class: devices when name is empty, else the capacity name.
func rqLimit(owner, class string, kind allocator.QuotaKind, name, max string) allocator.QuotaLimit {
	return allocator.QuotaLimit{Owner: owner, Class: class, Kind: kind, Name: name, Max: resource.MustParse(max)}
}

// rqOver is a limit on devices that an owner holding held would pass by asking for asked more.
func rqOver(owner, class string, held, max, asked int64) allocator.QuotaExceeded {
	return allocator.QuotaExceeded{
		Limit: allocator.QuotaLimit{Owner: owner, Class: class, Kind: allocator.QuotaDevices, Max: *resource.NewQuantity(max, resource.DecimalSI)},
		Held:  *resource.NewQuantity(held, resource.DecimalSI), Asked: *resource.NewQuantity(asked, resource.DecimalSI),
	}
}

// rqHolder is an allocated claim of namespace with one request "r0" for class, holding devices of pool.
func rqHolder(namespace, name, class, pool string, devices ...string) *resourceapi.ResourceClaim {
	c := rqAllocated(name, pool, false, devices...)
	c.Namespace = namespace
	c.Spec.Devices.Requests[0].Exactly.DeviceClassName = class
	return c
}

// rqRefused is a pending claim with the limits it was refused for.
type rqRefused struct {
	claim    *resourceapi.ResourceClaim
	exceeded []allocator.QuotaExceeded
}

func TestRequeueWakesClaimsRefusedForQuotaWhenTheQuotaMayHaveRoom(t *testing.T) {
	classes := []*resourceapi.DeviceClass{rqClass("gpu", ""), rqClass("gpu-a", rqModelA), rqClass("gpu-b", rqModelB)}
	n1 := rqSlice("n1", rqGPU("gpu-0", "a", 40), rqGPU("gpu-1", "a", 40), rqGPU("gpu-2", "b", 40))
	// ml may hold one device of gpu-a and holds it; lab may hold as many as it likes.
	quota := &allocator.Quota{Limits: []allocator.QuotaLimit{rqLimit("ml", "gpu-a", allocator.QuotaDevices, "", "1")}}
	overA := []allocator.QuotaExceeded{rqOver("ml", "gpu-a", 1, 1, 1)}
	trainA := rqRefused{rqClaim("ml", "train", rqRequest{class: "gpu-a"}), overA}
	memOver := allocator.QuotaExceeded{
		Limit: rqLimit("ml", "gpu-a", allocator.QuotaCapacity, "memory", "40Gi"), Held: resource.MustParse("40Gi"), Asked: resource.MustParse("40Gi"),
	}
	for _, tc := range []struct {
		name    string
		quota   *allocator.Quota
		pending []*resourceapi.ResourceClaim
		refused []rqRefused
		event   rqEvent
		want    []string
	}{{
		name:    "a device another owner frees does not wake a claim its own quota on devices holds back",
		pending: []*resourceapi.ResourceClaim{rqClaim("ml", "plain", rqRequest{class: "gpu-a"})},
		refused: []rqRefused{trainA},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqHolder("lab", "done", "gpu-a", "n1", "gpu-1"))
		},
		want: []string{"ml/plain"},
	}, {
		name:    "a new device its class selects does not wake it either",
		refused: []rqRefused{trainA},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n2", rqGPU("gpu-0", "a", 40)))
		},
	}, {
		name:    "a claim of the same owner deallocated wakes it: it frees quota",
		refused: []rqRefused{trainA, {rqClaim("lab", "other", rqRequest{class: "gpu-a"}), []allocator.QuotaExceeded{rqOver("lab", "gpu-a", 3, 3, 1)}}},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqHolder("ml", "done", "gpu-a", "n1", "gpu-0"))
		},
		want: []string{"ml/train"},
	}, {
		name:    "a claim of the same owner deallocated, held under a class the claim does not ask for, does not",
		refused: []rqRefused{trainA},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqHolder("ml", "done", "gpu-b", "n1", "gpu-2"))
		},
	}, {
		name:    "an admin access result of the same owner frees no quota",
		refused: []rqRefused{trainA},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			c := rqAllocated("done", "n1", true, "gpu-0")
			c.Namespace, c.Spec.Devices.Requests[0].Exactly.DeviceClassName = "ml", "gpu-a"
			return r.ClaimDeallocated(ctx, c)
		},
	}, {
		name:    "a raised limit wakes the claims of its owner and class",
		quota:   quota,
		refused: []rqRefused{trainA, {rqClaim("ml", "infer", rqRequest{class: "gpu-b"}), []allocator.QuotaExceeded{rqOver("ml", "gpu-b", 0, 0, 1)}}},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.SetQuota(&allocator.Quota{Limits: []allocator.QuotaLimit{
				rqLimit("ml", "gpu-a", allocator.QuotaDevices, "", "2"), rqLimit("ml", "gpu-b", allocator.QuotaDevices, "", "0"),
			}})
		},
		want: []string{"ml/train"},
	}, {
		name:    "a removed limit wakes them",
		quota:   quota,
		refused: []rqRefused{trainA},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.SetQuota(nil)
		},
		want: []string{"ml/train"},
	}, {
		name:    "a lowered limit, a new one or another owner's raised wakes nobody",
		quota:   &allocator.Quota{Limits: append(slices.Clone(quota.Limits), rqLimit("lab", "gpu-a", allocator.QuotaDevices, "", "1"))},
		refused: []rqRefused{trainA},
		pending: []*resourceapi.ResourceClaim{rqClaim("lab", "plain", rqRequest{class: "gpu-a"})},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.SetQuota(&allocator.Quota{Limits: []allocator.QuotaLimit{
				rqLimit("ml", "gpu-a", allocator.QuotaDevices, "", "0"), rqLimit("ml", "gpu-a", allocator.QuotaCapacity, "memory", "80Gi"),
				rqLimit("lab", "gpu-a", allocator.QuotaDevices, "", "5"),
			}})
		},
	}, {
		name:    "a raised limit that another limit on the same resource still caps wakes nobody",
		quota:   &allocator.Quota{Limits: append(slices.Clone(quota.Limits), quota.Limits[0])},
		refused: []rqRefused{trainA},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.SetQuota(&allocator.Quota{Limits: append(slices.Clone(quota.Limits), rqLimit("ml", "gpu-a", allocator.QuotaDevices, "", "3"))})
		},
	}, {
		name: "an alternative within the quota still waits for devices",
		refused: []rqRefused{
			{rqClaim("ml", "a-or-b", rqRequest{alternatives: []rqRequest{{class: "gpu-a"}, {class: "gpu-b"}}}), overA},
			{rqClaim("ml", "a-only", rqRequest{class: "gpu-a"}), overA},
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n2", rqGPU("gpu-0", "a", 40), rqGPU("gpu-1", "b", 40)))
		},
		want: []string{"ml/a-or-b"},
	}, {
		name: "an owner that holds more than its limit still takes an alternative the limit does not count",
		refused: []rqRefused{
			{rqClaim("ml", "a-or-b", rqRequest{alternatives: []rqRequest{{class: "gpu-a"}, {class: "gpu-b"}}}), []allocator.QuotaExceeded{rqOver("ml", "gpu-a", 2, 1, 1)}},
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n2", rqGPU("gpu-0", "b", 40)))
		},
		want: []string{"ml/a-or-b"},
	}, {
		name: "a request whose own devices fit the quota waits for devices: the claims of a pod may have passed it together",
		refused: []rqRefused{
			{rqClaim("ml", "one", rqRequest{class: "gpu-a"}), []allocator.QuotaExceeded{rqOver("ml", "gpu-a", 0, 1, 2)}},
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqHolder("lab", "done", "gpu-a", "n1", "gpu-1"))
		},
		want: []string{"ml/one"},
	}, {
		name: "the other requests of the claim count: a device for one request does not wake it when another passes the quota",
		refused: []rqRefused{
			{rqClaim("ml", "two", rqRequest{class: "gpu-a", count: 2}, rqRequest{class: "gpu-b"}), []allocator.QuotaExceeded{rqOver("ml", "gpu-a", 0, 1, 2)}},
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqHolder("lab", "done", "gpu-b", "n1", "gpu-2"))
		},
	}, {
		name: "a selector that fails on a changed device still wakes it",
		refused: []rqRefused{
			{rqClaim("ml", "ecc", rqRequest{class: "gpu-a", exprs: []string{rqNeedsECC}}), overA},
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 80), rqGPU("gpu-1", "a", 40), rqGPU("gpu-2", "b", 40)))
		},
		want: []string{"ml/ecc"},
	}, {
		name: "limits of other owners and classes are ignored: the claim waits for devices",
		refused: []rqRefused{
			{rqClaim("ml", "train", rqRequest{class: "gpu-a"}), []allocator.QuotaExceeded{rqOver("lab", "gpu-a", 1, 1, 1), rqOver("ml", "gpu-b", 1, 1, 1)}},
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqHolder("lab", "done", "gpu-a", "n1", "gpu-1"))
		},
		want: []string{"ml/train"},
	}, {
		name:    "once woken for its quota the claim waits for devices again",
		refused: []rqRefused{trainA},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			got, err := r.ClaimDeallocated(ctx, rqHolder("ml", "done", "gpu-a", "n1", "gpu-0"))
			if err != nil || !slices.Equal(rqNames(got), []string{"ml/train"}) {
				return nil, errors.New("the owner's deallocation did not wake the claim")
			}
			return r.ClaimDeallocated(ctx, rqHolder("lab", "done", "gpu-a", "n1", "gpu-1"))
		},
		want: []string{"ml/train"},
	}, {
		name:    "AddPending forgets the quota",
		refused: []rqRefused{trainA},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			if err := r.AddPending(trainA.claim); err != nil {
				return nil, err
			}
			got, err := r.ClaimDeallocated(ctx, rqHolder("ml", "done", "gpu-b", "n1", "gpu-2"))
			if err != nil || len(got) != 0 {
				return nil, errors.New("a plain claim was woken for quota")
			}
			return r.ClaimDeallocated(ctx, rqHolder("lab", "done", "gpu-a", "n1", "gpu-1"))
		},
		want: []string{"ml/train"},
	}, {
		// The owner's limit on gpu-b was not named (the search without quota took the first
		// alternative), but freeing what the owner holds of gpu-b may let the second fit on a free
		// device the freed one is not.
		name:  "a deallocation under a limited class the refusal did not name wakes it",
		quota: &allocator.Quota{Limits: append(slices.Clone(quota.Limits), rqLimit("ml", "gpu-b", allocator.QuotaDevices, "", "1"))},
		refused: []rqRefused{
			{rqClaim("ml", "a-or-big-b", rqRequest{alternatives: []rqRequest{{class: "gpu-a"}, {class: "gpu-b", exprs: []string{rqBig}}}}), overA},
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqHolder("ml", "done", "gpu-b", "n1", "gpu-2"))
		},
		want: []string{"ml/a-or-big-b"},
	}, {
		name:  "a deallocation under a class without a limit does not",
		quota: quota,
		refused: []rqRefused{
			{rqClaim("ml", "a-or-big-b", rqRequest{alternatives: []rqRequest{{class: "gpu-a"}, {class: "gpu-b", exprs: []string{rqBig}}}}), overA},
		},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqHolder("ml", "done", "gpu-b", "n1", "gpu-2"))
		},
	}, {
		name:    "a limit on capacity does not keep devices from waking the claim",
		refused: []rqRefused{{rqClaim("ml", "mem", rqRequest{class: "gpu-a"}), []allocator.QuotaExceeded{memOver}}},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.ClaimDeallocated(ctx, rqHolder("lab", "done", "gpu-a", "n1", "gpu-1"))
		},
		want: []string{"ml/mem"},
	}, {
		// The owner may hold the device that shrinks: it then holds less memory.
		name:    "a limit on capacity: a device of its class that changes wakes the claim",
		refused: []rqRefused{{rqClaim("ml", "big", rqRequest{class: "gpu-a", exprs: []string{rqBig}}), []allocator.QuotaExceeded{memOver}}},
		pending: []*resourceapi.ResourceClaim{rqClaim("ml", "plain", rqRequest{class: "gpu-a", exprs: []string{rqBig}})},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			return r.AddOrUpdateSlice(ctx, rqSlice("n1", rqGPU("gpu-0", "a", 20), rqGPU("gpu-1", "a", 40), rqGPU("gpu-2", "b", 40)))
		},
		want: []string{"ml/big"},
	}, {
		name:    "a limit on capacity: a device without that capacity going away does not",
		refused: []rqRefused{{rqClaim("ml", "big", rqRequest{class: "gpu-a", exprs: []string{rqBig}}), []allocator.QuotaExceeded{memOver}}},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			plain := rqGPU("gpu-0", "b", 0)
			plain.Capacity = nil
			if _, err := r.AddOrUpdateSlice(ctx, rqSlice("n2", plain)); err != nil {
				return nil, err
			}
			return r.DeleteSlice(ctx, "n2-gpus"), nil
		},
	}, {
		name: "the Requeue's quota keys claims by its owner",
		quota: &allocator.Quota{
			Owner:  func(c *resourceapi.ResourceClaim) string { return "team-" + c.Name[:1] },
			Limits: []allocator.QuotaLimit{rqLimit("team-x", "gpu-a", allocator.QuotaDevices, "", "1")},
		},
		refused: []rqRefused{{rqClaim("ml", "x-train", rqRequest{class: "gpu-a"}), []allocator.QuotaExceeded{rqOver("team-x", "gpu-a", 1, 1, 1)}}},
		event: func(ctx context.Context, r *allocator.Requeue) ([]types.NamespacedName, error) {
			got, err := r.ClaimDeallocated(ctx, rqHolder("ml", "y-done", "gpu-a", "n1", "gpu-1"))
			if err != nil || len(got) != 0 {
				return nil, errors.New("another team's deallocation woke the claim")
			}
			return r.ClaimDeallocated(ctx, rqHolder("lab", "x-done", "gpu-a", "n1", "gpu-0"))
		},
		want: []string{"ml/x-train"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r, err := allocator.NewRequeue(allocator.RequeueOptions{Quota: tc.quota})
			must(t, err)
			for _, c := range classes {
				_, err := r.AddOrUpdateClass(ctx, c)
				must(t, err)
			}
			_, err = r.AddOrUpdateSlice(ctx, n1)
			must(t, err)
			for _, c := range tc.pending {
				must(t, r.AddPending(c))
			}
			for _, c := range tc.refused {
				must(t, r.AddPendingOverQuota(c.claim, c.exceeded))
			}
			got, err := tc.event(ctx, r)
			must(t, err)
			if want := append([]string{}, tc.want...); !slices.Equal(rqNames(got), want) {
				t.Errorf("woken %v, want %v", rqNames(got), want)
			}
		})
	}
}

func TestRequeueQuotaRejectsInvalidInput(t *testing.T) {
	bad := rqOver("ml", "gpu", 0, 1, 1)
	bad.Limit.Max = resource.MustParse("-1")
	noClass := rqOver("ml", "", 0, 1, 1)
	negHeld := rqOver("ml", "gpu", 0, 1, 1)
	negHeld.Held = resource.MustParse("-2")
	for _, tc := range []struct {
		name, object, field string
		call                func(r *allocator.Requeue) error
	}{{
		name: "a negative limit names the claim and the limit", object: "ResourceClaim ml/c", field: "exceeded[1].Limit.Max",
		call: func(r *allocator.Requeue) error {
			return r.AddPendingOverQuota(rqClaim("ml", "c", rqRequest{class: "gpu"}), []allocator.QuotaExceeded{rqOver("ml", "gpu", 0, 1, 2), bad})
		},
	}, {
		name: "a limit without a class", object: "ResourceClaim ml/c", field: "exceeded[0].Limit.Class",
		call: func(r *allocator.Requeue) error {
			return r.AddPendingOverQuota(rqClaim("ml", "c", rqRequest{class: "gpu"}), []allocator.QuotaExceeded{noClass})
		},
	}, {
		name: "a negative amount held", object: "ResourceClaim ml/c", field: "exceeded[0].Held",
		call: func(r *allocator.Requeue) error {
			return r.AddPendingOverQuota(rqClaim("ml", "c", rqRequest{class: "gpu"}), []allocator.QuotaExceeded{negHeld})
		},
	}, {
		name: "an invalid claim is refused as by AddPending", object: "ResourceClaim ml/c", field: "spec.devices.requests[0].exactly.deviceClassName",
		call: func(r *allocator.Requeue) error {
			return r.AddPendingOverQuota(rqClaim("ml", "c", rqRequest{}), nil)
		},
	}, {
		name: "an invalid quota names the limit", object: "Quota", field: "Quota.Limits[0].Name",
		call: func(r *allocator.Requeue) error {
			_, err := r.SetQuota(&allocator.Quota{Limits: []allocator.QuotaLimit{rqLimit("ml", "gpu", allocator.QuotaCapacity, "", "1")}})
			return err
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := allocator.NewRequeue(allocator.RequeueOptions{})
			must(t, err)
			err = tc.call(r)
			wantInputError(t, err, tc.object, tc.field)
			if r.Len() != 0 {
				t.Errorf("%d pending claims after a rejected call, want 0", r.Len())
			}
		})
	}
	t.Run("an invalid quota in the options", func(t *testing.T) {
		_, err := allocator.NewRequeue(allocator.RequeueOptions{Quota: &allocator.Quota{Limits: []allocator.QuotaLimit{rqLimit("ml", "gpu", allocator.QuotaDevices, "x", "1")}}})
		var ie *allocator.InputError
		if !errors.As(err, &ie) || ie.Object != "RequeueOptions" || ie.Field != "Quota.Limits[0].Name" {
			t.Errorf("error %v, want an *InputError naming RequeueOptions field Quota.Limits[0].Name", err)
		}
	})
	t.Run("an invalid quota leaves the Requeue's quota as it was", func(t *testing.T) {
		ctx := context.Background()
		r, err := allocator.NewRequeue(allocator.RequeueOptions{Quota: &allocator.Quota{Limits: []allocator.QuotaLimit{rqLimit("ml", "gpu", allocator.QuotaDevices, "", "1")}}})
		must(t, err)
		_, err = r.AddOrUpdateClass(ctx, rqClass("gpu", ""))
		must(t, err)
		must(t, r.AddPendingOverQuota(rqClaim("ml", "c", rqRequest{class: "gpu"}), []allocator.QuotaExceeded{rqOver("ml", "gpu", 1, 1, 1)}))
		if _, err := r.SetQuota(&allocator.Quota{Limits: []allocator.QuotaLimit{rqLimit("ml", "", allocator.QuotaDevices, "", "5")}}); err == nil {
			t.Fatal("an invalid quota was accepted")
		}
		// Still the old quota: raising its limit wakes the claim.
		got, err := r.SetQuota(&allocator.Quota{Limits: []allocator.QuotaLimit{rqLimit("ml", "gpu", allocator.QuotaDevices, "", "2")}})
		must(t, err)
		if !slices.Equal(rqNames(got), []string{"ml/c"}) {
			t.Errorf("woken %v, want [ml/c]", rqNames(got))
		}
	})
}

// The quota and the limits given are the caller's: the Requeue changes none of them.
func TestRequeueQuotaDoesNotMutateInputs(t *testing.T) {
	q := &allocator.Quota{Limits: []allocator.QuotaLimit{rqLimit("ml", "gpu", allocator.QuotaDevices, "", "1")}}
	claim := rqClaim("ml", "c", rqRequest{class: "gpu", count: 2})
	exceeded := []allocator.QuotaExceeded{rqOver("ml", "gpu", 1, 1, 2)}
	before := []any{slices.Clone(q.Limits), claim.DeepCopy(), slices.Clone(exceeded)}
	r, err := allocator.NewRequeue(allocator.RequeueOptions{Quota: q})
	must(t, err)
	must(t, r.AddPendingOverQuota(claim, exceeded))
	_, err = r.SetQuota(q)
	must(t, err)
	after := []any{q.Limits, claim, exceeded}
	for i := range before {
		if !reflect.DeepEqual(before[i], after[i]) {
			t.Errorf("input %d changed: %+v, want %+v", i, after[i], before[i])
		}
	}
}

// Events of several owners at once: each owner's deallocation wakes its own claim refused for quota,
// whatever runs beside it (a quota set again unchanged, slices published), under the race detector.
func TestRequeueQuotaIsSafeForConcurrentUse(t *testing.T) {
	ctx := context.Background()
	const owners = 8
	q := &allocator.Quota{}
	for i := range owners {
		q.Limits = append(q.Limits, rqLimit(fmt.Sprintf("t%d", i), "gpu", allocator.QuotaDevices, "", "1"))
	}
	r, err := allocator.NewRequeue(allocator.RequeueOptions{Quota: q})
	must(t, err)
	_, err = r.AddOrUpdateClass(ctx, rqClass("gpu", ""))
	must(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, owners+2)
	for i := range owners {
		owner := fmt.Sprintf("t%d", i)
		wg.Go(func() {
			if err := r.AddPendingOverQuota(rqClaim(owner, "c", rqRequest{class: "gpu"}), []allocator.QuotaExceeded{rqOver(owner, "gpu", 1, 1, 1)}); err != nil {
				errs <- err
				return
			}
			got, err := r.ClaimDeallocated(ctx, rqHolder(owner, "h", "gpu", "n1", "gpu-0"))
			if err != nil || !slices.Contains(got, types.NamespacedName{Namespace: owner, Name: "c"}) {
				errs <- fmt.Errorf("owner %s: woken %v (%v), want its claim", owner, rqNames(got), err)
			}
		})
	}
	wg.Go(func() {
		for range owners {
			if _, err := r.SetQuota(q); err != nil {
				errs <- err
			}
		}
	})
	wg.Go(func() {
		for i := range owners {
			if _, err := r.AddOrUpdateSlice(ctx, rqSlice(fmt.Sprintf("n%d", i), rqGPU("gpu-0", "a", 40))); err != nil {
				errs <- err
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if r.Len() != owners {
		t.Errorf("%d pending claims, want %d", r.Len(), owners)
	}
}
