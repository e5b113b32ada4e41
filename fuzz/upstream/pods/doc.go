// Package pods holds the differential tests of github.com/dralloc/dralloc/allocator/pods against the
// upstream reference, k8s.io/dynamic-resource-allocation v0.37.2:
//
//   - the claims of a pod (pods.Cluster.PodClaims: resourceClaimName, templates through
//     pod.status.resourceClaimStatuses, PodGroup claims) and the consumer it reserves them for, against
//     the helpers of k8s.io/dynamic-resource-allocation/resourceclaim (Name, NameFromPodGroup, IsForPod,
//     IsForPodGroup, IsReservedForPod, BindTo) on generated pods, claims and PodGroups;
//   - the placement of pods.Cluster.Place (FirstFit) against the upstream allocator
//     (structured.NewAllocator + Allocate) run node by node: the node chosen is the first node by name
//     where upstream's allocator fits the pod's claims, and the devices are the ones it picks there.
//
// The package has no code of its own.
//
// Imports (tests only): the upstream module, fuzz/upstream/reference, and of dralloc allocator, allocator/pods,
// allocator/verify and fuzz.
package pods
