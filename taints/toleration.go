package taints

import (
	resourceapi "k8s.io/api/resource/v1"
)

// ToleratesTaint reports whether a toleration tolerates a taint, exactly as Kubernetes matches them
// (resourceclaim.ToleratesTaint):
//
//   - an empty toleration effect matches every effect, otherwise the effects must be equal;
//   - an empty toleration key matches every key (API validation requires operator Exists with it), otherwise
//     the keys must be equal;
//   - operator Equal, or empty as before defaulting, requires equal values; Exists matches every value;
//     an unknown operator tolerates nothing.
//
// TolerationSeconds plays no part here: it only delays eviction for NoExecute (see [Evaluator.Plan]).
func ToleratesTaint(tol resourceapi.DeviceToleration, taint resourceapi.DeviceTaint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case "", resourceapi.DeviceTolerationOpEqual:
		return tol.Value == taint.Value
	case resourceapi.DeviceTolerationOpExists:
		return true
	}
	return false
}

// Tolerated reports whether any of the tolerations tolerates the taint.
func Tolerated(taint resourceapi.DeviceTaint, tolerations []resourceapi.DeviceToleration) bool {
	for _, tol := range tolerations {
		if ToleratesTaint(tol, taint) {
			return true
		}
	}
	return false
}

// Blocking returns the first taint that prevents allocating a device to a request with the given
// tolerations, and true; or false when the device may be allocated. As the Kubernetes allocator, only
// NoSchedule and NoExecute taints block: None and effects unknown to this version are informational.
func Blocking(taints []resourceapi.DeviceTaint, tolerations []resourceapi.DeviceToleration) (resourceapi.DeviceTaint, bool) {
	for _, t := range taints {
		switch t.Effect {
		case resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute:
			if !Tolerated(t, tolerations) {
				return t, true
			}
		}
	}
	return resourceapi.DeviceTaint{}, false
}
