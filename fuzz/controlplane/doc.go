// Package controlplane starts and stops the real Kubernetes control plane that scripts/kube-apiserver
// builds from the Go module proxy (etcd and kube-apiserver v1.37.2, and on request kube-scheduler and
// kube-controller-manager) for the tests that hold dralloc to Kubernetes itself: fuzz/upstream/apiserver,
// fuzz/upstream/scheduler and examples/explainer's live tests.
//
// [Start] runs the script's build (when asked) and start steps in a fresh directory and returns a
// [Plane] with the kubeconfig written there; [Plane.Stop] stops exactly the processes the script
// started, by the ids it recorded. A control plane that cannot be had on this machine (the script is
// not found, DRALLOC_APISERVER=skip, the build fails, the binaries or etcd are not installed) is an
// error wrapping [ErrUnavailable], which tests turn into a skip with the reason; one that is built but
// does not start is any other error, which tests report as a failure.
//
// Building a client from the kubeconfig is the caller's: the library's module does not require
// client-go.
//
// Imports: the standard library only.
package controlplane
