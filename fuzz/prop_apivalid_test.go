package fuzz_test

import (
	"context"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
	"github.com/dralloc/dralloc/inventory"
)

// Every generated ResourceSlice passes inventory's validation of slices, which checks them as the API server
// does; in particular the leftover slice of an older generation in a pool with per-device node selection
// names the nodes of its device, as the API server requires of every device of such a slice.
func TestPropGeneratedSlicesValidate(t *testing.T) {
	stalePerDevice := 0
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		for _, s := range c.Slices {
			if ptr.Deref(s.Spec.PerDeviceNodeSelection, false) && slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == "stale" }) {
				stalePerDevice++
			}
			for _, e := range inventory.ValidateSlice(s) {
				rt.Errorf("ResourceSlice %s: %v", s.Name, e)
			}
		}
	})
	if stalePerDevice == 0 {
		t.Errorf("no cluster had a leftover slice in a pool with per-device node selection")
	}
}

// The share IDs fuzz.Cluster.Snapshot gives new shares by default are lowercase UUIDs, which the API server
// requires of status.allocation.devices.results[].shareID, and distinct within an allocation.
func TestPropSnapshotShareIDsAreUUIDs(t *testing.T) {
	shares := 0
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(fuzz.Options{ConsumableCapacity: true, NetworkAttached: true}).Draw(rt, "cluster")
		s, err := c.Snapshot(allocator.Options{})
		if err != nil {
			rt.Fatalf("snapshot: %v", err)
		}
		results, err := s.Allocate(context.Background(), c.Node, c.Claims)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for i, r := range results {
			for j, d := range r.Devices.Results {
				if d.ShareID == nil {
					continue
				}
				shares++
				id := string(*d.ShareID)
				p := field.NewPath("results").Index(i).Child("devices", "results").Index(j).Child("shareID")
				for _, e := range validate.UUID(context.Background(), operation.Operation{}, p, &id, nil) {
					rt.Errorf("claim %d: %v", i, e)
				}
				if seen[id] {
					rt.Errorf("%s: share ID %s given twice", p, id)
				}
				seen[id] = true
			}
		}
	})
	if shares == 0 {
		t.Errorf("no allocation had a share")
	}
}
