package allocator_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// The device results of a call's claims share one array: appending to one claim's results, as a caller
// adding a device of its own may, must leave the next claim's untouched.
func TestResultsOfClaimsDoNotOverlap(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	if err := s.AddOrUpdateSlice(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1", "dev-2", "dev-3")...)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddOrUpdateClass(anyClass); err != nil {
		t.Fatal(err)
	}
	claims := []*resourceapi.ResourceClaim{claim("c1", exact("req", "any", 1)), claim("c2", exact("req", "any", 2))}
	res, err := s.Allocate(context.Background(), node(node1, nil), claims)
	if err != nil {
		t.Fatal(err)
	}
	res[0].Devices.Results = append(res[0].Devices.Results, result(driverB, "other", "added"))
	got := []string{res[1].Devices.Results[0].Device, res[1].Devices.Results[1].Device}
	if got[0] != "dev-2" || got[1] != "dev-3" {
		t.Errorf("second claim's devices after appending to the first's: %v, want [dev-2 dev-3]", got)
	}
	if len(res[0].Devices.Results) != 2 || res[0].Devices.Results[0].Device != "dev-1" {
		t.Errorf("first claim's results: %+v", res[0].Devices.Results)
	}
}

// Allocate builds one claim's answer of a few node-local devices in one allocation: the AllocationResult,
// its node selector and the device results together.
func TestAllocateOneClaimAllocatesOnce(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	if err := s.AddOrUpdateSlice(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1", "dev-2", "dev-3", "dev-4")...)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddOrUpdateClass(anyClass); err != nil {
		t.Fatal(err)
	}
	ctx, n := context.Background(), node(node1, nil)
	for _, count := range []int64{1, 2, 3, 4} {
		claims := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", count))}
		if _, err := s.Allocate(ctx, n, claims); err != nil {
			t.Fatal(err)
		}
		if raceDetector {
			continue // allocation counts mean nothing under the race detector
		}
		allocs := testing.AllocsPerRun(20, func() {
			res, err := s.Allocate(ctx, n, claims)
			if err != nil || len(res[0].Devices.Results) != int(count) || res[0].NodeSelector == nil {
				t.Fatalf("Allocate: %v, %+v", err, res)
			}
		})
		if allocs != 1 {
			t.Errorf("%d devices: %v allocations, want 1", count, allocs)
		}
	}
}
