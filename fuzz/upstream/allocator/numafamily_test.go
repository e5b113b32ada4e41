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

// numaFamilyGen draws the constraint shape of issue 40 and its neighbours: one node of 4 to 16 GPUs in
// groups of 1 to 8 sharing a value of a NUMA attribute (the standard resource.kubernetes.io/numaNode or
// the driver's own numa as an int, a string or a version; a few GPUs without it), some GPUs held by an
// allocated claim and a few of another kind, and one or two claims, each asking for 1 to 4 GPUs of one
// class that share the attribute (matchAttribute), sometimes with a second request under the constraint
// or outside it. With the default gates (no list-type attributes) dralloc refuses a first device whose
// value has too few candidates (matchAttribute.enough); the answers must be upstream's.
func numaFamilyGen() *rapid.Generator[*fuzz.Cluster] {
	return rapid.Custom(func(t *rapid.T) *fuzz.Cluster {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
		c := &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node, Features: new(verify.DefaultFeatures())}
		kind := rapid.SampledFrom([]string{"numaNode", "int", "string", "version"}).Draw(t, "kind")
		name := resourceapi.QualifiedName("numa")
		attr := resourceapi.FullyQualifiedName(fuzz.GPUDriver + "/numa")
		if kind == "numaNode" {
			name, attr = "resource.kubernetes.io/numaNode", "resource.kubernetes.io/numaNode"
		}
		per := rapid.IntRange(1, 8).Draw(t, "perNUMA")
		s := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "gpus"},
			Spec: resourceapi.ResourceSliceSpec{Driver: fuzz.GPUDriver, NodeName: ptr.To(node.Name),
				Pool: resourceapi.ResourcePool{Name: "gpus", Generation: 1, ResourceSliceCount: 1}},
		}
		var held []resourceapi.DeviceRequestAllocationResult
		for i := range rapid.IntRange(4, 16).Draw(t, "gpus") {
			dev := fmt.Sprintf("gpu-%d", i)
			devKind := "gpu"
			if rapid.IntRange(0, 7).Draw(t, dev+"-nic") == 0 {
				devKind = "nic"
			}
			attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"kind": {StringValue: ptr.To(devKind)}}
			if rapid.IntRange(0, 9).Draw(t, dev+"-hasNuma") > 0 {
				group := i / per
				var v resourceapi.DeviceAttribute
				switch kind {
				case "string":
					v.StringValue = ptr.To(fmt.Sprintf("numa-%d", group))
				case "version":
					v.VersionValue = ptr.To(fmt.Sprintf("%d.0.0", group))
				default:
					v.IntValue = ptr.To(int64(group))
				}
				attrs[name] = v
			}
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: dev, Attributes: attrs})
			if rapid.IntRange(0, 3).Draw(t, dev+"-held") == 0 {
				held = append(held, resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: fuzz.GPUDriver, Pool: "gpus", Device: dev})
			}
		}
		c.Slices = []*resourceapi.ResourceSlice{s}
		if len(held) > 0 {
			c.Allocated = append(c.Allocated, &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held", UID: "uid-held"},
				Spec:       heldSpec(len(held), false),
				Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: held}}},
			})
		}
		for _, class := range []string{"gpu", "any"} {
			cl := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}}
			if class != "any" {
				cl.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: fmt.Sprintf(`device.attributes[%q].kind == %q`, fuzz.GPUDriver, class),
				}}}
			}
			c.Classes = append(c.Classes, cl)
		}
		for ci := range rapid.IntRange(1, 2).Draw(t, "claims") {
			claimName := fmt.Sprintf("claim-%d", ci)
			claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: claimName, UID: types.UID("uid-" + claimName)}}
			for ri := range rapid.IntRange(1, 2).Draw(t, claimName+"-requests") {
				key := fmt.Sprintf("%s-r%d", claimName, ri)
				claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, resourceapi.DeviceRequest{
					Name: fmt.Sprintf("r%d", ri),
					Exactly: &resourceapi.ExactDeviceRequest{
						DeviceClassName: rapid.SampledFrom([]string{"gpu", "any"}).Draw(t, key+"-class"),
						AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
						Count:           int64(rapid.IntRange(1, 4).Draw(t, key+"-count")),
					},
				})
			}
			con := resourceapi.DeviceConstraint{MatchAttribute: ptr.To(attr)}
			if len(claim.Spec.Devices.Requests) > 1 && rapid.Bool().Draw(t, claimName+"-first-only") {
				con.Requests = []string{"r0"}
			}
			claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{con}
			c.Claims = append(c.Claims, claim)
		}
		return c
	})
}

// TestDifferentialNUMAFamily: on the NUMA constraint family the outcome agrees with upstream, FirstFit
// picks the same devices, and a "does not fit" is confirmed by the exhaustive search when the case is
// small.
func TestDifferentialNUMAFamily(t *testing.T) {
	all := newTally()
	rapid.Check(t, func(rt *rapid.T) {
		c := numaFamilyGen().Draw(rt, "cluster")
		o, agreed := compare(rt, c)
		all.add([]string{"numa"}, o, agreed)
	})
	all.log(t)
}
