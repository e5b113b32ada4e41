// Package upstream holds dralloc's differential tests and benchmarks against the upstream reference,
// k8s.io/dynamic-resource-allocation. It is a separate Go module so that the reference and its heavy
// dependencies (client-go, apiserver) never enter the library's go.mod.
//
// Each subpackage compares one dralloc package with its upstream counterpart: the same inputs go to both, and
// verdicts, devices and errors must agree; benchmarks run both in the same process. Two packages test against a
// real control plane built from the module proxy by scripts/kube-apiserver: apiserver (kube-apiserver, the
// oracle for what Kubernetes accepts) and scheduler (kube-scheduler and kube-controller-manager, the oracle for
// what Kubernetes decides about pods, compared pod by pod with allocator/pods).
//
// internal/modproxy (with cmd/moduleproxy, its command) serves the repository's modules from a folder laid out as a
// module proxy, for the tests that run `go install …@version` as a user would (TestGoInstallByVersion).
//
// operator holds TestOperatorWalkThrough, a platform operator's walk-through on the real control plane with
// RBAC enforced: kubectl-dra and the explainer installed by version, every kubectl-dra command run as a
// read-only user, the explainer applied as `kubectl apply -k` does and run under its ServiceAccount, its
// Warning on an unschedulable pod, nothing denied in the audit log, every documented metric scraped.
//
// Imports: nothing in a build; deps.go (build tag tools) names the upstream packages the subpackages test against.
package upstream
