package bench

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// NewSnapshot builds a dralloc snapshot of the cluster: slices, classes, allocated claims and nodes.
func NewSnapshot(c Cluster, opts allocator.Options) (*allocator.Snapshot, error) {
	s := allocator.NewSnapshot(opts)
	for _, class := range c.Classes {
		if err := s.AddOrUpdateClass(class); err != nil {
			return nil, err
		}
	}
	for _, slice := range c.Slices {
		if err := s.AddOrUpdateSlice(slice); err != nil {
			return nil, err
		}
	}
	for _, claim := range c.Allocated {
		if err := s.AddOrUpdateClaim(claim); err != nil {
			return nil, err
		}
	}
	for _, node := range c.Nodes {
		if err := s.AddOrUpdateNode(node); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SnapshotPlacer runs the fragmentation scenario on a dralloc snapshot.
type SnapshotPlacer struct {
	Snapshot *allocator.Snapshot
}

// Allocate implements Placer: nil results when the claims do not fit.
func (p SnapshotPlacer) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	res, err := p.Snapshot.Allocate(ctx, node, claims)
	if errors.Is(err, allocator.ErrUnsatisfiable) {
		return nil, nil
	}
	return res, err
}

// Record implements Placer.
func (p SnapshotPlacer) Record(_ context.Context, claim *resourceapi.ResourceClaim) error {
	return p.Snapshot.AddOrUpdateClaim(claim)
}
