package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/celenv"
)

// The errors a filter pass tests on every node answer errors.Is as before, for their own sentinel, for
// the other sentinels and for their causes, and testing them for a sentinel allocates nothing.
func TestErrorsIsMatchesWithoutAllocating(t *testing.T) {
	cause := &celenv.EvalError{Kind: celenv.ErrRuntime, Err: context.Canceled}
	input := &allocator.InputError{Object: "ResourceClaim default/c", Field: "spec", Err: cause}
	pools := &allocator.UnsatisfiableError{Node: "node-1", Pools: []allocator.PoolError{{Incomplete: true}}}
	plain := &allocator.UnsatisfiableError{Node: "node-1"}
	for _, tc := range []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"input error is ErrInvalidInput", input, allocator.ErrInvalidInput, true},
		{"input error is not ErrUnsatisfiable", input, allocator.ErrUnsatisfiable, false},
		{"input error is its cause's kind", input, celenv.ErrRuntime, true},
		{"input error is its cause's cause", input, context.Canceled, true},
		{"wrapped input error is ErrInvalidInput", fmt.Errorf("node-1: %w", input), allocator.ErrInvalidInput, true},
		{"unsatisfiable is ErrUnsatisfiable", plain, allocator.ErrUnsatisfiable, true},
		{"unsatisfiable is not ErrInvalidInput", plain, allocator.ErrInvalidInput, false},
		{"unsatisfiable with an incomplete pool is ErrPoolIncomplete", pools, allocator.ErrPoolIncomplete, true},
		{"unsatisfiable with an incomplete pool is not ErrPoolInvalid", pools, allocator.ErrPoolInvalid, false},
		{"unsatisfiable without pools is not ErrPoolIncomplete", plain, allocator.ErrPoolIncomplete, false},
	} {
		if got := errors.Is(tc.err, tc.target); got != tc.want {
			t.Errorf("%s: errors.Is = %v, want %v", tc.name, got, tc.want)
		}
	}
	var pe *allocator.PoolError
	if !errors.As(pools, &pe) || !pe.Incomplete {
		t.Errorf("errors.As(unsatisfiable, *PoolError) = %v, want its incomplete pool", pe)
	}
	var ee *celenv.EvalError
	if !errors.As(input, &ee) || ee != cause {
		t.Errorf("errors.As(input error, *celenv.EvalError) = %v, want its cause", ee)
	}
	// What a filter pass asks of every node's error.
	allocs := testing.AllocsPerRun(100, func() {
		if errors.Is(input, allocator.ErrUnsatisfiable) || !errors.Is(input, allocator.ErrInvalidInput) ||
			!errors.Is(plain, allocator.ErrUnsatisfiable) || !errors.Is(pools, allocator.ErrUnsatisfiable) {
			t.Fatal("wrong answer")
		}
	})
	if allocs != 0 {
		t.Errorf("errors.Is for the sentinels allocates %v times, want 0", allocs)
	}
}
