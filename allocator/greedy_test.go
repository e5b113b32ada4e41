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
// halves, as Kubernetes' depth-first search does.
func TestFirstDescentThenSearch(t *testing.T) {
	gpu := partitionedPool(partition("whole", "whole", "8Gi"), partition("p-a", "half", "4Gi"), partition("p-b", "half", "4Gi"))
	runAll(t, []scenario{{
		name: "stepping back after the first descent", slices: gpu, classes: []*resourceapi.DeviceClass{anyClass},
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))},
		want:   [][]string{{"req=pool-1/p-a", "req=pool-1/p-b"}},
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
