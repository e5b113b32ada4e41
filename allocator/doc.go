// Package allocator decides which devices the claims of a pod get on a node, as the Kubernetes 1.37
// scheduler does for Dynamic Resource Allocation (resource.k8s.io/v1).
//
// The work is split in two, as cel-go splits compiling from evaluating:
//
//   - A [Snapshot] holds the cluster: ResourceSlices, DeviceClasses, ResourceClaims (those with an
//     allocation make up the allocated state: devices in exclusive use, shares of devices with
//     allowMultipleAllocations and their consumed capacity), DeviceTaintRules and Nodes. Every object is
//     prepared when it is added or changed: devices are converted once into prepared CEL views, their
//     effective taints are computed, and indexes (slices per node, network-attached slices, slices per
//     pool and generation) are kept up to date. [Snapshot.Fork] gives a cheap copy for what-if questions
//     that can be committed back or thrown away.
//   - [Snapshot.Allocate] answers one question for one node: can these claims be allocated here, and
//     with which devices. It returns one resourceapi.AllocationResult per claim, an error wrapping
//     [ErrUnsatisfiable] (as *[UnsatisfiableError]) when they do not fit, or an error wrapping
//     [ErrInvalidInput] (as *[InputError]) naming the object and field when the input is one that
//     Kubernetes would refuse to allocate at all.
//
// The default strategy, [FirstFit], visits pools, slices and devices in the order the Kubernetes
// allocator (k8s.io/dynamic-resource-allocation/structured) visits them and therefore picks the same
// devices. Feature gates are one [Features] value with the Kubernetes gate names; the zero [Options] use
// the gates Kubernetes 1.37 enables by default.
//
// A Snapshot is safe for concurrent use: many goroutines may call Allocate at the same time (a scheduler
// filters nodes in parallel) while updates wait for them. Inputs are never mutated: objects handed to a
// Snapshot are copied, and results share no memory with the snapshot.
//
// Imports: celenv (CEL selectors), capacity (consumable capacity and shared counters), taints (device
// taints and tolerations), k8s.io/api, k8s.io/apimachinery and k8s.io/component-helpers (node selector
// matching). Nothing in dralloc imports allocator's internals.
package allocator
