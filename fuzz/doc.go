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
// (rapid.Map) before the check. [CheckUsage] counts every device's users over a whole cluster's allocated
// claims (no device with two exclusive users, no share or counter set overdrawn), for properties of sequences
// of operations. [Cluster.Verify] checks one proposed allocation; [Cluster.Input] gives the
// verifier's view of a cluster; [Cluster.Snapshot] loads it into a dralloc allocator snapshot.
//
// # The generated schema
//
// Drawn objects use a fixed vocabulary, so that users' selectors and constraints can refer to it. Attribute
// and capacity names are bare, so that CEL reads them under the driver's domain
// (device.attributes["gpu.example.com"].model):
//
//   - Driver [GPUDriver] (gpu.example.com), one node-local pool per node named <node>-gpu with devices gpu-<i>:
//     attributes model (string, a100 or h100), numa (int, 0 or 1), healthy (bool), driverVersion (version,
//     1.2.0 or 1.3.0) and, with Options.ListAttributes, links (list of ints); capacity memory (40Gi or 80Gi).
//     With Options.Partitionable, partitions gpu-<p>-<profile> of one or two physical GPUs that consume the
//     counters memory and sms of a counter set per GPU, with the extra attribute profile (string).
//   - Driver [NICDriver] (nic.example.com): network-attached NICs (Options.NetworkAttached) with attributes
//     speed (int, 10 or 100) and zone (string, a or b) and capacity bandwidth (and cores on shareable ones);
//     with Options.ResultLimit, a node-local pool <node>-vfs of virtual functions vf-<i> (speed, zone).
//   - Nodes node-<i> with the labels kubernetes.io/hostname and [ZoneLabel] (topology.example.com/zone, a or
//     b), which network-attached pools select on.
//   - DeviceClasses [ClassGPU], [ClassA100], [ClassNIC] and [ClassAny]; claims in namespace [Namespace].
//   - Taints (Options.Taints) with the keys example.com/unhealthy and example.com/maintenance; binding
//     conditions (Options.BindingConditions) example.com/attached and example.com/attach-failed.
//
// A [Cluster] prints ([Cluster.String]) as the YAML stream of its objects, which allocator/manifest and
// kubectl read back; rapid logs failing draws in that form.
//
// Only tests import this package. It may import allocator (to load snapshots), allocator/verify, celenv and the
// Kubernetes API types; allocations are judged only by allocator/verify, which shares no code with the
// allocator's search.
package fuzz
