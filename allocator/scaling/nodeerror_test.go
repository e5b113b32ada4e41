package scaling_test

import (
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator/scaling"
)

// TestFitsTellsNodeErrorsFromBadInput: a selector that fails at run time on one node type's devices
// (the A100 profile publishes MIG devices only, which have no uuid attribute; CEL's `false || error` is
// the error, `true || error` is true) is an error of that type's nodes, as kube-scheduler's filter reports
// it for such a node; the other type still fits. The call itself must not fail, or an autoscaler would
// drop every type for one type's devices.
func TestFitsTellsNodeErrorsFromBadInput(t *testing.T) {
	c := newCluster(t, nil)
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "any.nvidia.com"}}
	class.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == 'gpu.nvidia.com'`}}}
	must(t, c.Snapshot().AddOrUpdateClass(class))
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "h100-or-uuid"}}
	tmpl.Spec.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "any.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100') || device.attributes['gpu.nvidia.com'].uuid == 'none'`}}},
	}}}
	must(t, c.AddOrUpdateTemplate(tmpl))
	p, err := scaling.New(c, dgxTypes(t), scaling.Options{})
	must(t, err)
	fits, err := p.Fits(context.Background(), []scaling.Pending{single(claimPod("picky", "h100-or-uuid"))})
	if err != nil {
		t.Fatalf("Fits failed for every type: %v", err)
	}
	a100, h100 := fits[0].Types[0], fits[0].Types[1]
	if a100.Fits || !strings.Contains(a100.Reason, "uuid") {
		t.Errorf("dgxa100: fits=%v reason %q, want no fit because the selector fails on its devices", a100.Fits, a100.Reason)
	}
	if !h100.Fits {
		t.Errorf("dgxh100: does not fit (%s)", h100.Reason)
	}
}
