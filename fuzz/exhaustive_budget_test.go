package fuzz_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// TestExhaustiveStopsAtItsBudget: four claims for 3 of 12 GPUs each have 220^4 (about 2.3e9) complete
// choices; with a budget of 300 the search must stop after 300 of them and say Undecided, and a fifth
// claim no device serves must be answered DoesNotFit without enumerating the others' choices. Before,
// both enumerated every remaining choice.
func TestExhaustiveStopsAtItsBudget(t *testing.T) {
	node := &v1.Node{}
	node.Name = "node-0"
	slice := &resourceapi.ResourceSlice{}
	slice.Name = "node-0-gpu"
	slice.Spec = resourceapi.ResourceSliceSpec{Driver: fuzz.GPUDriver, NodeName: ptr.To("node-0"),
		Pool: resourceapi.ResourcePool{Name: "node-0-gpu", Generation: 1, ResourceSliceCount: 1}}
	for i := range 12 {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	class := &resourceapi.DeviceClass{}
	class.Name = fuzz.ClassAny
	claimFor := func(name, class string, count int64) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{}
		c.Name, c.Namespace = name, "default"
		c.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}}
		return c
	}
	// 4 × 3 = 12 GPUs: the claims fit together, but the search checks choices in order and the first
	// 300 complete choices all reuse a GPU.
	var claims []*resourceapi.ResourceClaim
	for i := range 4 {
		claims = append(claims, claimFor(fmt.Sprintf("c%d", i), fuzz.ClassAny, 3))
	}
	cluster := func(claims []*resourceapi.ResourceClaim, classes ...*resourceapi.DeviceClass) *fuzz.Cluster {
		return &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node, Slices: []*resourceapi.ResourceSlice{slice},
			Classes: classes, Claims: claims, Features: new(verify.AllFeatures())}
	}
	// No deadline: the budget is what must end the search. A deadline reached first (the test takes 1 s, and
	// over 10 s beside other work) fails verify's checks, so the search would answer a wrong verdict.
	ctx := t.Context()
	if v, _ := fuzz.Exhaustive(ctx, cluster(claims, class), 300); v != fuzz.Undecided {
		t.Errorf("four claims of 3 of 12 GPUs, budget 300: %v, want Undecided", v)
	}
	nowhere := &resourceapi.DeviceClass{}
	nowhere.Name = "nowhere"
	nowhere.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "false"}}}
	withNone := append(claims[:4:4], claimFor("c4", "nowhere", 1))
	if v, _ := fuzz.Exhaustive(ctx, cluster(withNone, class, nowhere), 300); v != fuzz.DoesNotFit {
		t.Errorf("a claim no device serves: %v, want DoesNotFit", v)
	}
}
