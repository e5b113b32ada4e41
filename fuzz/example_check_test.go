package fuzz_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// CheckAllocations is the property test a scheduler's or driver's CI runs: here dralloc's own allocator on
// clusters with every feature. A property test needs the *testing.T of a test, so this example is compiled
// but not run; this package runs the same test as TestPropAllocationsVerify.
func ExampleCheckAllocations() {
	propertyTest := func(t *testing.T) {
		fuzz.CheckAllocations(t, fuzz.ClusterGen(fuzz.AllOptions()), func(ctx context.Context, c *fuzz.Cluster) ([]resourceapi.AllocationResult, error) {
			gates := c.Gates()
			snap, err := c.Snapshot(allocator.Options{Features: &gates, StepBudget: 100_000})
			if err != nil {
				return nil, err
			}
			return snap.Allocate(ctx, c.Node, c.Claims)
		})
	}
	_ = propertyTest
}
