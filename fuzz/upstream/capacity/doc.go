// Package capacity holds the differential tests of github.com/dralloc/dralloc/capacity against the upstream
// reference, k8s.io/dynamic-resource-allocation: the consumed capacity of a request, the per-device ledger
// of shares and the shared counters of partitionable devices are compared with what the upstream structured
// allocator decides on a one-device (or one-free-device) pool. The package has no code of its own; everything
// is in its tests.
//
// Imports (tests only): the upstream module, and of dralloc capacity and allocator/gates.
package capacity
