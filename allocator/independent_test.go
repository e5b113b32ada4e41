package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// independentCluster is a node with 16 GPUs that differ in their serials, and the partitions of one more
// GPU: two NICs of 6Gi on a counter set of 8Gi, so each fits alone and both never do (the pool's other
// set, which no NIC draws on, keeps counting the pool's memory from telling). The claim asks for 8
// GPUs and two NICs; every request has enough candidates and every constraint enough values, so only the
// search can tell; the Kubernetes allocator tries each of the C(16,8) GPU combinations before giving up.
func independentCluster(t *testing.T, budget int, constraints ...resourceapi.DeviceConstraint) (*allocator.Snapshot, *resourceapi.ResourceClaim) {
	t.Helper()
	var devs []resourceapi.Device
	for i := range 16 {
		devs = append(devs, device(fmt.Sprintf("gpu-%d", i), map[string]any{"kind": "gpu", "serial": i}))
	}
	s := allocator.NewSnapshot(allocator.Options{StepBudget: budget})
	must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, node1, devs...)))
	nics := []resourceapi.Device{partition("nic-0", "part", "6Gi"), partition("nic-1", "part", "6Gi")}
	for i := range nics {
		nics[i].Attributes["kind"] = resourceapi.DeviceAttribute{StringValue: ptr("nic")}
		nics[i].Attributes["serial"] = resourceapi.DeviceAttribute{IntValue: ptr(int64(100 + i))}
	}
	for _, sl := range partitionedPoolSpare(nics...) {
		must(t, s.AddOrUpdateSlice(sl))
	}
	must(t, s.AddOrUpdateClass(class("gpu", `device.attributes["`+driverA+`"].kind == "gpu"`)))
	must(t, s.AddOrUpdateClass(class("nic", `device.attributes["`+driverA+`"].kind == "nic"`)))
	c := withConstraints(claim("c", exact("gpus", "gpu", 8), exact("nics", "nic", 2)), constraints...)
	return s, c
}

// The NIC request fails whatever GPUs were taken (no device serves both, no constraint spans both): the
// search stops at the first failure instead of trying every GPU combination. (The constraint on the GPUs'
// serials keeps them from being interchangeable.)
func TestIndependentRequestsFailOnce(t *testing.T) {
	s, c := independentCluster(t, 200, distinctAttr(driverA+"/serial", "gpus"))
	_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
	if !errors.Is(err, allocator.ErrUnsatisfiable) {
		t.Fatalf("got %v, want does not fit within 200 steps", err)
	}
}

// A constraint that spans both requests ties them: the NICs' failure depends on the GPUs taken, so the
// search must go on. The GPUs differ in the serial the constraint compares, so none is interchangeable
// with another, and C(16,8) combinations exceed the budget.
func TestDependentRequestsAreSearched(t *testing.T) {
	s, c := independentCluster(t, 200, distinctAttr(driverA+"/serial", "gpus", "nics"))
	_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
	if !errors.Is(err, allocator.ErrSearchBudget) {
		t.Fatalf("got %v, want the search to run out of its budget", err)
	}
}

// alternativesCluster is a node with 16 GPUs that no check tells apart only by their serials, which a
// constraint of the claim compares (so none is interchangeable with another), and the partitions of one
// more GPU: two of 6Gi on a counter set of 8Gi, so each fits alone and both never do. The claim's first
// request asks for 8 or else 4 GPUs (with distinct serials); its second is given.
func alternativesCluster(t *testing.T, second resourceapi.DeviceRequest) (*allocator.Snapshot, *resourceapi.ResourceClaim) {
	t.Helper()
	var devs []resourceapi.Device
	for i := range 16 {
		devs = append(devs, device(fmt.Sprintf("gpu-%d", i), map[string]any{"kind": "gpu", "serial": i}))
	}
	s := allocator.NewSnapshot(allocator.Options{StepBudget: 2000})
	must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, node1, devs...)))
	for _, sl := range partitionedPool(partition("p-a", "part", "6Gi"), partition("p-b", "part", "6Gi")) {
		must(t, s.AddOrUpdateSlice(sl))
	}
	for _, kind := range []string{"gpu", "part", "nic"} {
		must(t, s.AddOrUpdateClass(class(kind, `device.attributes["`+driverA+`"].?kind.orValue("part") == "`+kind+`"`)))
	}
	c := withConstraints(claim("c", firstAvailable("gpus", sub("eight", "gpu", 8), sub("four", "gpu", 4)), second),
		distinctAttr(driverA+"/serial", "gpus"))
	return s, c
}

// Requests with alternatives ahead of one that cannot be satisfied neither keep failing fast nor end the
// search: the Kubernetes allocator tries C(16,8) and C(16,4) GPU combinations first.
func TestAlternativesAheadOfAFailingRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second resourceapi.DeviceRequest
	}{
		{"every alternative of the later request has too few candidates: fails before searching",
			firstAvailable("nics", sub("two", "nic", 2), sub("one", "nic", 1))},
		{"the later request has candidates but its counters never admit both: fails once, whatever the GPUs",
			exact("parts", "part", 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := alternativesCluster(t, tc.second)
			_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
			if !errors.Is(err, allocator.ErrUnsatisfiable) {
				t.Fatalf("got %v, want does not fit within the step budget", err)
			}
		})
	}
}
