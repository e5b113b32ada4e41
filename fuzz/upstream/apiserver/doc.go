// Package apiserver tests dralloc's output against a real kube-apiserver: the oracle for what Kubernetes
// accepts. The tests build kube-apiserver from the Go module proxy and run it with etcd on loopback
// (scripts/kube-apiserver), once per test binary, and then check that:
//
//   - every ResourceSlice inventory publishes (every recorded node profile and go-nvml mock, in every mode, with
//     health taints) and every DeviceTaintRule taints.Escalate builds is accepted;
//   - the valid objects the fuzz generators draw are accepted, and deliberately broken objects are rejected
//     with the field path Kubernetes names, compared with dralloc's own validation;
//   - the API server's defaults are manifest.Default's, for hand-written undefaulted objects and for generated
//     ones with their defaulted fields cleared;
//   - allocations made by dralloc's allocator, and the claims of a pod placed by allocator/pods, written to
//     claim status with reservedFor and the status.devices entries inventory/claim builds, are accepted and
//     read back unchanged; status.devices entries get the same verdict, naming the same fields, from the API
//     server and from inventory/claim.ValidateDeviceStatuses;
//   - objects created in the API server, fetched with client-go and written as `kubectl get -o yaml` and
//     `-o json` write them, read back with manifest.Decode as the same objects as their files, and give the
//     same allocator/pods placement for a pending pod.
//
// The package holds tests only. They skip, saying why, when kube-apiserver cannot be built (or
// DRALLOC_APISERVER=skip); a server that was built but does not start fails them.
//
// Imports (tests only): client-go, and of dralloc the packages whose objects it sends to the server: allocator,
// allocator/manifest, allocator/pods, allocator/validation, fuzz, inventory (with inventory/claim, inventory/nvml
// and its mocks) and taints.
package apiserver
