package claim

import (
	"errors"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Decision is what the scheduler does with a pod whose claims are allocated
// and reserved for it, at PreBind.
type Decision string

const (
	// Bind: every binding condition is met (or none is asked for); the pod
	// is bound to the node.
	Bind Decision = "Bind"
	// Wait: some binding condition is not met yet; the scheduler keeps
	// polling the claims.
	Wait Decision = "Wait"
	// Reschedule: a binding failure condition is True or the binding timeout
	// passed; PreBind fails, the scheduler unreserves the claims and the pod
	// goes back to the scheduling queue.
	Reschedule Decision = "Reschedule"
)

// DefaultBindingTimeout is how long after a claim's allocation the scheduler
// waits for its binding conditions (kube-scheduler's
// BindingTimeoutDefaultSeconds, 600).
const DefaultBindingTimeout = 600 * time.Second

// BindingOptions say how the scheduler is configured. The zero value is the
// scheduler of Kubernetes 1.37 with its default timeout.
type BindingOptions struct {
	// Timeout is the binding timeout; zero means DefaultBindingTimeout.
	Timeout time.Duration
	// Disabled says that the feature gate DRADeviceBindingConditions or
	// DRAResourceClaimDeviceStatus is off: the scheduler then binds without
	// looking at binding conditions.
	Disabled bool
}

// BindingVerdict is CheckBinding's answer.
type BindingVerdict struct {
	// Decision is what the scheduler does.
	Decision Decision
	// Claim is the claim that decided, "<namespace>/<name>"; empty for Bind.
	Claim string
	// Reason says why, naming the device and condition for Wait and
	// Reschedule.
	Reason string
}

// ErrInvalidClaim is wrapped by errors for a claim that cannot be judged or
// used: nil, not allocated, or with an invalid status.
var ErrInvalidClaim = errors.New("invalid claim")

// CheckBinding decides, at now, what kube-scheduler's dynamicresources
// plugin does in PreBind with a pod whose claims (in the pod's order) are
// allocated and reserved, as its isPodReadyForBinding, isClaimReadyForBinding
// and isClaimTimeout do:
//
//   - without binding conditions on any allocated device, the pod binds;
//   - claims are looked at in order; for each allocated device with binding
//     conditions, the status entry of the same driver, pool and device is
//     read: none yet means not ready; a binding failure condition that is
//     True means Reschedule; a binding condition that is not True means not
//     ready;
//   - the first claim that is not ready decides: Reschedule when its
//     allocation timestamp is more than the timeout ago (and some device of
//     it has binding conditions), Wait otherwise;
//   - when all are ready, the pod binds.
//
// The scheduler also gives up on its own once it has polled for the timeout;
// that clock starts in PreBind and is the caller's to keep.
func CheckBinding(claims []*resourceapi.ResourceClaim, now time.Time, opts BindingOptions) (BindingVerdict, error) {
	for i, c := range claims {
		if c == nil {
			return BindingVerdict{}, fmt.Errorf("%w: claims[%d]: must not be nil", ErrInvalidClaim, i)
		}
		if c.Status.Allocation == nil {
			return BindingVerdict{}, fmt.Errorf("%w: ResourceClaim %s: %w", ErrInvalidClaim, claimName(c),
				field.Required(field.NewPath("status", "allocation"), "the claim must be allocated before binding"))
		}
	}
	if opts.Disabled || !anyBindingConditions(claims) {
		return BindingVerdict{Decision: Bind}, nil
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultBindingTimeout
	}
	for _, c := range claims {
		ready, failed, reason := readyForBinding(c)
		if failed {
			return BindingVerdict{Decision: Reschedule, Claim: claimName(c), Reason: reason}, nil
		}
		if ready {
			continue
		}
		if timedOut(c, now, timeout) {
			return BindingVerdict{Decision: Reschedule, Claim: claimName(c),
				Reason: fmt.Sprintf("binding timeout: allocated at %s, more than %s ago; %s",
					c.Status.Allocation.AllocationTimestamp.UTC().Format(time.RFC3339), timeout, reason)}, nil
		}
		return BindingVerdict{Decision: Wait, Claim: claimName(c), Reason: reason}, nil
	}
	return BindingVerdict{Decision: Bind}, nil
}

func anyBindingConditions(claims []*resourceapi.ResourceClaim) bool {
	for _, c := range claims {
		for _, r := range c.Status.Allocation.Devices.Results {
			if len(r.BindingConditions) > 0 {
				return true
			}
		}
	}
	return false
}

// readyForBinding is isClaimReadyForBinding: whether every device with
// binding conditions has them all True, whether a failure condition is True
// (checked per device before its binding conditions), and a reason for what
// is not ready or failed.
func readyForBinding(c *resourceapi.ResourceClaim) (ready, failed bool, reason string) {
	for _, r := range c.Status.Allocation.Devices.Results {
		if len(r.BindingConditions) == 0 {
			continue
		}
		dev := fmt.Sprintf("device %s/%s/%s", r.Driver, r.Pool, r.Device)
		st := statusFor(c, r)
		if st == nil {
			return false, false, dev + ": no status reported yet"
		}
		for _, t := range r.BindingFailureConditions {
			if cond := apimeta.FindStatusCondition(st.Conditions, t); cond != nil && cond.Status == metav1.ConditionTrue {
				return false, true, fmt.Sprintf("%s: binding failed: condition %s is True: reason=%s, message=%q", dev, t, cond.Reason, cond.Message)
			}
		}
		for _, t := range r.BindingConditions {
			if !apimeta.IsStatusConditionTrue(st.Conditions, t) {
				return false, false, fmt.Sprintf("%s: condition %s is not True yet", dev, t)
			}
		}
	}
	return true, false, ""
}

// statusFor is the status entry of the result's device. As the scheduler's
// getAllocatedDeviceStatus, it matches driver, pool and device and not the
// share ID.
func statusFor(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult) *resourceapi.AllocatedDeviceStatus {
	for i := range c.Status.Devices {
		d := &c.Status.Devices[i]
		if d.Driver == r.Driver && d.Pool == r.Pool && d.Device == r.Device {
			return d
		}
	}
	return nil
}

// timedOut is isClaimTimeout: the allocation timestamp plus the timeout lies
// before now, and some result has binding conditions (a nil list counts as
// none, an empty one does not, as there).
func timedOut(c *resourceapi.ResourceClaim, now time.Time, timeout time.Duration) bool {
	ts := c.Status.Allocation.AllocationTimestamp
	if ts == nil {
		return false
	}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.BindingConditions != nil && ts.Add(timeout).Before(now) {
			return true
		}
	}
	return false
}

func claimName(c *resourceapi.ResourceClaim) string {
	return c.Namespace + "/" + c.Name
}
