// Package livescale measures the pieces of dralloc that read a live cluster — the informer feed
// (allocator/feed), the in-cluster explainer (examples/explainer) and kubectl-dra
// (examples/dractl/kubectl-dra) — against a real kube-apiserver holding a generated cluster of N
// nodes of eight GPUs, 2N pending DRA pods and 4N bound pods with allocated claims (the issue's
// 5,000 / 10,000 / 20,000 at N = 5,000).
//
// Its only test, TestLiveScale, runs when DRALLOC_LIVE_SCALE names the sizes (a comma-separated
// list of node counts) and is skipped otherwise, so that ./scripts/test stays fast:
//
//	cd fuzz/upstream && DRALLOC_LIVE_SCALE=1000,2500 go test ./livescale -run TestLiveScale -v -timeout 2h
//
// DRALLOC_LIVE_SCALE_ONLY=feed stops each size after the feed's measurements;
// DRALLOC_LIVE_SCALE_ONLY=kubectl-dra measures only kubectl-dra's commands, once the cluster is
// created; DRALLOC_LIVE_SCALE_KUBECTL_DRA=BIN,BIN measures those kubectl-dra binaries, one after the
// other on the same cluster, in place of the work tree's build (a before and after). The explainer's
// passes and each kubectl-dra command are stopped after four minutes (phaseBudget;
// DRALLOC_LIVE_SCALE_BUDGET=10m sets another), with what was done by then logged: on a busy 2-core
// machine a large size would otherwise run for hours.
//
// Each size starts a control plane of its own (fuzz/controlplane; the binaries must have been built
// by `scripts/kube-apiserver build`) and logs one line per measurement, prefixed "livescale", which
// bench/PERFORMANCE.md tabulates. The test asserts what the pieces must do at any size (every
// pending pod explained, every object fed) and never a time.
//
// Imports: allocator, allocator/feed, allocator/pods, fuzz/controlplane, fuzz/upstream/bench (the
// fleet's slices), client-go.
package livescale
