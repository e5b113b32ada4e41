package allocator_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// pruningGen draws the shapes dralloc decides by counting before it searches, where the Kubernetes
// allocator searches: several claims competing for few devices (pigeonhole), matchAttribute and
// distinctAttribute constraints on few values (on the devices' own attributes or on derived ones),
// requests with alternatives ahead of others, requests with admin access, devices held by allocated
// claims, and a slice that skips node operations on a node that may or may not declare the feature. One
// node, three to ten devices of two kinds in two pools.
func pruningGen() *rapid.Generator[*fuzz.Cluster] {
	return rapid.Custom(func(t *rapid.T) *fuzz.Cluster {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
		if rapid.Bool().Draw(t, "declares") {
			node.Status.DeclaredFeatures = []string{"DRAOptionalNodeOperations"}
		}
		c := &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node, Features: new(verify.AllFeatures())}
		if rapid.IntRange(0, 3).Draw(t, "incubating") == 0 {
			// Without the alpha gates Kubernetes uses its incubating allocator: no derived attributes, no
			// node operations.
			c.Features.DRADerivedAttributes, c.Features.DRAOptionalNodeOperations = false, false
			c.Features.DRAListTypeAttributes, c.Features.DRADeviceCompatibilityGroups = false, false
		}
		var held []resourceapi.DeviceRequestAllocationResult
		for pi, pool := range []string{"pool-a", "pool-b"} {
			s := &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: pool},
				Spec: resourceapi.ResourceSliceSpec{Driver: fuzz.GPUDriver, NodeName: ptr.To(node.Name),
					Pool: resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1}},
			}
			if pi == 1 && rapid.IntRange(0, 2).Draw(t, "skipNodeOps") == 0 {
				s.Spec.SkipNodeOperations = []resourceapi.SkipNodeOperation{resourceapi.SkipNodeOperationAll}
			}
			for i := range rapid.IntRange(1+pi, 6-pi).Draw(t, pool+"-devices") {
				name := fmt.Sprintf("%s-%d", pool, i)
				kind := "gpu"
				if rapid.IntRange(0, 3).Draw(t, name+"-nic") == 0 {
					kind = "nic"
				}
				attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"kind":   {StringValue: ptr.To(kind)},
					"serial": {IntValue: ptr.To(int64(10*pi + i))},
				}
				if rapid.IntRange(0, 4).Draw(t, name+"-hasNuma") > 0 {
					attrs["numa"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(rapid.IntRange(0, 2).Draw(t, name+"-numa")))}
				}
				s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: name, Attributes: attrs})
				if rapid.IntRange(0, 5).Draw(t, name+"-held") == 0 {
					held = append(held, resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: fuzz.GPUDriver, Pool: pool, Device: name})
				}
			}
			c.Slices = append(c.Slices, s)
		}
		if len(held) > 0 {
			c.Allocated = append(c.Allocated, &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held", UID: "uid-held"},
				Spec:       heldSpec(len(held), false),
				Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: held}}},
			})
		}
		classes := []string{"gpu", "nic", "any"}
		for _, name := range classes {
			cl := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if name != "any" {
				cl.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: fmt.Sprintf(`device.attributes[%q].kind == %q`, fuzz.GPUDriver, name),
				}}}
			}
			c.Classes = append(c.Classes, cl)
		}
		numa := resourceapi.FullyQualifiedName(fuzz.GPUDriver + "/numa")
		derived := resourceapi.FullyQualifiedName("example.com/numa")
		for ci := range rapid.IntRange(2, 6).Draw(t, "claims") {
			name := fmt.Sprintf("claim-%d", ci)
			claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
			useDerived := c.Gates().DRADerivedAttributes && rapid.IntRange(0, 3).Draw(t, name+"-derived") == 0
			exact := func(key string) *resourceapi.ExactDeviceRequest {
				r := &resourceapi.ExactDeviceRequest{
					DeviceClassName: rapid.SampledFrom(classes).Draw(t, key+"-class"),
					AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
					Count:           int64(rapid.IntRange(1, 3).Draw(t, key+"-count")),
				}
				if useDerived {
					r.DerivedAttributes = []resourceapi.DeviceDerivedAttribute{{Name: derived,
						Expression: fmt.Sprintf(`device.attributes[%q].?numa.orValue(7) %% 2`, fuzz.GPUDriver)}}
				}
				return r
			}
			for ri := range rapid.IntRange(1, 2).Draw(t, name+"-requests") {
				key := fmt.Sprintf("%s-r%d", name, ri)
				req := resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", ri)}
				if rapid.IntRange(0, 3).Draw(t, key+"-alternatives") == 0 {
					for si := range 2 {
						e := exact(fmt.Sprintf("%s-s%d", key, si))
						req.FirstAvailable = append(req.FirstAvailable, resourceapi.DeviceSubRequest{Name: fmt.Sprintf("s%d", si),
							DeviceClassName: e.DeviceClassName, AllocationMode: e.AllocationMode, Count: e.Count, DerivedAttributes: e.DerivedAttributes})
					}
				} else {
					req.Exactly = exact(key)
					if rapid.IntRange(0, 4).Draw(t, key+"-admin") == 0 {
						req.Exactly.AdminAccess = ptr.To(true)
					}
				}
				claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, req)
			}
			attr := numa
			if useDerived {
				attr = derived
			}
			switch rapid.IntRange(0, 3).Draw(t, name+"-constraint") {
			case 0:
				claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &attr}}
			case 1:
				if c.Gates().DRAListTypeAttributes || !useDerived {
					claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: &attr}}
				}
			}
			c.Claims = append(c.Claims, claim)
		}
		return c
	})
}

// TestDifferentialPruning: on the shapes dralloc decides by counting before it searches, the outcome
// agrees with upstream, FirstFit picks the same devices, and a "does not fit" is confirmed by the
// exhaustive search when the case is small.
func TestDifferentialPruning(t *testing.T) {
	all := newTally()
	rapid.Check(t, func(rt *rapid.T) {
		c := pruningGen().Draw(rt, "cluster")
		o, agreed := compare(rt, c)
		all.add([]string{"pruning"}, o, agreed)
	})
	all.log(t)
}
