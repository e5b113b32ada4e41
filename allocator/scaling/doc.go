// Package scaling answers a cluster autoscaler's questions about Dynamic Resource Allocation by placing
// pods for real, on forks of a [pods.Cluster] with nodes that do not exist yet: a node type is an
// [inventory.Template], whose instances carry the Node object and the ResourceSlices a real node of that
// type would publish (UUIDs, PCI bus IDs and labels included), so that every class, selector and
// constraint behaves on them as on a real node.
//
// Main types and entry points:
//
//   - [Planner] holds a Cluster and the [NodeType]s that can be added, each with a cost and a maximum.
//   - [Planner.Fits]: for each pending pod or gang ([Pending]), which node types would let it fit on new
//     nodes of that type, and the reason for each type that would not.
//   - [Planner.ScaleUp]: how many new nodes, of which types, a set of pending pods needs, by placing them
//     one after another (gangs as kube-scheduler's pass places them, [pods.Cluster.PlaceGroup]) on a fork where new nodes are added as they are needed,
//     cheapest type first; the [Plan] lists the nodes and where every pod goes.
//   - [Planner.ScaleDown]: whether a node can be removed, by removing its pods (which frees their
//     devices as the control plane does) and placing each of them elsewhere.
//   - [Utilisation]: devices, shares and counters in use per pool and per node.
//   - [ClassMatcher] and [NewInventory]: the classes' own CEL selectors as the class matcher of
//     capacity.NewInventory. [Charges]: quota charges per namespace and class of allocated and pending
//     claims, pods through claims and through DRA extended resources alike (a pending pod that cannot be
//     charged is listed in Quota.Refused, the others charged). [NewChargeback]: devices,
//     MIG memory and multiprocessors per pod and owner. [Audit]: per pod, the devices it gets through
//     claims and extended resources against what its container resources declare.
//
// Every decision is deterministic for identical input (pods in the order given, node types in order of
// cost and then of the order given, new nodes named <type>-new-<index>) and bounded: by the context, by
// [Options.StepBudget] (placement attempts, a gang's pods each counted; running out is
// [allocator.ErrSearchBudget], never "does not fit") and by [Options.MaxNodes]. Nothing is changed in the Cluster: every answer is computed on forks
// that are discarded.
//
// Imports: allocator, allocator/pods, inventory (templates), capacity, celenv, k8s.io/api,
// k8s.io/apimachinery and k8s.io/component-helpers (pod resource requests). It never imports fuzz (only its external tests do) nor the internals of
// another package.
package scaling
