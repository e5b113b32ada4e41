package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// MemorySlices is how many memory slices one partitionable benchmark GPU has, as an A100 or H100 in MIG mode.
const MemorySlices = 7

// Profiles are the partition profiles of a benchmark GPU: how many memory slices each takes, and where it may
// start. As with MIG, placements are fixed: a 2-slice partition starts at slice 0, 2 or 4, never at 1.
var Profiles = []struct {
	Slices int
	Starts []int
}{
	{1, []int{0, 1, 2, 3, 4, 5, 6}},
	{2, []int{0, 2, 4}},
	{3, []int{0, 4}},
	{4, []int{0}},
	{7, []int{0}},
}

// PartitionableFleet returns nodes of gpusPerNode partitionable GPUs. Each node's pool has one slice with a
// counter set per GPU (one counter per memory slice) and device slices of at most 64 partitions, one partition
// per profile placement, each consuming its memory slices; overlapping placements exclude each other.
// Classes "slices-1", "slices-2", … select the partitions of each profile.
func PartitionableFleet(nodes, gpusPerNode int) Cluster {
	c := Cluster{}
	for _, p := range Profiles {
		c.Classes = append(c.Classes, &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: profileClass(p.Slices)},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.driver == %q && device.attributes[%q].memorySlices == %d`, Driver, Driver, p.Slices),
			}}}},
		})
	}
	for n := 0; n < nodes; n++ {
		name := fmt.Sprintf("node-%04d", n)
		c.Nodes = append(c.Nodes, BenchNode(name))
		c.Slices = append(c.Slices, partitionedNode(name, gpusPerNode)...)
	}
	return c
}

func profileClass(slices int) string { return fmt.Sprintf("slices-%d", slices) }

func partitionedNode(node string, gpus int) []*resourceapi.ResourceSlice {
	newSlice := func(suffix string) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: node + "-" + suffix},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:   Driver,
				NodeName: ptr.To(node),
				Pool:     resourceapi.ResourcePool{Name: node, Generation: 1},
			},
		}
	}
	counters := newSlice("counters")
	out := []*resourceapi.ResourceSlice{counters}
	var devices *resourceapi.ResourceSlice
	for g := 0; g < gpus; g++ {
		set := resourceapi.CounterSet{Name: fmt.Sprintf("gpu-%d", g), Counters: map[string]resourceapi.Counter{}}
		for s := 0; s < MemorySlices; s++ {
			set.Counters[fmt.Sprintf("memory-slice-%d", s)] = resourceapi.Counter{Value: resource.MustParse("1")}
		}
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, set)
		for _, p := range Profiles {
			for _, start := range p.Starts {
				if devices == nil || len(devices.Spec.Devices) == resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures {
					devices = newSlice(fmt.Sprintf("devices-%d", len(out)))
					out = append(out, devices)
				}
				devices.Spec.Devices = append(devices.Spec.Devices, partition(g, p.Slices, start))
			}
		}
	}
	for _, s := range out {
		s.Spec.Pool.ResourceSliceCount = int64(len(out))
	}
	return out
}

func partition(gpu, slices, start int) resourceapi.Device {
	used := map[string]resourceapi.Counter{}
	for s := start; s < start+slices; s++ {
		used[fmt.Sprintf("memory-slice-%d", s)] = resourceapi.Counter{Value: resource.MustParse("1")}
	}
	return resourceapi.Device{
		Name: fmt.Sprintf("gpu-%d-part-%d-%d", gpu, slices, start),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"memorySlices": {IntValue: ptr.To(int64(slices))},
			"parent":       {StringValue: ptr.To(fmt.Sprintf("gpu-%d", gpu))},
		},
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: fmt.Sprintf("gpu-%d", gpu), Counters: used}},
	}
}

// ClaimStream returns n claims of one partition each, with sizes drawn from a fixed pseudo-random sequence:
// 40 % one slice, 25 % two, 15 % three, 10 % four, 10 % a whole GPU.
func ClaimStream(n int) []*resourceapi.ResourceClaim { return ClaimStreamSeeded(n, 1) }

// ClaimStreamSeeded is ClaimStream with the sizes drawn from another pseudo-random sequence, one per seed:
// streams nothing was tuned for.
func ClaimStreamSeeded(n int, seed uint64) []*resourceapi.ResourceClaim {
	rng := rand.New(rand.NewPCG(seed, 37))
	claims := make([]*resourceapi.ResourceClaim, n)
	for i := range claims {
		var slices int
		switch r := rng.IntN(100); {
		case r < 40:
			slices = 1
		case r < 65:
			slices = 2
		case r < 80:
			slices = 3
		case r < 90:
			slices = 4
		default:
			slices = 7
		}
		claims[i] = newClaim(fmt.Sprintf("claim-%05d", i), exactly("part", profileClass(slices), 1))
	}
	return claims
}

// Placer is an allocator under test in the fragmentation run.
type Placer interface {
	// Allocate allocates the claims on one node: nil results when they do not fit.
	Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error)
	// Record adds an allocated claim to the placer's state.
	Record(ctx context.Context, claim *resourceapi.ResourceClaim) error
}

// Fragmentation feeds the claim stream to the placer, each claim to the first node where it fits, until the
// first claim that fits nowhere. It returns how many memory slices are in use at that moment and how many
// exist.
func Fragmentation(ctx context.Context, c Cluster, p Placer, stream []*resourceapi.ResourceClaim) (used, total int, err error) {
	total = 0
	for _, s := range c.Slices {
		total += len(s.Spec.SharedCounters) * MemorySlices
	}
	for _, claim := range stream {
		placed := false
		for _, node := range c.Nodes {
			res, err := p.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
			if err != nil {
				return 0, 0, fmt.Errorf("claim %s on node %s: %w", claim.Name, node.Name, err)
			}
			if res == nil {
				continue
			}
			allocated := claim.DeepCopy()
			allocated.Status.Allocation = &res[0]
			if err := p.Record(ctx, allocated); err != nil {
				return 0, 0, err
			}
			var slices int
			if _, err := fmt.Sscanf(claim.Spec.Devices.Requests[0].Exactly.DeviceClassName, "slices-%d", &slices); err != nil {
				return 0, 0, fmt.Errorf("claim %s: %w", claim.Name, err)
			}
			used += slices
			placed = true
			break
		}
		if !placed {
			return used, total, nil
		}
	}
	return used, total, fmt.Errorf("the stream of %d claims ended before one failed to fit", len(stream))
}

// UpstreamPlacer runs the fragmentation scenario on the upstream allocator, rebuilt after each allocation.
type UpstreamPlacer struct {
	cluster  Cluster
	upstream *Upstream
}

// NewUpstreamPlacer returns a placer over the cluster.
func NewUpstreamPlacer(ctx context.Context, c Cluster) (*UpstreamPlacer, error) {
	u, err := NewUpstream(ctx, c, nil)
	if err != nil {
		return nil, err
	}
	return &UpstreamPlacer{cluster: c, upstream: u}, nil
}

// Allocate implements Placer.
func (p *UpstreamPlacer) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	return p.upstream.Allocate(ctx, node, claims)
}

// Record implements Placer.
func (p *UpstreamPlacer) Record(ctx context.Context, claim *resourceapi.ResourceClaim) error {
	p.cluster.Allocated = append(p.cluster.Allocated, claim)
	u, err := NewUpstream(ctx, p.cluster, nil)
	if err != nil {
		return err
	}
	p.upstream = u
	return nil
}
