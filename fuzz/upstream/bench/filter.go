package bench

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// Outcome is what one allocation on one node came to.
type Outcome int

const (
	// Fits: the claims were allocated.
	Fits Outcome = iota
	// DoesNotFit: the claims cannot be allocated on the node.
	DoesNotFit
	// Rejected: the input is one the allocator refuses (a fatal error).
	Rejected
)

// Filter is one allocator as a scheduler's filter uses it: built once per pod, asked once per node.
type Filter interface {
	Filter(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) Outcome
}

// Impl builds a Filter over a cluster.
type Impl struct {
	Name string
	New  func(ctx context.Context, c Cluster) (Filter, error)
	// SameBuild: the impl builds what the one before it builds (it only filters differently), so build
	// benchmarks skip it.
	SameBuild bool
}

// Impls are the allocators every benchmark compares, in the same run: dralloc's Allocate, dralloc's Fits
// (the same search without building the result) and upstream.
var Impls = []Impl{
	{Name: "dralloc", New: func(_ context.Context, c Cluster) (Filter, error) {
		s, err := NewSnapshot(c, allocator.Options{})
		return drallocFilter{s}, err
	}},
	{Name: "dralloc-fits", SameBuild: true, New: func(_ context.Context, c Cluster) (Filter, error) {
		s, err := NewSnapshot(c, allocator.Options{})
		return drallocFits{s}, err
	}},
	{Name: "upstream", New: func(ctx context.Context, c Cluster) (Filter, error) {
		return NewUpstream(ctx, c, nil)
	}},
}

type drallocFilter struct{ s *allocator.Snapshot }

type drallocFits struct{ s *allocator.Snapshot }

func (f drallocFits) Filter(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) Outcome {
	ok, err := f.s.Fits(ctx, node, claims)
	switch {
	case err != nil:
		return Rejected
	case ok:
		return Fits
	default:
		return DoesNotFit
	}
}

func (f drallocFilter) Filter(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) Outcome {
	_, err := f.s.Allocate(ctx, node, claims)
	switch {
	case err == nil:
		return Fits
	case errors.Is(err, allocator.ErrUnsatisfiable):
		return DoesNotFit
	default:
		return Rejected
	}
}

// Filter implements Filter for the upstream allocator: nil results mean "does not fit", an error is fatal.
func (u *Upstream) Filter(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) Outcome {
	res, err := u.Allocate(ctx, node, claims)
	switch {
	case err != nil:
		return Rejected
	case res == nil:
		return DoesNotFit
	default:
		return Fits
	}
}
