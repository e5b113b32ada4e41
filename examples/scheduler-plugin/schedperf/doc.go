// Package schedperf measures kube-scheduler's throughput with and without the DRAFragmentation plugin
// on kube-scheduler's own DRA benchmarks (scheduler_perf's SchedulingWithResourceClaimTemplate
// workloads, test/integration/scheduler_perf/dra in k8s.io/kubernetes v1.37.2).
//
// Its benchmark, BenchmarkPerfScheduling, is upstream's RunBenchmarkPerfScheduling with the plugin in
// the out-of-tree registry, on a configuration written from upstream's performance-config.yaml: the
// test case SchedulingWithResourceClaimTemplate as upstream has it (the default profile, the baseline),
// and the same test case again as SchedulingWithResourceClaimTemplateDRAFragmentation, whose scheduler
// runs the profile of config/profile.yaml. The benchmark is behind the build tag schedperf: it links a
// kube-apiserver and needs etcd, so `go test ./...` leaves it out; `scripts/scheduler-perf plugin`
// builds and runs it, alternating the two test cases, and prints their pods/s.
//
// Imports: k8s.io/kubernetes's scheduler_perf and framework runtime, and package fragscore.
package schedperf
