package allocator_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// holdersCluster is a snapshot of nodes node-0 … node-(n-1), each with two devices of driver
// holders.example, both allocated to claims of their own (node-<i>-held-<j>), and a claim asking for
// one device of the class, which fits on no node.
func holdersCluster(t *testing.T, n int) (*allocator.Snapshot, *resourceapi.ResourceClaim) {
	t.Helper()
	const driver = "holders.example"
	s := allocator.NewSnapshot(allocator.Options{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`}}}}}))
	spec := func(count int64) resourceapi.ResourceClaimSpec {
		return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "dev", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}}}}
	}
	for i := range n {
		node := fmt.Sprintf("node-%d", i)
		must(s.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}))
		must(s.AddOrUpdateSlice(&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: resourceapi.ResourceSliceSpec{
			Driver: driver, NodeName: &node, Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "d0"}, {Name: "d1"}}}}))
		for j := range 2 {
			c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s-held-%d", node, j)}, Spec: spec(1)}
			c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "r", Driver: driver, Pool: node, Device: fmt.Sprintf("d%d", j)}}}}
			must(s.AddOrUpdateClaim(c))
		}
	}
	return s, &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ask"}, Spec: spec(1)}
}

// TestExplainHoldersCostNotClusterWide: an explanation on one node names the claims holding its
// devices without looking at every claim of the cluster. Its allocations are the same with 10 and
// with 2,000 claims held elsewhere: finding the holders by scanning every claim, once per node
// explained, made explaining a pod across a cluster cost nodes × claims.
func TestExplainHoldersCostNotClusterWide(t *testing.T) {
	ctx := context.Background()
	allocs := func(nodes int) (float64, *allocator.Explanation) {
		s, ask := holdersCluster(t, nodes)
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}
		var e *allocator.Explanation
		n := testing.AllocsPerRun(20, func() {
			var err error
			if e, err = s.Explain(ctx, node, []*resourceapi.ResourceClaim{ask}); err != nil {
				t.Fatal(err)
			}
		})
		return n, e
	}
	small, e := allocs(5)
	large, _ := allocs(1000)
	if large > small+10 {
		t.Errorf("explaining on one node: %.0f allocations with 2,000 claims in the cluster, %.0f with 10", large, small)
	}
	// The holders are named, the first by name for each device.
	var named []string
	for _, c := range e.Claims {
		for _, r := range c.Requests {
			for _, f := range r.Filters {
				if f.Reason == allocator.ReasonAllocated {
					for _, cause := range f.Causes {
						named = append(named, cause.Object)
					}
				}
			}
		}
	}
	if want := "[ResourceClaim ns/node-0-held-0 ResourceClaim ns/node-0-held-1]"; fmt.Sprint(named) != want {
		t.Errorf("holders named %v, want %s", named, want)
	}
}
