// Command dractl explains Dynamic Resource Allocation decisions for a cluster read from manifests:
// why a pending pod fits nowhere or where it would go, what the scheduler would decide for every
// pending pod, which CEL selectors match no published device, what a DeviceTaintRule evicts, which
// devices are free, used or tainted, and how much of each class, pool and node is left.
//
// It reads files, directories or stdin; the live mode is
//
//	kubectl get pods,nodes,namespaces,resourceslices,deviceclasses,resourceclaims,resourceclaimtemplates,devicetaintrules,podgroups -A -o yaml | dractl explain -f -
//
// or kubectl-dra (the module in ./kubectl-dra), the same commands reading the cluster kubectl is
// logged into.
//
// Exit status: 0 when everything asked about fits (or is clean), 1 when something does not fit (or
// a problem was found), 2 when dractl itself failed (a bug: a panic, reported with its stack; or
// out of memory, which Go's runtime reports with status 2 too), 3 for bad input or usage. Input is
// bounded (--max-bytes per file or stream, --max-pods for the workloads' pods), so that huge input
// is refused as bad input before memory runs out.
//
// The commands are in package internal/cli, which only dractl's own tree may import.
//
// Imports: of dralloc only examples/dractl/internal/cli, which holds the commands.
package main

import (
	"os"
	"runtime/debug"

	"github.com/dralloc/dralloc/examples/dractl/internal/cli"
)

func main() {
	// A dump of thousands of objects is decoded, then decided, in one go, and most of what is decoded
	// is garbage by the time it is decided: with the collector running at half Go's default heap growth
	// dractl place on 5,000 nodes and 10,000 pods as kube-apiserver lists them (scaledump -full) peaks
	// at about 257 MB instead of 337, for about a tenth more CPU. GOGC, when set, is the user's choice.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(50)
	}
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
