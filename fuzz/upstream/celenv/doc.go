// Package celenv compares dralloc's celenv with the upstream DRA CEL
// implementation (k8s.io/dynamic-resource-allocation/cel): the same
// expressions on the same devices must compile alike and give the same
// verdicts, and the benchmarks measure both in one run.
//
// Imports (tests only): the upstream module and k8s.io/apiserver (its CEL environment), and of dralloc celenv
// and fuzz/watchdog.
package celenv
