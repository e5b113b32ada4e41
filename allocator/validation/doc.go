// Package validation checks resource.k8s.io/v1 objects the way kube-apiserver 1.37 validates them when
// they are created, for objects that did not come through an API server: kubectl YAML and JSON, objects
// built in Go, test fixtures. There is one function per kind:
//
//   - [ResourceSlice]: names, pool, node selection, the per-slice limits (devices, attributes and
//     capacities per device, taints, counter sets and counters), attribute values, capacity request
//     policies, counter consumption, binding conditions.
//   - [DeviceClass]: selectors (CEL compile errors and estimated cost), config, extended resource name.
//   - [ResourceClaim]: spec.devices (requests, subrequests, counts and allocation modes, selectors,
//     tolerations, constraints, config), status.allocation when it is set, and status.devices
//     ([DeviceStatuses], what drivers write).
//   - [ResourceClaimTemplate]: the template's metadata and its claim spec.
//   - [DeviceTaintRule]: the device selector and the taint.
//
// Each returns a field.ErrorList (k8s.io/apimachinery/pkg/util/validation/field) whose paths are those the
// API server reports ("spec.devices.requests[0].exactly.count"); an empty list means valid. The rules follow
// kubernetes/kubernetes pkg/apis/resource/validation/validation.go at v1.37 and the declarative limits of
// k8s.io/api/resource/v1 (the +k8s:maxItems tags and the *MaxSize constants). Where the handwritten
// validation stops at a size limit (a list with too many entries is reported once, its entries not
// validated), so does this package.
//
// Deliberately stricter than the API server, because these inputs make allocation wrong or unbounded:
// quantities outside [capacity.ValidateQuantity] (such as 1E100000000, which the API server stores but on
// which any arithmetic runs for minutes), negative capacity values and negative counters; and attribute and
// capacity names with more than one slash, which the 1.37 API server still stores (its validation has a TODO to
// refuse them) and no CEL expression can address as a domain and a name. What needs the
// whole pool (counter sets that devices consume, device names unique across slices) cannot be checked on
// one slice; inventory.ValidatePool and the allocator's pool checks do that.
//
// What the API server decides from state it alone has is not checked: immutability on update, ratcheting
// of stored objects, feature gates that drop disabled fields, admission. Expressions are validated as new
// expressions (the API server's environment for objects being created).
//
// Imports: k8s.io/api, k8s.io/apimachinery, and of this module only the leaves celenv (to compile and
// price CEL selectors) and capacity (the quantity bounds). It imports nothing of allocator, so inventory
// and the allocator can both use it.
package validation
