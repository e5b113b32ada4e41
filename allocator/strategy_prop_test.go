package allocator_test

import (
	"context"
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// strategyStepBudget bounds each search of the strategy property tests; a search that runs out is not
// compared.
const strategyStepBudget = 20000

// allocateWithStrategy builds a snapshot of the generated cluster with the strategy and allocates its claims.
func allocateWithStrategy(ctx context.Context, c *fuzz.Cluster, strategy allocator.Strategy) ([]resourceapi.AllocationResult, error) {
	s, err := c.Snapshot(allocator.Options{Strategy: strategy, StepBudget: strategyStepBudget})
	if err != nil {
		return nil, err
	}
	return s.Allocate(ctx, c.Node, c.Claims)
}

// strategyOptions are the generator options of the strategy property tests: every feature except
// selectors that fail at run time, since BestFit and Spread evaluate the selectors of every candidate before
// the search, and so report such a failure where FirstFit may find a fit before reaching the device.
func strategyOptions() fuzz.Options {
	o := fuzz.AllOptions()
	o.CELErrors = false
	return o
}

// Every allocation BestFit and Spread make on generated clusters passes allocator/verify, and the cluster
// is not mutated.
func TestPropStrategyAllocationsVerify(t *testing.T) {
	for _, st := range []allocator.Strategy{allocator.BestFit, allocator.Spread} {
		t.Run(st.String(), func(t *testing.T) {
			fuzz.CheckAllocations(t, fuzz.ClusterGen(strategyOptions()), func(ctx context.Context, c *fuzz.Cluster) ([]resourceapi.AllocationResult, error) {
				return allocateWithStrategy(ctx, c, st)
			})
		})
	}
}

// metAtDevice reports an error the search met at a device (an *InputError with NodeDependent set): a
// request for all devices that breaks a constraint with the devices taken before it, or a check that
// fails on one device. Whether the search reaches that device depends on its order, so such an error
// may come under one strategy where another finds a fit first, as it depends on the pool order in
// Kubernetes (allocator/doc.go, Same answers as Kubernetes).
func metAtDevice(err error) bool {
	var in *allocator.InputError
	return errors.As(err, &in) && in.NodeDependent
}

// BestFit and Spread search the same combinations as FirstFit in another order: claims fit under them
// exactly when they fit under FirstFit, and input errors are the same, but for errors met at a device
// (metAtDevice).
func TestPropStrategiesAgreeOnFeasibility(t *testing.T) {
	var hits budgetHits
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(strategyOptions()).Draw(rt, "cluster")
		ctx := context.Background()
		_, ffErr := allocateWithStrategy(ctx, c, allocator.FirstFit)
		if errors.Is(ffErr, allocator.ErrSearchBudget) {
			hits.add(ffErr)
			return
		}
		var errs []error
		defer func() { hits.add(errs...) }()
		for _, st := range []allocator.Strategy{allocator.BestFit, allocator.Spread} {
			res, err := allocateWithStrategy(ctx, c, st)
			errs = append(errs, err)
			if errors.Is(err, allocator.ErrSearchBudget) || metAtDevice(ffErr) || metAtDevice(err) {
				continue
			}
			switch {
			case ffErr == nil && err != nil:
				rt.Fatalf("FirstFit allocates, %s answers %v", st, err)
			case ffErr != nil && err == nil:
				rt.Fatalf("FirstFit answers %v, %s allocates %v", ffErr, st, res)
			case ffErr != nil && errors.Is(ffErr, allocator.ErrUnsatisfiable) != errors.Is(err, allocator.ErrUnsatisfiable):
				rt.Fatalf("FirstFit answers %v, %s answers %v", ffErr, st, err)
			}
		}
	})
	hits.check(t)
}

// BestFit and Spread give the same answer for the same input, from two snapshots built independently.
func TestPropStrategiesDeterministic(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(strategyOptions()).Draw(rt, "cluster")
		ctx := context.Background()
		for _, st := range []allocator.Strategy{allocator.BestFit, allocator.Spread} {
			r1, err1 := allocateWithStrategy(ctx, c, st)
			r2, err2 := allocateWithStrategy(ctx, c, st)
			if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
				rt.Fatalf("%s: errors differ: %v / %v", st, err1, err2)
			}
			if !equality.Semantic.DeepEqual(r1, r2) {
				rt.Fatalf("%s: results differ:\n%v\n%v", st, r1, r2)
			}
		}
	})
}

// On one FirstFit snapshot of a generated cluster, AllocateWith BestFit (the call allocator/pods makes
// for its BestFit) fits on each node exactly where Allocate fits, with the same input errors but for
// errors met at a device (metAtDevice), and every allocation it makes passes allocator/verify on that
// node.
func TestPropAllocateWithBestFitPerNode(t *testing.T) {
	var hits budgetHits
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(strategyOptions()).Draw(rt, "cluster")
		ctx := context.Background()
		s, err := c.Snapshot(allocator.Options{StepBudget: strategyStepBudget})
		if err != nil {
			rt.Fatal(err)
		}
		var errs []error
		defer func() { hits.add(errs...) }()
		for _, n := range c.Nodes {
			_, ffErr := s.Allocate(ctx, n, c.Claims)
			res, err := s.AllocateWith(ctx, allocator.BestFit, n, c.Claims)
			errs = append(errs, ffErr, err)
			if errors.Is(ffErr, allocator.ErrSearchBudget) || errors.Is(err, allocator.ErrSearchBudget) {
				continue
			}
			switch {
			case metAtDevice(ffErr) || metAtDevice(err):
				// Not compared; an allocation is still verified.
			case ffErr == nil && err != nil:
				rt.Fatalf("node %s: Allocate allocates, AllocateWith BestFit answers %v", n.Name, err)
			case ffErr != nil && err == nil:
				rt.Fatalf("node %s: Allocate answers %v, AllocateWith BestFit allocates %v", n.Name, ffErr, res)
			case ffErr != nil && errors.Is(ffErr, allocator.ErrUnsatisfiable) != errors.Is(err, allocator.ErrUnsatisfiable):
				rt.Fatalf("node %s: Allocate answers %v, AllocateWith BestFit answers %v", n.Name, ffErr, err)
			}
			if err != nil {
				continue
			}
			on := *c
			on.Node = n
			vs, err := on.Verify(ctx, res)
			if err != nil {
				rt.Fatalf("node %s: verify: %v", n.Name, err)
			}
			for _, v := range vs {
				rt.Errorf("node %s: %s", n.Name, v)
			}
		}
	})
	hits.check(t)
}
