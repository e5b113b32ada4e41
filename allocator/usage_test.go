package allocator_test

import (
	"context"
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// Which devices are in use is prepared once per slice and allocated state: every change of the allocated
// state (a claim added, moved, deleted, a fork's own claims) shows in the next call, with the parent and
// its fork asked in turn.
func TestInUseFollowsAllocatedState(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	if err := s.AddOrUpdateSlice(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1", "dev-2")...)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddOrUpdateClass(anyClass); err != nil {
		t.Fatal(err)
	}
	ctx, n := context.Background(), node(node1, nil)
	claims := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}
	// got is the device the claim gets on s ("" when it does not fit), asked twice (the second call
	// reads what the first prepared).
	got := func(s *allocator.Snapshot) string {
		t.Helper()
		var dev string
		for range 2 {
			res, err := s.Allocate(ctx, n, claims)
			switch {
			case errors.Is(err, allocator.ErrUnsatisfiable):
				dev = ""
			case err != nil:
				t.Fatal(err)
			default:
				dev = res[0].Devices.Results[0].Device
			}
		}
		return dev
	}
	step := func(what string, err error, s *allocator.Snapshot, want string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if dev := got(s); dev != want {
			t.Errorf("after %s: got %q, want %q", what, dev, want)
		}
	}
	step("nothing", nil, s, "dev-1")
	step("dev-1 allocated", s.AddOrUpdateClaim(allocatedClaim("held", result(driverA, "pool-1", "dev-1"))), s, "dev-2")
	step("the claim moved to dev-2", s.AddOrUpdateClaim(allocatedClaim("held", result(driverA, "pool-1", "dev-2"))), s, "dev-1")
	step("both allocated", s.AddOrUpdateClaim(allocatedClaim("other", result(driverA, "pool-1", "dev-1"))), s, "")
	step("the first claim deleted", s.DeleteClaim("default", "held"), s, "dev-2")
	// The fork and its parent each make one change: their revisions count alike, their states differ.
	fork := s.Fork()
	step("the fork's move", fork.AddOrUpdateClaim(allocatedClaim("other", result(driverA, "pool-1", "dev-2"))), fork, "dev-1")
	step("a change of the parent", s.AddOrUpdateClass(class("unused")), s, "dev-2")
	step("the parent's change", nil, fork, "dev-1")
	step("committing", fork.Commit(), s, "dev-1")
}
