// Package scheduler compares github.com/dralloc/dralloc/allocator/pods with the real kube-scheduler and
// kube-controller-manager v1.37.2: the oracle for what Kubernetes decides about pods. The tests build the
// three commands from the Go module proxy (scripts/kube-apiserver build), run kube-apiserver with etcd,
// kube-scheduler with every feature gate the API server has (the DRA ones, GenericWorkload and
// DRAWorkloadResourceClaims among them) and kube-controller-manager with the resourceclaim,
// device-taint-eviction and podgroup-protection controllers, all on loopback, once per test binary.
// Nodes are plain API objects with status.allocatable and no kubelet; the API server runs without the
// TaintNodesByCondition admission plugin, since no kubelet would ever lift its not-ready taint.
//
// Each scenario (hand-written ones, and clusters drawn by fuzz.ClusterGen from fixed seeds, with pods made
// from their pending claims, every other one a cluster where dralloc places a pod) creates its nodes, ResourceSlices, DeviceClasses, DeviceTaintRules, templates and claims, then its
// pods one by one: each pod is created through the API and awaited until kube-scheduler binds it or marks it
// unschedulable, and the same pod is placed by a pods.Cluster holding the same objects: the pod as written,
// read by allocator/manifest (with the scenario's RuntimeClasses), which promises the pod as the API server
// stores it, defaults and admission included. Per pod the tests compare:
//
//   - what the scheduler reads of the pod (scheduler name, overhead, pod-level and containers' resources,
//     ports, node selector, tolerations) as allocator/manifest reads it and as the API server stored it;
//   - scheduled against pending, and an error against an error: for some inputs (a request for all devices
//     of a pool that is being updated, a device of an allocationMode All request that a claim constraint
//     refuses) the upstream allocator fails the whole attempt, and kube-scheduler keeps the pod with reason
//     SchedulerError;
//   - the node: kube-scheduler breaks score ties at random, so dralloc must find the scheduler's node
//     feasible (it is placed again with a predicate restricted to that node), not choose the same one;
//   - the devices: the same as the scheduler's (both run the upstream search order), else dralloc's must pass
//     allocator/verify;
//   - every claim's shape (generated name form, labels, annotations, owner references, finalizers, spec,
//     reservedFor, the allocation's node selector) and the pod's status.resourceClaimStatuses and
//     status.extendedResourceClaimStatus.
//
// Admission scenarios (admission_test.go) make the placement depend on what the API server does to a pod
// before the scheduler sees it: a RuntimeClass's overhead and scheduling, pod-level limits, host ports on the
// host's network.
//
// The dra-example-driver demos (allocator/manifest/testdata/demo, on the driver's demo cluster of
// allocator/pods/testdata) run the same way; demos_test.go says which are left out and why. Gangs (PodGroups
// with the gang policy, some with a topology constraint on a node label; TopologyAwareWorkloadScheduling is
// on with AllAlpha) create all pods of a group at once and compare the pods kube-scheduler binds, the label
// value their nodes share and the number of devices allocated with pods.Cluster.PlaceGroup (kube-scheduler's
// one pass without backtracking), and for a gang both leave pending the GangScheduling reason the pods
// carry; pods.Cluster.SearchGroupPlacement must find a placement wherever the pass does, and finds one
// for a gang the pass misses (gang_test.go's onePassScenario).
//
// TestSchedulerScores compares pods.Scheduler, the choice that scores nodes as kube-scheduler's default
// profile does, on drawn clusters of 3 to 6 nodes of different sizes, labels, PreferNoSchedule taints,
// images and bound pods, where every pod fits on several nodes: pod by pod, the node kube-scheduler
// binds the pod to must be one of Placement.Best.
//
// After each pod the pods.Cluster takes the API server's claims, so that each pod is compared from the same
// state. Differences that are known and have a reason are listed in knownDifferences; every other
// difference fails the test. The counts per category are logged.
//
// The package holds tests only. They skip, saying why, when the commands cannot be built (or
// DRALLOC_APISERVER=skip); a control plane that was built but does not start fails them.
//
// Imports (tests only): client-go, and of dralloc allocator, allocator/manifest, allocator/pods,
// allocator/verify and fuzz.
package scheduler
