// Package gates holds the one description of the Kubernetes feature gates that change Dynamic Resource
// Allocation decisions in dralloc: [Features], with one field per gate named exactly as the gate of
// kube-scheduler and kube-apiserver (k8s.io/kubernetes pkg/features), and [Default] and [All].
//
// Every package of dralloc that depends on a gate takes this type: allocator.Features, verify.Features and
// celenv.Features are aliases of it, and capacity.Options and fuzz.Cluster hold one. Everywhere the gates
// are passed as a *Features whose nil value means [Default], the gates Kubernetes 1.37 enables by default;
// a non-nil pointer to the zero Features switches every gate off.
//
// Imports: only the standard library (nothing at all), so that the leaves celenv and capacity can use it.
package gates
