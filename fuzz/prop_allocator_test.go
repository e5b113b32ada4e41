package fuzz_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// Every allocation dralloc's allocator makes on generated clusters with every feature passes the verifier, and
// the cluster is not mutated.
func TestPropAllocationsVerify(t *testing.T) {
	var hits budgetHits
	fuzz.CheckAllocations(t, fuzz.ClusterGen(fuzz.AllOptions()), counted(&hits, allocate))
	hits.check(t)
}

// Each feature alone, so that failures point at one feature.
func TestPropAllocationsVerifyPerFeature(t *testing.T) {
	for name, o := range perFeature() {
		t.Run(name, func(t *testing.T) {
			var hits budgetHits
			fuzz.CheckAllocations(t, fuzz.ClusterGen(o), counted(&hits, allocate))
			hits.check(t)
		})
	}
}

func perFeature() map[string]fuzz.Options {
	return map[string]fuzz.Options{
		"plain":              {},
		"multiSlicePools":    {MultiSlicePools: true, IncompletePools: true},
		"networkAttached":    {NetworkAttached: true, PerDeviceNodeSelection: true},
		"partitionable":      {Partitionable: true, CompatibilityGroups: true},
		"consumableCapacity": {NetworkAttached: true, ConsumableCapacity: true},
		"taints":             {Taints: true},
		"bindingConditions":  {BindingConditions: true},
		"firstAvailable":     {FirstAvailable: true},
		"allMode":            {AllMode: true},
		"constraints":        {Constraints: true, ListAttributes: true, Partitionable: true},
		"adminAccess":        {AdminAccess: true, Allocated: true},
		"config":             {Config: true, FirstAvailable: true},
		"allocated":          {Allocated: true, Partitionable: true, ConsumableCapacity: true, NetworkAttached: true},
		"celErrors":          {CELErrors: true},
		"derivedAttributes":  {DerivedAttributes: true, Constraints: true, Partitionable: true},
		"nodeOperations":     {NodeOperations: true, NetworkAttached: true},
	}
}

// On small clusters the exhaustive search agrees: when it finds an allocation, the allocator does not answer
// "does not fit". (The other direction, an allocation where none exists, is TestPropAllocationsVerify.)
func TestPropNoFalseUnsatisfiable(t *testing.T) {
	var hits budgetHits
	defer hits.check(t)
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(small(fuzz.AllOptions())).Draw(rt, "cluster")
		_, err := allocate(context.Background(), c)
		hits.add(err)
		v, found := fuzz.Exhaustive(context.Background(), c, 20000)
		switch {
		case v == fuzz.Undecided:
			return
		case v == fuzz.Fits && errors.Is(err, allocator.ErrUnsatisfiable):
			rt.Fatalf("the allocator says the claims do not fit, but this allocation is valid: %v\nallocator: %v", found, err)
		}
	})
}

// The same input gives the same output, from two snapshots built independently.
func TestPropDeterministic(t *testing.T) {
	var hits budgetHits
	defer hits.check(t)
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		r1, err1 := allocate(context.Background(), c)
		r2, err2 := allocate(context.Background(), c)
		hits.add(err1, err2)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			rt.Fatalf("errors differ: %v / %v", err1, err2)
		}
		if !equality.Semantic.DeepEqual(r1, r2) {
			rt.Fatalf("results differ:\n%v\n%v", r1, r2)
		}
	})
}
