package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// independentCluster is a node with 16 GPUs that all differ (no two are interchangeable) and two NICs
// on different NUMA nodes, and a claim for k GPUs and two NICs on one NUMA node, which no pair of NICs
// satisfies. Every request has enough candidates, so only the search can tell; the Kubernetes allocator
// tries each of the C(16,k) GPU combinations before giving up.
func independentCluster(t *testing.T, budget int, constraints ...resourceapi.DeviceConstraint) (*allocator.Snapshot, *resourceapi.ResourceClaim) {
	t.Helper()
	var devs []resourceapi.Device
	for i := range 16 {
		devs = append(devs, device(fmt.Sprintf("gpu-%d", i), map[string]any{"kind": "gpu", "serial": i, "numa": i % 2}))
	}
	devs = append(devs,
		device("nic-0", map[string]any{"kind": "nic", "serial": 100, "numa": 0}),
		device("nic-1", map[string]any{"kind": "nic", "serial": 101, "numa": 1}))
	s := allocator.NewSnapshot(allocator.Options{StepBudget: budget})
	must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, node1, devs...)))
	must(t, s.AddOrUpdateClass(class("gpu", `device.attributes["`+driverA+`"].kind == "gpu"`)))
	must(t, s.AddOrUpdateClass(class("nic", `device.attributes["`+driverA+`"].kind == "nic"`)))
	c := withConstraints(claim("c", exact("gpus", "gpu", 8), exact("nics", "nic", 2)), constraints...)
	return s, c
}

// The NIC request fails whatever GPUs were taken (no device serves both, no constraint spans both): the
// search stops at the first failure instead of trying every GPU combination.
func TestIndependentRequestsFailOnce(t *testing.T) {
	s, c := independentCluster(t, 200, matchAttr(driverA+"/numa", "nics"))
	_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
	if !errors.Is(err, allocator.ErrUnsatisfiable) {
		t.Fatalf("got %v, want does not fit within 200 steps", err)
	}
}

// A constraint that spans both requests ties them: the NICs' failure depends on the GPUs taken, so the
// search must go on. The GPUs differ in the serial a constraint compares, so none is interchangeable with
// another, and C(16,8) combinations exceed the budget.
func TestDependentRequestsAreSearched(t *testing.T) {
	s, c := independentCluster(t, 200, matchAttr(driverA+"/numa", "nics"), distinctAttr(driverA+"/serial", "gpus", "nics"))
	_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
	if !errors.Is(err, allocator.ErrSearchBudget) {
		t.Fatalf("got %v, want the search to run out of its budget", err)
	}
}
