package fuzz

import (
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

// Snapshot loads the cluster into an allocator snapshot: its nodes, slices, classes, taint rules and allocated
// claims. Options whose Features are nil get the cluster's feature gates, and options without ShareIDs get
// deterministic share IDs, so that the same cluster always gives the same results: the lowercase UUIDs
// 00000000-0000-4000-8000-000000000001, …-000000000002, … (the pattern of a version 4 UUID, as the API server
// requires of status.allocation.devices.results[].shareID, with a counter for the random bits; distinct from
// the share IDs of the generated allocated claims, whose version digit is 0).
func (c *Cluster) Snapshot(opts allocator.Options) (*allocator.Snapshot, error) {
	if opts.Features == nil {
		features := c.Gates()
		opts.Features = &features
	}
	if opts.ShareIDs == nil {
		var next atomic.Int64
		opts.ShareIDs = func() types.UID { return types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", next.Add(1))) }
	}
	s := allocator.NewSnapshot(opts)
	for _, n := range c.Nodes {
		if err := s.AddOrUpdateNode(n); err != nil {
			return nil, err
		}
	}
	for _, x := range c.Slices {
		if err := s.AddOrUpdateSlice(x); err != nil {
			return nil, err
		}
	}
	for _, x := range c.Classes {
		if err := s.AddOrUpdateClass(x); err != nil {
			return nil, err
		}
	}
	for _, x := range c.TaintRules {
		if err := s.AddOrUpdateTaintRule(x); err != nil {
			return nil, err
		}
	}
	for _, x := range c.Allocated {
		if err := s.AddOrUpdateClaim(x); err != nil {
			return nil, err
		}
	}
	return s, nil
}
