// Package operator holds TestOperatorWalkThrough: a platform operator's first hour with dralloc's tools,
// scripted against the real control plane (etcd, kube-apiserver with --authorization-mode=Node,RBAC and
// an audit log, kube-scheduler, kube-controller-manager; fuzz/controlplane starts them). It installs
// kubectl-dra and the explainer by version from a module proxy folder serving the checkout (as
// TestGoInstallByVersion does), binds a read-only user to kubectl-dra's shipped ClusterRole and runs every
// command `--as` that user through a kubeconfig, applies examples/explainer/deploy as `kubectl apply -k`
// does and runs the installed explainer with the Deployment's arguments under its ServiceAccount's token,
// sees the Warning Event on a DRA pod kube-scheduler leaves pending, finds nothing denied in the audit
// log, and scrapes every metric the explainer's README documents.
//
// The package has tests only. Imports (in its tests): fuzz/controlplane, internal/modproxy, client-go,
// k8s.io/apiserver's audit types and sigs.k8s.io/kustomize/api (what kubectl apply -k builds with).
package operator
