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

// adminTwinsGen draws searches where devices that look alike differ in their state of use: one node, two to
// five devices of one or two models, in one slice, two slices of one pool or two pools (so that equal devices
// are twins of a slice or only equal by every verdict), some held by allocated claims (exclusively, or with
// admin access, which holds nothing), and two to four claims of one or two requests, some with admin access
// (which may take a held device, or one another claim of the call takes) and some constrained to one model.
func adminTwinsGen() *rapid.Generator[*fuzz.Cluster] {
	return rapid.Custom(func(t *rapid.T) *fuzz.Cluster {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
		c := &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node, Features: new(verify.AllFeatures())}
		layout := rapid.SampledFrom([]string{"one slice", "two slices", "two pools"}).Draw(t, "layout")
		n := rapid.IntRange(2, 5).Draw(t, "devices")
		models := rapid.IntRange(1, 2).Draw(t, "models")
		slices := map[string]*resourceapi.ResourceSlice{}
		var order []string
		var held, adminHeld []resourceapi.DeviceRequestAllocationResult
		for i := range n {
			pool, name := "pool-0", "slice-0"
			if layout != "one slice" && i >= n/2 {
				name = "slice-1"
				if layout == "two pools" {
					pool = "pool-1"
				}
			}
			s := slices[name]
			if s == nil {
				s = &resourceapi.ResourceSlice{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: resourceapi.ResourceSliceSpec{Driver: fuzz.GPUDriver, NodeName: ptr.To(node.Name),
						Pool: resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1}},
				}
				slices[name] = s
				order = append(order, name)
			}
			model := fmt.Sprintf("m%d", rapid.IntRange(0, models-1).Draw(t, fmt.Sprintf("model%d", i)))
			dev := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"model": {StringValue: ptr.To(model)},
			}}
			s.Spec.Devices = append(s.Spec.Devices, dev)
			r := resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: fuzz.GPUDriver, Pool: pool, Device: dev.Name}
			switch rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("held%d", i)) {
			case 0:
				held = append(held, r)
			case 1:
				r.AdminAccess = ptr.To(true)
				adminHeld = append(adminHeld, r)
			}
		}
		if layout == "two slices" && len(order) == 2 {
			for _, name := range order {
				slices[name].Spec.Pool.ResourceSliceCount = 2
			}
		}
		for _, name := range order {
			c.Slices = append(c.Slices, slices[name])
		}
		for i, results := range [][]resourceapi.DeviceRequestAllocationResult{held, adminHeld} {
			if len(results) == 0 {
				continue
			}
			name := fmt.Sprintf("held-%d", i)
			c.Allocated = append(c.Allocated, &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
				Spec:       heldSpec(len(results), i == 1),
				Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}},
			})
		}
		c.Classes = append(c.Classes, &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: fuzz.ClassGPU},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == %q", fuzz.GPUDriver),
			}}}},
		})
		for ci := range rapid.IntRange(2, 4).Draw(t, "claims") {
			name := fmt.Sprintf("claim-%d", ci)
			claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
			for ri := range rapid.IntRange(1, 2).Draw(t, name+"-requests") {
				req := &resourceapi.ExactDeviceRequest{
					DeviceClassName: fuzz.ClassGPU,
					AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
					Count:           int64(rapid.IntRange(1, 2).Draw(t, fmt.Sprintf("%s-count%d", name, ri))),
				}
				if rapid.Bool().Draw(t, fmt.Sprintf("%s-admin%d", name, ri)) {
					req.AdminAccess = ptr.To(true)
				}
				if models > 1 && rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("%s-selects%d", name, ri)) == 0 {
					req.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
						Expression: fmt.Sprintf(`device.attributes[%q].model == "m0"`, fuzz.GPUDriver),
					}}}
				}
				claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", ri), Exactly: req})
			}
			if models > 1 && rapid.IntRange(0, 2).Draw(t, name+"-match") == 0 {
				claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{
					MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(fuzz.GPUDriver + "/model")),
				}}
			}
			c.Claims = append(c.Claims, claim)
		}
		return c
	})
}

// TestDifferentialAdminAccessTwins: where devices that look alike differ in their state of use (held or
// not, taken by a claim of the call or not) and requests with and without admin access compete for them,
// the outcome agrees with upstream, FirstFit picks the same devices, and a "does not fit" is confirmed by
// the exhaustive search when the case is small.
func TestDifferentialAdminAccessTwins(t *testing.T) {
	all := newTally()
	rapid.Check(t, func(rt *rapid.T) {
		c := adminTwinsGen().Draw(rt, "cluster")
		o, agreed := compare(rt, c)
		all.add([]string{"admin access twins"}, o, agreed)
	})
	all.log(t)
}

// heldSpec is the spec of a claim holding n GPUs through its request "r", as the results of the held
// claims name it: an allocated claim is validated like any other.
func heldSpec(n int, admin bool) resourceapi.ResourceClaimSpec {
	r := resourceapi.DeviceRequest{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: fuzz.ClassGPU, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(n)}}
	if admin {
		r.Exactly.AdminAccess = ptr.To(true)
	}
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{r}}}
}
