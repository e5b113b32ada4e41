// Package verify checks Dynamic Resource Allocation results independently of whoever produced them.
//
// Given the state of a cluster (ResourceSlices, DeviceClasses, claims that are already allocated,
// DeviceTaintRules, the node and the feature gates) and a set of claims with proposed AllocationResults, [Check]
// lists every rule of Kubernetes 1.37 (resource.k8s.io/v1) that the results break: a device the class or request
// selectors reject, a device already in use or shared beyond its capacity, overdrawn shared counters or
// incompatible compatibility groups, a broken matchAttribute or distinctAttribute constraint, an untolerated
// taint, a device the node cannot reach, the wrong number of devices for ExactCount, All or firstAvailable, admin
// access, tolerations, binding conditions, configuration or node selector that differ from what Kubernetes writes.
// Each [Violation] names the claim, the request, the device and the [Rule].
//
// It is the oracle of dralloc's own tests, and a product in its own right: an admission webhook or an auditor can
// verify allocations written by any scheduler or controller before trusting them.
//
// verify deliberately shares no search code with package allocator: it never searches, it only checks one
// proposed answer, rule by rule, from the API's definitions. It may import celenv (CEL), capacity (the arithmetic
// of consumable capacity), taints (effective taints and tolerations), allocator/gates (the feature gates) and the
// Kubernetes API types.
//
// Main types: [Input] (the cluster state), [Features] (the feature gates: gates.Features, the same type as
// allocator.Features), [DeviceID] (taints.DeviceID, the same type as allocator.DeviceID), [Violation] and [Rule].
package verify
