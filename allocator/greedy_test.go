package allocator_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// TestFirstDescentThenSearch: a call of one plain request tries the search's first descent before
// counting candidates; where the descent has to step back, the answer is the full search's. Taking the
// whole partition first leaves no room for a second device, so the search steps back and takes the two
// halves, as Kubernetes' depth-first search does, also within an alternative; an alternative that runs out
// of devices after taking some leaves the next alternative to the full search.
func TestFirstDescentThenSearch(t *testing.T) {
	gpu := partitionedPool(partition("whole", "whole", "8Gi"), partition("p-a", "half", "4Gi"), partition("p-b", "half", "4Gi"))
	ab := []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1", modelDevices("dev-1", "a", "dev-2", "b")...)}
	runAll(t, []scenario{{
		name: "stepping back after the first descent", slices: gpu, classes: []*resourceapi.DeviceClass{anyClass},
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))},
		want:   [][]string{{"req=pool-1/p-a", "req=pool-1/p-b"}},
	}, {
		name: "stepping back in an alternative, then searching the next", slices: gpu, classes: []*resourceapi.DeviceClass{anyClass},
		claims: []*resourceapi.ResourceClaim{claim("c", firstAvailable("req", sub("two", "any", 2), sub("one", "any", 1)))},
		want:   [][]string{{"req/two=pool-1/p-a", "req/two=pool-1/p-b"}},
	}, {
		name: "an alternative that runs out of devices, then the next", slices: ab, classes: []*resourceapi.DeviceClass{anyClass},
		claims: []*resourceapi.ResourceClaim{claim("c", firstAvailable("req", sub("three", "any", 3), sub("b", "any", 1, model("b"))))},
		want:   [][]string{{"req/b=pool-1/dev-2"}},
	}})
}

// TestFirstDescentKeepsFailFastAnswers: the descent's steps count against no budget: a request with too
// few candidates gets failFast's answer (counted before any search step) whatever the budget, not a
// budget error.
func TestFirstDescentKeepsFailFastAnswers(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{StepBudget: 1})
	if err := s.AddOrUpdateClass(anyClass); err != nil {
		t.Fatal(err)
	}
	if err := s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool-1", device("d-0", nil), device("d-1", nil))); err != nil {
		t.Fatal(err)
	}
	_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 3))})
	if !errors.Is(err, allocator.ErrUnsatisfiable) || errors.Is(err, allocator.ErrSearchBudget) || !strings.Contains(err.Error(), "needs 3 devices, 2 match and are free") {
		t.Fatalf("got %v, want the fail-fast answer", err)
	}
	if _, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))}); !errors.Is(err, allocator.ErrSearchBudget) {
		t.Fatalf("two of two devices under a budget of one step: got %v, want the budget error", err)
	}
}
