// Package explainer is the controller behind the explainer program: for every pending pod that
// kube-scheduler marked unschedulable and that uses Dynamic Resource Allocation, it computes dralloc's
// explanation ([pods.Cluster.Explain]) on a Cluster kept in step with shared informers by
// [feed.Feed], and records it where users look: a Warning Event on the pod (reason DRAUnschedulable),
// written only when the explanation changes and at most once per minimum interval per pod, and
// optionally a pod condition.
//
// The parts:
//
//   - [Candidate] decides which pods are explained (select.go);
//   - [Explain] turns a pod into a message and a dominant reason for the metrics (reason.go);
//   - [Recorder] writes Events and conditions, deduplicated and rate-limited per pod (recorder.go);
//   - [Controller] wires informers, the Feed and a work queue (controller.go);
//   - [Metrics] are the Prometheus metrics, devices per pool and per class computed at scrape time from
//     the informers' caches on the leader (metrics.go), with build_info, client-go's request metrics
//     and the work queue's (clientmetrics.go);
//   - apicalls.go lists every request the code makes, which the deploy folder's roles must grant
//     exactly (deploy_test.go);
//   - [Run] adds leader election and the health and metrics endpoints (run.go).
//
// It imports client-go and prometheus/client_golang; it lives in its own module so that the library's
// go.mod never gains them.
package explainer
