// Package fuzz generates valid Dynamic Resource Allocation objects and whole clusters for property tests, and
// checks allocation results against the independent verifier in allocator/verify.
//
// The generators use pgregory.net/rapid. [ClusterGen] draws a [Cluster]: nodes, ResourceSlices (node-local,
// network-attached and per-device node selection pools, partitionable devices with shared counters and
// compatibility groups, shareable devices with consumable capacity, taints, binding conditions), DeviceClasses,
// DeviceTaintRules, claims that are already allocated, and pending claims (ExactCount and All requests,
// firstAvailable alternatives, constraints, admin access, tolerations, capacity requests, configuration).
// [Options] chooses which of these features appear, so a test can focus on one feature or combine all of them.
// Every object is valid as the Kubernetes API server would accept it.
//
// [CheckAllocations] runs an allocator (an [AllocateFunc]: given a drawn cluster, allocate its pending claims on its
// node) on generated clusters and fails the test when the cluster is mutated or a result does not pass
// allocator/verify. Users' CI can call it with their own classes and drivers by mapping the drawn clusters
// (rapid.Map) before the check. [Cluster.Verify] checks one proposed allocation; [Cluster.Input] gives the
// verifier's view of a cluster; [Cluster.Snapshot] loads it into a dralloc allocator snapshot.
//
// Only tests import this package. It may import allocator (to load snapshots), allocator/verify, celenv and the
// Kubernetes API types; allocations are judged only by allocator/verify, which shares no code with the
// allocator's search.
package fuzz
