package allocator_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// outcome is what an Allocate call answered, comparable across snapshots: share IDs, which each
// snapshot draws from a source of its own, are compared by presence only.
type outcome struct {
	results []resourceapi.AllocationResult
	err     string
}

// drawnShare stands for every share ID in an outcome.
const drawnShare = "drawn"

func allocateOn(s *allocator.Snapshot, c *fuzz.Cluster) outcome {
	r, err := s.Allocate(context.Background(), c.Node, c.Claims)
	for i := range r {
		for j := range r[i].Devices.Results {
			if d := &r[i].Devices.Results[j]; d.ShareID != nil {
				d.ShareID = ptr(types.UID(drawnShare))
			}
		}
	}
	o := outcome{results: r}
	if err != nil {
		o.err = err.Error()
	}
	return o
}

// outOfBudget is the error of an outcome that ran out of steps, for budgetHits.
func (o outcome) outOfBudget() error {
	if strings.HasPrefix(o.err, allocator.ErrSearchBudget.Error()) {
		return allocator.ErrSearchBudget
	}
	return nil
}

// load adds objects of the cluster to a snapshot; which selects the slices, claims and rules to add.
func load(t *rapid.T, s *allocator.Snapshot, c *fuzz.Cluster, which func(i int) bool) {
	i := 0
	next := func() bool { i++; return which(i - 1) }
	for _, o := range c.Classes {
		if next() {
			if err := s.AddOrUpdateClass(o); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, o := range c.Slices {
		if next() {
			if err := s.AddOrUpdateSlice(o); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, o := range c.Allocated {
		if next() {
			if err := s.AddOrUpdateClaim(o); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, o := range c.TaintRules {
		if next() {
			if err := s.AddOrUpdateTaintRule(o); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// propStepBudget bounds every search of the property tests, so that none runs unbounded; a case whose
// search runs out is not a failure of the property, but it is counted (see budgetHits) and must be rare.
const propStepBudget = 200000

func options(c *fuzz.Cluster) allocator.Options {
	f := c.Gates()
	return allocator.Options{Features: &f, ShareIDs: sequentialShareIDs(), StepBudget: propStepBudget}
}

// budgetHits counts the cases of a property and those in which a search ran out of its step budget.
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

// A fork that receives part of the objects answers as a snapshot built with all of them, and so does its
// parent once the fork is committed.
func TestPropForkAgreesWithFreshSnapshot(t *testing.T) {
	var hits budgetHits
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		split := rapid.SliceOfN(rapid.Bool(), 64, 64).Draw(t, "inParent")

		fresh := allocator.NewSnapshot(options(c))
		load(t, fresh, c, func(int) bool { return true })
		want := allocateOn(fresh, c)
		hits.add(want.outOfBudget())

		parent := allocator.NewSnapshot(options(c))
		load(t, parent, c, func(i int) bool { return i >= len(split) || split[i] })
		fork := parent.Fork()
		load(t, fork, c, func(i int) bool { return i < len(split) && !split[i] })
		if got := allocateOn(fork, c); !reflect.DeepEqual(got, want) {
			t.Fatalf("fork answered\n%+v\nfresh snapshot answered\n%+v", got, want)
		}
		if err := fork.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := allocateOn(parent, c); !reflect.DeepEqual(got, want) {
			t.Fatalf("parent after commit answered\n%+v\nfresh snapshot answered\n%+v", got, want)
		}
	})
	hits.check(t)
}

// Deleting objects and adding them again, or updating them with themselves, leaves the answer unchanged:
// the indexes are maintained, not rebuilt.
func TestPropUpdatesKeepIndexes(t *testing.T) {
	var hits budgetHits
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		s := allocator.NewSnapshot(options(c))
		load(t, s, c, func(int) bool { return true })
		want := allocateOn(s, c)
		hits.add(want.outOfBudget())

		for _, o := range c.Slices {
			if err := s.AddOrUpdateSlice(o); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range c.Allocated {
			if err := s.DeleteClaim(o.Namespace, o.Name); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range c.TaintRules {
			if err := s.DeleteTaintRule(o.Name); err != nil {
				t.Fatal(err)
			}
		}
		load(t, s, c, func(int) bool { return true })
		if got := allocateOn(s, c); !reflect.DeepEqual(got, want) {
			t.Fatalf("after updates\n%+v\nbefore\n%+v", got, want)
		}
	})
	hits.check(t)
}

// Fits answers what Allocate answers: true exactly where Allocate returns results, false where it
// reports "does not fit", and the same error for everything else.
func TestPropFitsAgreesWithAllocate(t *testing.T) {
	var hits budgetHits
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		s := allocator.NewSnapshot(options(c))
		load(t, s, c, func(int) bool { return true })
		ctx := context.Background()
		results, allocErr := s.Allocate(ctx, c.Node, c.Claims)
		fits, fitsErr := s.Fits(ctx, c.Node, c.Claims)
		hits.add(allocErr, fitsErr)
		switch {
		case allocErr == nil:
			if !fits || fitsErr != nil {
				t.Fatalf("Allocate found %d results, Fits answered %v, %v", len(results), fits, fitsErr)
			}
		case errors.Is(allocErr, allocator.ErrUnsatisfiable):
			if fits || fitsErr != nil {
				t.Fatalf("Allocate: %v; Fits answered %v, %v", allocErr, fits, fitsErr)
			}
		default:
			if fits || fitsErr == nil || fitsErr.Error() != allocErr.Error() {
				t.Fatalf("Allocate: %v; Fits answered %v, %v", allocErr, fits, fitsErr)
			}
		}
	})
	hits.check(t)
}

// A snapshot that keeps its inputs (NoCopy) answers as one that copies them.
func TestPropNoCopyAnswersAsCopy(t *testing.T) {
	var hits budgetHits
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		copied := allocator.NewSnapshot(options(c))
		load(t, copied, c, func(int) bool { return true })
		opts := options(c)
		opts.NoCopy = true
		kept := allocator.NewSnapshot(opts)
		load(t, kept, c, func(int) bool { return true })
		got, want := allocateOn(kept, c), allocateOn(copied, c)
		hits.add(want.outOfBudget())
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("NoCopy answered\n%+v\ncopying snapshot answered\n%+v", got, want)
		}
	})
	hits.check(t)
}
