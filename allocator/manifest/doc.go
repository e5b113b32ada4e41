// Package manifest reads Kubernetes objects as users have them, the output of `kubectl get -o yaml` or
// `-o json` and the files they apply, into the typed objects the allocator works on.
//
// [Decode] reads one stream (a file, stdin); [Load] reads files and directories. Both accept YAML
// streams of several documents separated by "---", JSON streams of several objects, and List objects
// (kind List, apiVersion v1, as kubectl writes several objects) in any mixture of:
//
//   - core/v1 Pods, Nodes and Namespaces (for the label resource.kubernetes.io/admin-access, without
//     which kube-apiserver refuses a claim or template asking for admin access in the namespace);
//   - resource.k8s.io ResourceSlices, DeviceClasses, ResourceClaims, ResourceClaimTemplates
//     (v1, v1beta2, v1beta1) and DeviceTaintRules (v1, v1beta2, v1alpha3), all converted to v1;
//   - scheduling.k8s.io PodGroups and Workloads (v1beta1, v1alpha3), converted to v1beta1;
//   - apps/v1 Deployments, ReplicaSets and StatefulSets and batch/v1 Jobs, expanded into the pods their
//     controllers create (see [Expand]), and apps/v1 DaemonSets, expanded into one pod for every Node
//     of the input that the DaemonSet controller would run one on (its node selector and required
//     node affinity match, its tolerations and the daemon tolerations cover the node's NoSchedule
//     and NoExecute taints); a DaemonSet's pods follow the objects read as they are.
//
// A List is decoded item by item, each item from the document's bytes, and a List in YAML (kubectl
// get -o yaml, one document) converted to JSON entry by entry, each entry parsed once, so that a dump
// of a large cluster is held once as bytes and once as objects, not as whole-document trees besides;
// the objects and errors are those of decoding the List whole. With Options.TakeSlice the
// ResourceSlices, most of a dump's objects, are handed over as they are read instead of being kept,
// so that a caller that copies them (an allocator.Snapshot) never holds them all at once.
//
// Workloads read next to what a cluster already runs for them, as `kubectl get all -o yaml` writes a
// Deployment with its ReplicaSets and their pods, are not doubled: a workload's expanded pods are
// dropped when the input has pods that the workload controls, and a Deployment's when the input has
// one of its ReplicaSets. Every object keeps its [Source]; the pods of a workload name it as their
// owner.
//
// Decoding is strict, as kube-apiserver's with fieldValidation=Strict: an unknown or duplicate field is
// an error. Every error is an *[Error] naming the file, the document (and the item of a List), the
// object and the field path (of the version written), and wraps a sentinel ([ErrUnknownField],
// [ErrDuplicateField], [ErrUnknownKind], [ErrDecode], [ErrInvalid], [ErrTooManyPods], [ErrTooLarge])
// for errors.Is; a file Load cannot read is an *os.PathError ([ErrNotRegular] for a named pipe,
// device or socket in a directory).
//
// Input is bounded so that hostile input is an error, not a hang or a machine out of memory: every
// file and stream, and every document once its YAML aliases are expanded, by Options.MaxBytes
// ([DefaultMaxBytes], 64 MiB); every object by Options.MaxObjectBytes ([DefaultMaxObjectBytes],
// 3 MiB, kube-apiserver's bound on a request); the pods that the workloads of the whole input expand into by
// Options.MaxPods ([DefaultMaxPods]) and, each counted as its template's size, by
// Options.MaxExpandedBytes ([DefaultMaxExpandedBytes]). Documents of kinds the loader does not read are errors too, unless Options.SkipUnknown
// lists them in Objects.Skipped instead. Namespaced objects without a namespace get
// Options.Namespace, as kubectl gives them the namespace of its context.
//
// Unless Options.NoDefaults is set, the loader applies the defaults kube-apiserver applies when the
// objects are created ([Default]). Unless Options.NoValidate is set, it then validates every
// resource.k8s.io object as kube-apiserver validates it on create (package allocator/validation, the
// validation the Snapshot applies), so that a file the API server would refuse is refused here, naming
// the file, document, object and field; so are the names of Pods, Nodes and workloads and the counts
// that decide how many pods a workload has (a negative spec.replicas, spec.parallelism,
// spec.completions or spec.ordinals.start). Options.Validate adds the caller's own checks.
//
// The main types are [Objects], what was read, with the [Source] of every object, and [Options].
//
// # Conversion
//
// The resource.k8s.io/v1beta2 and scheduling.k8s.io/v1alpha3 types are field for field the same as
// their v1 and v1beta1 counterparts, and so are most of resource.k8s.io/v1beta1; those parts are
// converted by encoding them as JSON and decoding the result strictly into the target type, so that a
// field the target does not have is an error, never a silent loss. The parts of v1beta1 that differ are
// converted field by field as kube-apiserver converts them (k8s.io/kubernetes pkg/apis/resource/v1beta1):
// a DeviceRequest's inline fields become spec.devices.requests[].exactly, a Device's basic fields move
// up into the Device, and a ResourceSlice's nodeName "" and allNodes false become unset.
//
// # Imports
//
// The package may import k8s.io/api, k8s.io/apimachinery, k8s.io/utils, k8s.io/component-helpers
// (node affinity and taint matching) with github.com/go-logr/logr, sigs.k8s.io/yaml,
// go.yaml.in/yaml/v3 (to find duplicate keys), the standard library and, of dralloc, only
// allocator/validation (which imports celenv and capacity, nothing of the allocator), so any part of
// dralloc can read manifests with it.
package manifest
