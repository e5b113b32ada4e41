package bench

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
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
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, claim := range c.Allocated {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID != nil {
				state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
				state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
				continue
			}
			state.AllocatedDevices.Insert(id)
		}
	}
	a, err := structured.NewAllocator(ctx, UpstreamFeatures, state, classLister(c.Classes), c.Slices, cache)
	if err != nil {
		return nil, err
	}
	return &Upstream{allocator: a}, nil
}

// Allocate allocates the claims on one node; it returns nil results when they do not fit.
func (u *Upstream) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	return u.allocator.Allocate(ctx, node, claims)
}

// classLister serves DeviceClasses to the upstream allocator.
type classLister []*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l, nil }

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("deviceclass %q not found", name)
}
