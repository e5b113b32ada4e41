// Package livetest runs a test binary of this module against a real control plane: it starts the plane
// that [fuzz/controlplane] builds before the tests, hands each test a clientset of its kube-apiserver,
// and stops the plane after them.
//
// A plane that cannot be built or run here makes the tests that ask for a client skip, with the reason;
// one that is built but does not start fails the binary, as does a clientset that cannot be made.
//
// It may import client-go and the library's fuzz/controlplane; only the test packages of this module
// (apiserver, scheduler) import it.
package livetest
