// Package reference hands dralloc's inputs to the upstream allocator (k8s.io/dynamic-resource-allocation/structured)
// as kube-scheduler does, for the differential tests of this module: the DeviceClass lister, the allocated
// state gathered from claims, the slices with their DeviceTaintRules applied, the feature gates, and results
// with share IDs normalized for comparison.
//
// Imports: the upstream module, k8s.io/api, apimachinery, utils and, of dralloc, allocator/verify (for the
// gate names). Only this module's tests use it.
package reference
