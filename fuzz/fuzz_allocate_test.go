package fuzz_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
	"github.com/dralloc/dralloc/fuzz/watchdog"
)

// The Go fuzz targets take clusters as JSON (the fuzz.Cluster type: nodes, slices, classes, taint rules,
// allocated and pending claims, gates). The seed corpus in testdata/fuzz holds generated clusters; the engine
// mutates them into clusters the API server would never accept, which the allocator and the verifier must
// handle without panicking.

func addSeeds(f *testing.F) {
	for i, o := range []fuzz.Options{fuzz.AllOptions(), {Partitionable: true, Constraints: true}, {ConsumableCapacity: true, NetworkAttached: true, Allocated: true}} {
		data, err := json.Marshal(fuzz.ClusterGen(o).Example(i))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func decode(data []byte) (*fuzz.Cluster, bool) {
	var c fuzz.Cluster
	if err := json.Unmarshal(data, &c); err != nil || c.Node == nil {
		return nil, false
	}
	return &c, true
}

// FuzzAllocate: the allocator never panics, returns one result per claim when it allocates, answers the same
// twice, and leaves its input unchanged. Every target runs its inputs under fuzz/watchdog: a slow one fails.
func FuzzAllocate(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		watchdog.Run(t, data, func(ctx context.Context) {
			c, ok := decode(data)
			if !ok {
				return
			}
			before := c.DeepCopy()
			run := func() ([]resourceapi.AllocationResult, error) {
				s, err := snapshotWithBudget(c, 20000)
				if err != nil {
					return nil, err
				}
				return s.Allocate(ctx, c.Node, c.Claims)
			}
			r1, err1 := run()
			r2, err2 := run()
			if ctx.Err() != nil {
				return // too slow: the watchdog reports it
			}
			if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) || !equality.Semantic.DeepEqual(r1, r2) {
				t.Fatalf("two runs differ: %v %v / %v %v", r1, err1, r2, err2)
			}
			if err1 == nil && len(r1) != len(c.Claims) {
				t.Fatalf("%d results for %d claims", len(r1), len(c.Claims))
			}
			if !equality.Semantic.DeepEqual(before, c) {
				t.Fatalf("the allocator mutated its input")
			}
		})
	})
}

// FuzzVerify: the verifier never panics on any cluster and any proposed results, and fails only with ErrInput.
func FuzzVerify(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		watchdog.Run(t, data, func(ctx context.Context) {
			c, ok := decode(data)
			if !ok {
				return
			}
			// Propose the claims' own allocations (generated pending claims have none) or empty results.
			results := make([]resourceapi.AllocationResult, len(c.Claims))
			for i, cl := range c.Claims {
				if cl != nil && cl.Status.Allocation != nil {
					results[i] = *cl.Status.Allocation
				}
			}
			before := c.DeepCopy()
			_, err := c.Verify(ctx, results)
			if ctx.Err() != nil {
				return // too slow: the watchdog reports it
			}
			if err != nil && !errors.Is(err, verify.ErrInput) {
				t.Fatalf("verify: %v", err)
			}
			if !equality.Semantic.DeepEqual(before, c) {
				t.Fatalf("verify mutated its input")
			}
		})
	})
}
