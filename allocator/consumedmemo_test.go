package allocator_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
)

// What a request consumes is remembered by the device's capacities and the request's amounts, so
// devices that differ in either are not answered alike: node-0's GPU has 8Gi in steps of 4Gi (a 3Gi
// request takes 4Gi), node-1's 8Gi in steps of 1Gi (it takes 3Gi), node-2's 2Gi (it does not fit). Each
// node is asked after the others, twice, and on a fork, and a share allocated on one device leaves the
// ledger of the next call on it holding what the state uses.
func TestConsumedCapacityByDevice(t *testing.T) {
	ctx := context.Background()
	snap := allocator.NewSnapshot(allocator.Options{})
	must(t, snap.AddOrUpdateClass(class("gpu", `device.driver == "gpu.example.com"`)))
	shared := func(name, value, step string) resourceapi.Device {
		d := device(name, nil)
		d.AllowMultipleAllocations = ptr(true)
		min, st := resource.MustParse("1Gi"), resource.MustParse(step)
		d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {
			Value:         resource.MustParse(value),
			RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: &min, ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &min, Step: &st}},
		}}
		return d
	}
	for i, d := range []resourceapi.Device{shared("gpu", "8Gi", "4Gi"), shared("gpu", "8Gi", "1Gi"), shared("gpu", "2Gi", "1Gi")} {
		name := []string{"node-0", "node-1", "node-2"}[i]
		must(t, snap.AddOrUpdateNode(node(name, nil)))
		must(t, snap.AddOrUpdateSlice(nodeSlice(name+"-gpus", name, "gpu.example.com", name, d)))
	}
	req := exact("mem", "gpu", 1)
	req.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("3Gi")}}
	claims := []*resourceapi.ResourceClaim{claim("train", req)}
	want := map[string]string{"node-0": "5Gi", "node-1": "3Gi", "node-2": ""}
	check := func(s *allocator.Snapshot) {
		t.Helper()
		for _, name := range []string{"node-2", "node-1", "node-0", "node-1", "node-2", "node-0"} {
			n, _ := s.Node(name)
			results, err := s.Allocate(ctx, n, claims)
			got := ""
			if err == nil {
				q := results[0].Devices.Results[0].ConsumedCapacity["memory"]
				got = q.String()
			}
			if got != want[name] {
				t.Errorf("%s: consumed %q (%v), want %q", name, got, err, want[name])
			}
		}
	}
	check(snap)
	fork := snap.Fork()
	check(fork)
	// Two shares of 3Gi leave 2Gi of node-1's GPU: a third does not fit on the fork, and fits on the
	// parent, which has none.
	n1, _ := fork.Node("node-1")
	for i, name := range []string{"a", "b"} {
		results, err := fork.Allocate(ctx, n1, []*resourceapi.ResourceClaim{claim(name, req)})
		must(t, err)
		c := claim(name, req)
		c.Status.Allocation = &results[0]
		must(t, fork.AddOrUpdateClaim(c))
		if fits, err := fork.Fits(ctx, n1, claims); err != nil || fits != (i == 0) {
			t.Errorf("after %d shares: fits %v, %v", i+1, fits, err)
		}
	}
	if fits, err := snap.Fits(ctx, n1, claims); err != nil || !fits {
		t.Errorf("the parent, without the fork's shares: fits %v, %v", fits, err)
	}
}
