package allocator_test

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Builders for the requeue tests. They are prefixed with rq to stay apart from the other tests' helpers.

const rqDriver = "gpu.example.com"

func rqClass(name, expr string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if expr != "" {
		c.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}
	}
	return c
}

// rqGPU is a device with a model attribute and a memory capacity in Gi.
func rqGPU(name, model string, memGi int64) resourceapi.Device {
	return resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"model": {StringValue: &model},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: *resource.NewQuantity(memGi<<30, resource.BinarySI)},
		},
	}
}

// rqSlice is the only slice of the pool named after its node.
func rqSlice(node string, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   rqDriver,
			Pool:     resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
			NodeName: &node,
			Devices:  devices,
		},
	}
}

// rqRequest is one request; exprs are its selectors.
type rqRequest struct {
	name, class string
	count       int64
	all, admin  bool
	exprs       []string
	// alternatives turn the request into a firstAvailable list of these subrequests.
	alternatives []rqRequest
}

func rqSelectors(exprs []string) []resourceapi.DeviceSelector {
	var out []resourceapi.DeviceSelector
	for _, e := range exprs {
		out = append(out, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return out
}

func rqExact(q rqRequest) *resourceapi.ExactDeviceRequest {
	ex := &resourceapi.ExactDeviceRequest{DeviceClassName: q.class, Selectors: rqSelectors(q.exprs)}
	if q.all {
		ex.AllocationMode = resourceapi.DeviceAllocationModeAll
	} else {
		ex.AllocationMode = resourceapi.DeviceAllocationModeExactCount
		ex.Count = max(q.count, 1)
	}
	if q.admin {
		t := true
		ex.AdminAccess = &t
	}
	return ex
}

func rqClaim(namespace, name string, reqs ...rqRequest) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(namespace + "-" + name)}}
	for i, q := range reqs {
		if q.name == "" {
			q.name = fmt.Sprintf("r%d", i)
		}
		dr := resourceapi.DeviceRequest{Name: q.name}
		if len(q.alternatives) > 0 {
			for j, a := range q.alternatives {
				ex := rqExact(a)
				dr.FirstAvailable = append(dr.FirstAvailable, resourceapi.DeviceSubRequest{
					Name: fmt.Sprintf("s%d", j), DeviceClassName: ex.DeviceClassName, Selectors: ex.Selectors,
					AllocationMode: ex.AllocationMode, Count: ex.Count,
				})
			}
		} else {
			dr.Exactly = rqExact(q)
		}
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, dr)
	}
	return c
}

// rqAllocated is a claim holding the given devices of pool (one result per device, request "r0").
func rqAllocated(name, pool string, admin bool, devices ...string) *resourceapi.ResourceClaim {
	c := rqClaim("default", name, rqRequest{class: "gpu", count: int64(len(devices)), admin: admin})
	alloc := &resourceapi.AllocationResult{}
	for _, d := range devices {
		res := resourceapi.DeviceRequestAllocationResult{Request: "r0", Driver: rqDriver, Pool: pool, Device: d}
		if admin {
			t := true
			res.AdminAccess = &t
		}
		alloc.Devices.Results = append(alloc.Devices.Results, res)
	}
	c.Status.Allocation = alloc
	return c
}

func rqNames(keys []types.NamespacedName) []string {
	out := []string{}
	for _, k := range keys {
		out = append(out, k.String())
	}
	return out
}
