package allocator_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// sharedAttr is an attribute every device has under one domain, so that a constraint can span devices of
// both drivers.
const sharedAttr = "topology.example.com/numa"

// independenceGen draws searches that fail after backtracking, where dralloc may end the search early
// because a later request fails whatever the earlier ones took: one node, devices of two kinds from two
// drivers (some devices of the first driver are of the second kind, so the classes can overlap), a few
// devices already in use, optional shared counters, and claims of two to four requests with constraints
// over random subsets of them (a single request, several, or all).
func independenceGen() *rapid.Generator[*fuzz.Cluster] {
	return rapid.Custom(func(t *rapid.T) *fuzz.Cluster {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
		c := &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node, Features: new(verify.AllFeatures())}
		counters := rapid.Bool().Draw(t, "counters")
		var ids []resourceapi.DeviceRequestAllocationResult
		for di, driver := range []string{"a.example.com", "b.example.com"} {
			slice := &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("slice-%d", di)},
				Spec: resourceapi.ResourceSliceSpec{
					Driver:   driver,
					NodeName: ptr.To(node.Name),
					Pool:     resourceapi.ResourcePool{Name: "pool", Generation: 1, ResourceSliceCount: 1},
				},
			}
			if counters && di == 0 {
				// The counters are published in a slice of their own, as the API requires.
				slice.Spec.Pool.ResourceSliceCount = 2
				c.Slices = append(c.Slices, &resourceapi.ResourceSlice{
					ObjectMeta: metav1.ObjectMeta{Name: "counters"},
					Spec: resourceapi.ResourceSliceSpec{
						Driver:   driver,
						NodeName: ptr.To(node.Name),
						Pool:     resourceapi.ResourcePool{Name: "pool", Generation: 1, ResourceSliceCount: 2},
						SharedCounters: []resourceapi.CounterSet{{Name: "set", Counters: map[string]resourceapi.Counter{
							"units": {Value: resource.MustParse(fmt.Sprint(rapid.IntRange(1, 4).Draw(t, "units")))},
						}}},
					},
				})
			}
			n := rapid.IntRange(2, 7-2*di).Draw(t, fmt.Sprintf("devices%d", di))
			for i := range n {
				kind := "x"
				if di == 1 || rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("kind%d-%d", di, i)) == 0 {
					kind = "y"
				}
				dev := resourceapi.Device{
					Name: fmt.Sprintf("dev-%d", i),
					Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
						"kind":     {StringValue: ptr.To(kind)},
						"serial":   {IntValue: ptr.To(int64(10*di + i))},
						sharedAttr: {IntValue: ptr.To(int64(rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("numa%d-%d", di, i))))},
					},
				}
				if counters && di == 0 && rapid.Bool().Draw(t, fmt.Sprintf("consumes%d", i)) {
					dev.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "set", Counters: map[string]resourceapi.Counter{
						"units": {Value: resource.MustParse("1")},
					}}}
				}
				slice.Spec.Devices = append(slice.Spec.Devices, dev)
				if rapid.IntRange(0, 9).Draw(t, fmt.Sprintf("inUse%d-%d", di, i)) == 0 {
					ids = append(ids, resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: driver, Pool: "pool", Device: dev.Name})
				}
			}
			c.Slices = append(c.Slices, slice)
		}
		if len(ids) > 0 {
			c.Allocated = append(c.Allocated, &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held", UID: "uid-held"},
				// The request its results name, as the API server requires.
				Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{
					DeviceClassName: "class-x", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(len(ids))}}}}},
				Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: ids}}},
			})
		}
		for _, kind := range []string{"x", "y"} {
			c.Classes = append(c.Classes, &resourceapi.DeviceClass{
				ObjectMeta: metav1.ObjectMeta{Name: "class-" + kind},
				Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: fmt.Sprintf(`device.attributes[device.driver].kind == %q`, kind),
				}}}},
			})
		}
		for ci := range rapid.IntRange(1, 2).Draw(t, "claims") {
			name := fmt.Sprintf("claim-%d", ci)
			claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
			nreq := rapid.IntRange(2, 4).Draw(t, "requests"+name)
			var names []string
			for ri := range nreq {
				kind := rapid.SampledFrom([]string{"x", "y"}).Draw(t, fmt.Sprintf("%s-kind%d", name, ri))
				rn := fmt.Sprintf("r%d", ri)
				names = append(names, rn)
				claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: rn, Exactly: &resourceapi.ExactDeviceRequest{
					DeviceClassName: "class-" + kind,
					AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
					Count:           int64(rapid.IntRange(1, 3).Draw(t, fmt.Sprintf("%s-count%d", name, ri))),
				}})
			}
			for k := range rapid.IntRange(0, 2).Draw(t, "constraints"+name) {
				var on []string
				// Mostly a constraint within one request: the case where a later request fails on its own.
				switch r := rapid.IntRange(0, 9).Draw(t, fmt.Sprintf("%s-span%d", name, k)); {
				case r == 0: // all requests
				case r < 7:
					on = []string{rapid.SampledFrom(names).Draw(t, fmt.Sprintf("%s-one%d", name, k))}
				default:
					on = rapid.SliceOfNDistinct(rapid.SampledFrom(names), 2, len(names), rapid.ID[string]).Draw(t, fmt.Sprintf("%s-some%d", name, k))
				}
				claim.Spec.Devices.Constraints = append(claim.Spec.Devices.Constraints, resourceapi.DeviceConstraint{
					Requests: on, MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(sharedAttr)),
				})
			}
			c.Claims = append(c.Claims, claim)
		}
		return c
	})
}

// TestDifferentialIndependentRequests: on searches that backtrack and fail, where dralloc's search may end
// early because a later request fails whatever the earlier ones took, the outcome and the results agree
// with upstream (whose search is exhaustive), and a "does not fit" is confirmed by the exhaustive search.
func TestDifferentialIndependentRequests(t *testing.T) {
	all := newTally()
	rapid.Check(t, func(rt *rapid.T) {
		c := independenceGen().Draw(rt, "cluster")
		o, agreed := compare(rt, c)
		all.add([]string{"independence"}, o, agreed)
	})
	all.log(t)
}
