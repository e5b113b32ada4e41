// Package headroom answers capacity-planning questions on a [pods.Cluster] as it stands: how many more
// copies of a pod fit and where ([Count]), and why the next one does not.
//
// [Count] places copies of a pod template one after another on a fork of the cluster
// ([pods.Cluster.Fork]), with the cluster's own Place and Assume, so every copy counted is a placement
// the scheduler's filters and the allocator accept next to the copies before it. The fork is discarded:
// the cluster is not changed. Counting is bounded by a maximum number of copies and a budget of
// placements, and when no further copy fits the nodes are grouped by the reason they refuse it
// ([pods.Cluster.Explain]).
//
// Imports: allocator, allocator/pods, k8s.io/api and k8s.io/apimachinery. allocator/verify is used by
// tests only.
package headroom
