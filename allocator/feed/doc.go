// Package feed keeps a [pods.Cluster], and the [allocator.Snapshot] under it, in step with a live
// cluster's shared informers, without importing client-go.
//
// A [Feed] has client-go's ResourceEventHandler method set (OnAdd, OnUpdate, OnDelete), so one Feed is
// registered as the event handler of every informer dralloc reads: ResourceSlices, DeviceClasses,
// ResourceClaims, ResourceClaimTemplates and DeviceTaintRules (resource.k8s.io/v1), PodGroups
// (scheduling.k8s.io/v1beta1) and Nodes, and with Options.EnforceQuota ResourceQuotas, whose limits
// on devices become the snapshot's quota. Each event is applied to the Cluster as it comes:
//
//   - an add or an update writes the object (AddOrUpdate...) if it is newer than the version held;
//   - a delete removes it, the object named by a tombstone included (client-go's DeletedFinalStateUnknown,
//     recognised by its shape: a struct with the fields Key and Obj, as delivered when a watch broke and
//     the re-list no longer had the object);
//   - an add or update whose version is not newer than the one held (by metadata.resourceVersion, where
//     both parse as integers, as the API server writes them) is dropped, as kube-scheduler's assume cache
//     drops an informer event that is not newer than the object it holds. The version held is the one the
//     Feed applied last and, for a ResourceClaim, the one the Cluster holds: [pods.Cluster.Assume] writes
//     a claim's allocation on top of the version it read, keeping its resourceVersion, so a resync or a
//     re-list, which delivers that version again unallocated, leaves the assumed allocation in place
//     until the API server's write of it (or any later change) arrives with a newer version.
//
// Informers deliver concurrently (one goroutine per informer); the Cluster and the Snapshot are safe
// for that. An object the Cluster refuses (the Snapshot validates what it is given unless
// allocator.Options.TrustAPIServer is set, which a snapshot fed by informers should set) or of a kind
// the Feed does not know is reported to Options.OnError and counted, and the Feed goes on; so is a nil
// object, a typed nil pointer included: nothing panics in the handler, where client-go would re-raise it.
//
// Waiting until the initial lists are in is client-go's part: wait for the informers' HasSynced (or
// the handler registrations' HasSynced) with cache.WaitForCacheSync before asking the Cluster. [Feed.Stats]
// says how many events of each kind were applied.
//
// Imports: allocator, allocator/pods, k8s.io/api and k8s.io/apimachinery. Never client-go: the library's
// go.mod stays free of it; the tests that drive a Feed with real informers live in fuzz/upstream.
package feed
