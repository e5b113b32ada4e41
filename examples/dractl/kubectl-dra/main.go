// Command kubectl-dra is dractl reading the cluster kubectl is logged into. On PATH it is a kubectl
// plugin:
//
//	kubectl dra explain pod/train-0 -n ml
//	kubectl dra top
//	kubectl dra place -A -o text
//
// Every command of dractl (explain, place, lint, taints, inventory, top) works as it does with -f,
// with the same output; given -f, kubectl-dra reads the files instead of the cluster. Without -f it
// lists, with list only and in pages, the pods, nodes, ResourceSlices,
// DeviceClasses, ResourceClaims, ResourceClaimTemplates, DeviceTaintRules and PodGroups, and reads
// them as dractl reads `kubectl get ... -o yaml`. kubectl's own flags (k8s.io/cli-runtime's
// ConfigFlags, parsed with spf13/pflag as kubectl parses them: --kubeconfig and $KUBECONFIG merged,
// --context, --cluster, --user, -n/--namespace and -nml, --as, --as-group, --token, --server,
// --certificate-authority, --insecure-skip-tls-verify, --request-timeout) and -A/--all-namespaces
// mean what they mean to kubectl; -n narrows the pods,
// ResourceClaimTemplates and PodGroups read, never the ResourceClaims (a device that a claim of any
// namespace holds is in use) nor the kinds without a namespace.
//
// Exit status as dractl's: 0 fits, 1 does not fit, 2 kubectl-dra failed, 3 bad input or usage (a
// list the user may not make included: the message names the permission missing), and 4 the
// cluster could not be reached or did not answer in time (refused, --request-timeout, 503, 429).
//
// It is a module of its own so that the library's go.mod never requires client-go.
//
// Imports: examples/dractl/internal/cli (the commands), allocator/manifest, client-go's dynamic client and
// apimachinery.
package main

import "os"

func main() {
	os.Exit(options().Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
