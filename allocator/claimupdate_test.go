package allocator_test

import (
	"errors"
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

func update(c *resourceapi.ResourceClaim) allocator.ClaimUpdate {
	return allocator.ClaimUpdate{Namespace: c.Namespace, Name: c.Name, Claim: c}
}

func TestUpdateClaims(t *testing.T) {
	gpu := func(name string) resourceapi.DeviceRequestAllocationResult { return result(driverA, "pool-1", name) }
	setup := func(t *testing.T) *allocator.Snapshot {
		s := allocator.NewSnapshot(allocator.Options{})
		must(t, s.AddOrUpdateClass(anyClass))
		must(t, s.AddOrUpdateSlice(attrSlice(append(devices("gpu-0", "gpu-1"), shareable("nic", "100Gi", nil))...)[0]))
		must(t, s.AddOrUpdateClaim(allocatedClaim("held", gpu("gpu-0"))))
		return s
	}
	t.Run("a device already held conflicts and nothing is written", func(t *testing.T) {
		s := setup(t)
		before := claimNames(s)
		err := s.UpdateClaims([]allocator.ClaimUpdate{update(allocatedClaim("a", gpu("gpu-1"))), update(allocatedClaim("b", gpu("gpu-0")))})
		var ce *allocator.ConflictError
		if !errors.As(err, &ce) || ce.Claim.Name != "b" || len(ce.Devices) != 1 || ce.Devices[0].Device != "gpu-0" {
			t.Fatalf("got %v, want a conflict of b on gpu-0", err)
		}
		if got := claimNames(s); !reflect.DeepEqual(got, before) {
			t.Fatalf("snapshot holds %q after the conflict, want %q", got, before)
		}
	})
	t.Run("two claims of one update may not take one device", func(t *testing.T) {
		s := setup(t)
		err := s.UpdateClaims([]allocator.ClaimUpdate{update(allocatedClaim("a", gpu("gpu-1"))), update(allocatedClaim("b", gpu("gpu-1")))})
		if !errors.Is(err, allocator.ErrConflict) {
			t.Fatalf("got %v, want a conflict", err)
		}
	})
	t.Run("a claim keeping its devices does not conflict with itself", func(t *testing.T) {
		s := setup(t)
		held, _ := s.Claim("default", "held")
		again := held.DeepCopy()
		again.Labels = map[string]string{"seen": "yes"}
		must(t, s.UpdateClaims([]allocator.ClaimUpdate{update(again), update(allocatedClaim("a", gpu("gpu-1")))}))
		intact(t, s)
	})
	t.Run("a stale base conflicts", func(t *testing.T) {
		s := setup(t)
		held, _ := s.Claim("default", "held")
		must(t, s.AddOrUpdateClaim(held.DeepCopy())) // another writer
		u := allocator.ClaimUpdate{Namespace: "default", Name: "held", IfUnchanged: true, Base: held}
		if err := s.UpdateClaims([]allocator.ClaimUpdate{u}); !errors.Is(err, allocator.ErrConflict) {
			t.Fatalf("got %v, want a conflict", err)
		}
		if _, ok := s.Claim("default", "held"); !ok {
			t.Fatal("the claim was deleted despite the conflict")
		}
		u.Base, _ = s.Claim("default", "held")
		must(t, s.UpdateClaims([]allocator.ClaimUpdate{u}))
		if _, ok := s.Claim("default", "held"); ok {
			t.Fatal("the claim was not deleted")
		}
	})
	t.Run("a claim to create that exists conflicts", func(t *testing.T) {
		s := setup(t)
		u := update(allocatedClaim("held", gpu("gpu-1")))
		u.IfUnchanged = true
		if err := s.UpdateClaims([]allocator.ClaimUpdate{u}); !errors.Is(err, allocator.ErrConflict) {
			t.Fatalf("got %v, want a conflict", err)
		}
	})
	t.Run("a claim named twice is an input error", func(t *testing.T) {
		s := setup(t)
		a := allocatedClaim("a", gpu("gpu-1"))
		if err := s.UpdateClaims([]allocator.ClaimUpdate{update(a), update(a)}); !errors.Is(err, allocator.ErrInvalidInput) {
			t.Fatalf("got %v, want an input error", err)
		}
	})
	t.Run("an invalid claim is refused before anything changes", func(t *testing.T) {
		s := setup(t)
		bad := allocatedClaim("b", gpu("gpu-1"))
		bad.Spec.Devices.Requests = append(bad.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: "Not A Name"})
		before := claimNames(s)
		if err := s.UpdateClaims([]allocator.ClaimUpdate{update(allocatedClaim("a", gpu("gpu-1"))), update(bad)}); !errors.Is(err, allocator.ErrInvalidInput) {
			t.Fatalf("got %v, want an input error", err)
		}
		if got := claimNames(s); !reflect.DeepEqual(got, before) {
			t.Fatalf("snapshot holds %q, want %q", got, before)
		}
	})
}
