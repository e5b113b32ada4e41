// Package capacity is the exact arithmetic of sharing devices in Kubernetes Dynamic Resource Allocation
// (resource.k8s.io/v1, Kubernetes 1.37): how much of a device one request consumes, how consumption adds up
// across the shares of a device with allowMultipleAllocations, how partitionable devices draw on the shared
// counters of their pool, and what a claim charges against a quota.
//
// The package is a leaf: it imports only the Kubernetes API types (k8s.io/api, k8s.io/apimachinery), of this
// module only allocator/gates (the feature gates, a package that imports nothing), and the
// standard library. Everything here is pure computation, so schedulers, autoscalers, quota systems and
// admission webhooks can use it without a cluster.
//
// Main entry points:
//
//   - [Consumed]: what one request consumes of one shareable device, exactly as the Kubernetes 1.37 allocator
//     computes the consumedCapacity it writes into an AllocationResult.
//   - [Ledger]: the running consumption of one shareable device across its shares (fits / add / remove,
//     reversible so that a search can backtrack).
//   - [Counters]: the shared counters of one pool, with the compatibility groups of partitionable devices.
//   - [ConsumedRange]: an SDK extension for requests that accept a range instead of a point.
//   - [ChargeClaim] and [ChargeAllocation]: quota charges of a claim before and after allocation.
//   - [ValidateQuantity] and [ValidateCapacity]: the bounds every entry point checks before any arithmetic,
//     refusing quantities such as 1E100000000 that parse but would make arithmetic run for minutes.
//
// Concurrency: the functions ([Consumed], [ConsumedRange], [ChargeClaim], [ChargeAllocation], the validations)
// only read their arguments and are safe for concurrent use, and so is an [Inventory] once built. A [Ledger] or
// a [Counters] is running state that changes with every Add and Remove: it is not safe for concurrent use;
// give each goroutine (each search) its own, or guard it.
//
// Devices that cannot serve a request are reported with [ErrUnsuitable]; invalid input (a policy that the
// API would reject, a negative or unrepresentable amount) yields other errors that name the capacity and field.
package capacity
