package allocator_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// TestCountersFollowAllocatedState: the shared counters a call starts from are what the allocated state
// leaves, after every change of it: allocating a partition takes the room of the whole device, freeing it
// gives the room back, and a fork and its parent do not see each other's changes.
func TestCountersFollowAllocatedState(t *testing.T) {
	ctx := context.Background()
	n := node(node1, nil)
	s := allocator.NewSnapshot(allocator.Options{})
	for _, c := range []*resourceapi.DeviceClass{anyClass, sizeClass("half"), sizeClass("whole")} {
		if err := s.AddOrUpdateClass(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, sl := range partitionedPool(partition("p-a", "half", "4Gi"), partition("p-b", "half", "4Gi"), partition("whole", "whole", "8Gi")) {
		if err := s.AddOrUpdateSlice(sl); err != nil {
			t.Fatal(err)
		}
	}
	whole := []*resourceapi.ResourceClaim{claim("c", exact("w", "whole", 1))}
	fits := func(s *allocator.Snapshot, want bool, when string) {
		t.Helper()
		got, err := s.Fits(ctx, n, whole)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: whole device fits %v, want %v", when, got, want)
		}
	}
	if err := s.AddOrUpdateClaim(allocatedClaim("other", result(driverA, "pool-1", "p-a"))); err != nil {
		t.Fatal(err)
	}
	fits(s, false, "a partition allocated")
	if err := s.DeleteClaim("default", "other"); err != nil {
		t.Fatal(err)
	}
	fits(s, true, "the partition freed")
	f := s.Fork()
	fits(f, true, "fork, nothing allocated")
	if err := f.AddOrUpdateClaim(allocatedClaim("other", result(driverA, "pool-1", "p-b"))); err != nil {
		t.Fatal(err)
	}
	fits(f, false, "fork, a partition allocated")
	// A change that frees nothing: the parent has made as many changes as the fork.
	if err := s.AddOrUpdateClass(anyClass); err != nil {
		t.Fatal(err)
	}
	fits(s, true, "parent of a fork that allocated a partition")
	if err := f.DeleteClaim("default", "other"); err != nil {
		t.Fatal(err)
	}
	fits(f, true, "fork, the partition freed")
	if err := s.AddOrUpdateClaim(allocatedClaim("other", result(driverA, "pool-1", "p-a"))); err != nil {
		t.Fatal(err)
	}
	fits(s, false, "parent, a partition allocated")
	fits(f, true, "fork, after its parent allocated a partition")
}
