// Package taints is device taints end to end, as Kubernetes 1.37 Dynamic Resource Allocation applies them:
// the effective taints of a device (its own, from the ResourceSlice, plus those of every matching
// DeviceTaintRule), toleration matching, which taints block allocation, which allocated claims and pods the
// device taint eviction controller evicts and when, the None effect as a channel for device conditions, and
// validation of taints and rules against the API limits.
//
// The package may import the Kubernetes API types (k8s.io/api, k8s.io/apimachinery), the standard library,
// and github.com/dralloc/dralloc/celenv, which evaluates the CEL selectors of DeviceClasses for the
// class-based rule extension ([ExpandClass]).
//
// Main types and functions:
//
//   - [ToleratesTaint], [Tolerated], [Blocking]: toleration matching and the allocation check of the scheduler.
//   - [ExpandClass]: the SDK extension that taints every device of a DeviceClass with per-device rules.
//   - [Evaluator]: DeviceTaintRules compiled once ([NewEvaluator]); [Evaluator.Taints] gives a device's
//     effective taints, [Evaluator.Plan] the eviction plan for allocated claims.
//   - [Plan], [Eviction]: who is evicted now, who later and when, and the DeviceTaintRule status a
//     controller would write.
//   - [Evaluator.Conditions], [Escalate]: None taints as device conditions, and the rules that escalate them to
//     NoSchedule or NoExecute.
//   - [ValidateTaint], [ValidateTaints], [ValidateToleration], [ValidateRule]: API-limit validation that
//     names the field.
//
// The rules are prepared once and then looked up per device, in the rhythm of the rest of dralloc: building
// an [Evaluator] pays for indexing, [Evaluator.Taints] is cheap and does not allocate when no rule matches.
package taints
