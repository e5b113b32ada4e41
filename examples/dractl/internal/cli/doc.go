// Package cli is dractl's commands (explain, place, lint, taints, inventory, top): the command line,
// the loading of a cluster from manifests, and every output. [Run] is dractl; [Options.Run] is the
// same commands with another name and another source of objects when no -f is given, which is how
// kubectl-dra (examples/dractl/kubectl-dra, a module of its own because it needs client-go) reads a
// live cluster through the same code, so that the same objects give the same output either way.
//
// The package is internal to examples/dractl: only dractl's own tree imports it, so its flags and
// outputs are a command line's contract, not a Go API's. It may import everything of dralloc and
// k8s.io/api, k8s.io/apimachinery, sigs.k8s.io/yaml; never client-go.
package cli
