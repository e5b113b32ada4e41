package fuzz_test

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// snapshotOf loads a generated cluster into an allocator snapshot with the cluster's feature gates and
// deterministic share IDs.
// stepBudget bounds each allocation in the property tests. A request for 17 of 36 interchangeable devices next
// to a request that cannot be met makes a naive search try every combination (upstream's does); such cases end
// with ErrSearchBudget and are not judged.
const stepBudget = 200000

func snapshotOf(c *fuzz.Cluster) (*allocator.Snapshot, error) {
	return snapshotWithBudget(c, stepBudget)
}

// snapshotWithBudget is snapshotOf with a search step budget (0: none).
func snapshotWithBudget(c *fuzz.Cluster, budget int) (*allocator.Snapshot, error) {
	return c.Snapshot(allocator.Options{StepBudget: budget})
}

// allocate is the fuzz.AllocateFunc of dralloc's allocator.
func allocate(ctx context.Context, c *fuzz.Cluster) ([]resourceapi.AllocationResult, error) {
	s, err := snapshotOf(c)
	if err != nil {
		return nil, err
	}
	return s.Allocate(ctx, c.Node, c.Claims)
}

// budgetHits counts the cases of a property and those in which a search ran out of its step budget: not a
// failure of the property, but they must be rare.
type budgetHits struct{ cases, hits int }

// add counts one case; errs are the errors of its calls.
func (b *budgetHits) add(errs ...error) {
	b.cases++
	for _, err := range errs {
		if errors.Is(err, allocator.ErrSearchBudget) {
			b.hits++
			return
		}
	}
}

// check reports the count and fails when more than two cases, and more than one in a hundred, ran out of
// budget. About one generated cluster in 4,000 needs more than the budget's 200,000 steps (rapid draws
// counted 0 and 1 in 4,000 at this round's code and the last's; TestWorstGeneratedCluster measures the
// hardest), so at rapid's default of 100 cases a stricter rule fails by chance: "one in a thousand"
// failed CI twice in one day on a single case. A blow-up of the search hits on many clusters and still
// fails it.
func (b *budgetHits) check(t *testing.T) {
	t.Helper()
	t.Logf("%d cases, %d ran out of their search step budget", b.cases, b.hits)
	if b.hits > 2 && b.hits*100 > b.cases {
		t.Errorf("%d of %d cases ran out of the step budget: the search blows up on generated clusters", b.hits, b.cases)
	}
}

// counted wraps an AllocateFunc so that each call is counted in hits.
func counted(hits *budgetHits, f fuzz.AllocateFunc) fuzz.AllocateFunc {
	return func(ctx context.Context, c *fuzz.Cluster) ([]resourceapi.AllocationResult, error) {
		r, err := f(ctx, c)
		hits.add(err)
		return r, err
	}
}

// small keeps clusters small enough for the exhaustive search.
func small(o fuzz.Options) fuzz.Options {
	o.MaxNodes, o.MaxDevices, o.MaxClaims, o.MaxRequests = 2, 3, 2, 2
	o.ResultLimit = false
	return o
}

func nodeNameSelector(name string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{
		Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{name}}}}}}
}
