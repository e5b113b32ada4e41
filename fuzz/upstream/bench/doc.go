// Package bench builds the inputs of dralloc's performance benchmarks and runs them against dralloc and the
// upstream allocator (k8s.io/dynamic-resource-allocation/structured) side by side, in the same process, on the
// same objects.
//
// The scenarios: a scheduler's filter loop over 100 and 1000 nodes of eight
// GPUs, the same fleet half used, a claim that cannot fit on a node of 32 identical GPUs (upstream's
// exponential case), building and updating the snapshot, a fragmentation run over partitionable GPUs, fleets of DGX H100 nodes in
// dynamic MIG as inventory publishes them, GPUs aligned by NUMA node or PCIe root (matchAttribute), and
// the workloads of kube-scheduler's own scheduler_perf DRA benchmarks placed through allocator/pods
// (scheduler_perf.md compares the two).
package bench
