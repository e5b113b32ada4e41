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
// [Inventory.Fragmentation] measures, for a workload mix (task shapes with weights summing to 1), the
// fragmentation of FGD (Weng et al., "Beware of Fragmentation", USENIX ATC '23) per node and in all,
// F(M) = Σ_n Σ_m p_m · F_n(m), F_n(m) being the free GPU capacity of n that shape m cannot use (all of
// it where m does not fit), and the stranded capacity no shape can use; frag.go defines free capacity
// and use for DRA devices (whole devices count 1, shared devices the free fraction of their shares).
// [Inventory.FGD] is the node choice that places a pod where F grows least, as a [pods.Cost] for
// pods.Options.Cost.
//
// Imports: allocator, allocator/pods, k8s.io/api and k8s.io/apimachinery. allocator/verify is used by
// tests only.
package headroom
