package claim_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/inventory/claim"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// result is a device of driver gpu.example.com in pool node-a.
func result(request, device string, conds, failures []string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: request, Driver: "gpu.example.com", Pool: "node-a", Device: device,
		BindingConditions: conds, BindingFailureConditions: failures}
}

func allocated(name string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices:             resourceapi.DeviceAllocationResult{Results: results},
			AllocationTimestamp: &metav1.Time{Time: t0},
		}},
	}
}

// withStatus adds a status entry for device with the given conditions.
func withStatus(c *resourceapi.ResourceClaim, device string, conds ...metav1.Condition) *resourceapi.ResourceClaim {
	c = c.DeepCopy()
	c.Status.Devices = append(c.Status.Devices, resourceapi.AllocatedDeviceStatus{Driver: "gpu.example.com", Pool: "node-a", Device: device, Conditions: conds})
	return c
}

func cond(typ string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: "Test", Message: "from the test", LastTransitionTime: metav1.Time{Time: t0}}
}

func TestCheckBinding(t *testing.T) {
	attached := []string{"Attached"}
	failed := []string{"AttachFailed"}
	fabric := result("gpu", "dev-0", attached, failed)
	for _, tc := range []struct {
		name   string
		claims []*resourceapi.ResourceClaim
		now    time.Time
		opts   claim.BindingOptions
		want   claim.Decision
		reason string
	}{
		{"devices without binding conditions bind at once",
			[]*resourceapi.ResourceClaim{allocated("plain", result("gpu", "dev-0", nil, nil))}, t0, claim.BindingOptions{}, claim.Bind, ""},
		{"with the feature gates off the scheduler binds without looking",
			[]*resourceapi.ResourceClaim{allocated("c", fabric)}, t0, claim.BindingOptions{Disabled: true}, claim.Bind, ""},
		{"a device without a status entry yet waits",
			[]*resourceapi.ResourceClaim{allocated("c", fabric)}, t0, claim.BindingOptions{}, claim.Wait, "device gpu.example.com/node-a/dev-0: no status reported yet"},
		{"a binding condition that is False waits",
			[]*resourceapi.ResourceClaim{withStatus(allocated("c", fabric), "dev-0", cond("Attached", metav1.ConditionFalse))}, t0, claim.BindingOptions{}, claim.Wait, "condition Attached is not True yet"},
		{"all binding conditions True bind",
			[]*resourceapi.ResourceClaim{withStatus(allocated("c", fabric), "dev-0", cond("Attached", metav1.ConditionTrue))}, t0, claim.BindingOptions{}, claim.Bind, ""},
		{"a binding failure condition True reschedules, even with the binding condition True",
			[]*resourceapi.ResourceClaim{withStatus(allocated("c", fabric), "dev-0", cond("Attached", metav1.ConditionTrue), cond("AttachFailed", metav1.ConditionTrue))}, t0, claim.BindingOptions{},
			claim.Reschedule, `binding failed: condition AttachFailed is True: reason=Test, message="from the test"`},
		{"a failure on a later device is not looked at while an earlier one is not ready, as in the scheduler",
			[]*resourceapi.ResourceClaim{withStatus(allocated("c", fabric, result("gpu", "dev-1", attached, failed)), "dev-1", cond("AttachFailed", metav1.ConditionTrue))}, t0, claim.BindingOptions{},
			claim.Wait, "dev-0: no status reported yet"},
		{"a claim allocated more than the timeout ago reschedules",
			[]*resourceapi.ResourceClaim{allocated("c", fabric)}, t0.Add(claim.DefaultBindingTimeout + time.Second), claim.BindingOptions{}, claim.Reschedule, "binding timeout"},
		{"exactly at the timeout it still waits",
			[]*resourceapi.ResourceClaim{allocated("c", fabric)}, t0.Add(claim.DefaultBindingTimeout), claim.BindingOptions{}, claim.Wait, ""},
		{"a shorter configured timeout reschedules sooner",
			[]*resourceapi.ResourceClaim{allocated("c", fabric)}, t0.Add(2 * time.Minute), claim.BindingOptions{Timeout: time.Minute}, claim.Reschedule, "more than 1m0s ago"},
		{"the first claim that is not ready decides",
			[]*resourceapi.ResourceClaim{withStatus(allocated("ready", fabric), "dev-0", cond("Attached", metav1.ConditionTrue)), allocated("pending", fabric)}, t0, claim.BindingOptions{},
			claim.Wait, "dev-0: no status reported yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := make([]*resourceapi.ResourceClaim, len(tc.claims))
			for i, c := range tc.claims {
				before[i] = c.DeepCopy()
			}
			v, err := claim.CheckBinding(tc.claims, tc.now, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if v.Decision != tc.want || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("verdict = %+v, want %s with reason containing %q", v, tc.want, tc.reason)
			}
			if tc.want == claim.Wait && tc.name == "the first claim that is not ready decides" && v.Claim != "default/pending" {
				t.Errorf("claim = %q, want default/pending", v.Claim)
			}
			for i := range before {
				if before[i].String() != tc.claims[i].String() {
					t.Error("input claim was modified")
				}
			}
		})
	}
}

func TestCheckBindingMatchesStatusByDeviceNotShare(t *testing.T) {
	r := result("gpu", "dev-0", []string{"Attached"}, []string{"AttachFailed"})
	r.ShareID = ptr.To(types.UID("8f4c1b0e-0000-4000-8000-000000000001"))
	c := withStatus(allocated("c", r), "dev-0", cond("Attached", metav1.ConditionTrue))
	if v, err := claim.CheckBinding([]*resourceapi.ResourceClaim{c}, t0, claim.BindingOptions{}); err != nil || v.Decision != claim.Bind {
		t.Errorf("verdict = %+v, %v; want Bind: the scheduler matches driver, pool and device only", v, err)
	}
}

func TestCheckBindingRejectsClaimsThatAreNotAllocated(t *testing.T) {
	c := allocated("c")
	c.Status.Allocation = nil
	_, err := claim.CheckBinding([]*resourceapi.ResourceClaim{c}, t0, claim.BindingOptions{})
	if !errors.Is(err, claim.ErrInvalidClaim) || !strings.Contains(err.Error(), "ResourceClaim default/c: status.allocation: Required value") {
		t.Errorf("err = %v", err)
	}
	if _, err := claim.CheckBinding([]*resourceapi.ResourceClaim{nil}, t0, claim.BindingOptions{}); !errors.Is(err, claim.ErrInvalidClaim) {
		t.Errorf("nil claim: err = %v", err)
	}
}
