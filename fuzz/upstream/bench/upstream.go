package bench

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/dralloc/dralloc/fuzz/upstream/reference"
)

// UpstreamFeatures is what the upstream allocator is given: every allocator feature, so that NewAllocator picks
// the experimental implementation.
var UpstreamFeatures = structured.Features{
	AdminAccess:             true,
	CompatibilityGroups:     true,
	ConsumableCapacity:      true,
	DerivedAttributes:       true,
	DeviceBindingAndStatus:  true,
	DeviceTaints:            true,
	FractionalCapacityRange: true,
	ListTypeAttributes:      true,
	OptionalNodeOperations:  true,
	PartitionableDevices:    true,
	PrioritizedList:         true,
}

// Upstream is the upstream allocator built for one cluster, as kube-scheduler builds it once per pod.
type Upstream struct {
	allocator structured.Allocator
}

// NewUpstream builds the upstream allocator over the cluster's slices, classes and allocated claims.
func NewUpstream(ctx context.Context, c Cluster, cache *cel.Cache) (*Upstream, error) {
	if cache == nil {
		cache = cel.NewCache(10, cel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})
	}
	a, err := structured.NewAllocator(ctx, UpstreamFeatures, reference.AllocatedState(c.Allocated, true), reference.Classes(c.Classes), c.Slices, cache)
	if err != nil {
		return nil, err
	}
	return &Upstream{allocator: a}, nil
}

// Allocate allocates the claims on one node; it returns nil results when they do not fit.
func (u *Upstream) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	return u.allocator.Allocate(ctx, node, claims)
}
