// Package taints holds the differential tests of github.com/dralloc/dralloc/taints against the upstream
// reference, k8s.io/dynamic-resource-allocation: toleration matching against resourceclaim.ToleratesTaint,
// and the allocation check (taints.Blocking over the effective taints of taints.Evaluator) against what the
// upstream structured allocator allocates on a one-device pool. The package has no code of its own.
//
// Imports (tests only): the upstream module and client-go (its taint helpers), and of dralloc taints.
package taints
