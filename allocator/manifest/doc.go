// Package manifest reads Kubernetes objects as users have them, the output of `kubectl get -o yaml` or
// `-o json` and the files they apply, into the typed objects the allocator works on.
//
// [Decode] reads one stream (a file, stdin); [Load] reads files and directories. Both accept YAML
// streams of several documents separated by "---", JSON streams of several objects, and List objects
// (kind List, apiVersion v1, as kubectl writes several objects) in any mixture of:
//
//   - core/v1 Pods, Nodes and Namespaces (for the label resource.kubernetes.io/admin-access, without
//     which kube-apiserver refuses a claim or template asking for admin access in the namespace),
//     and node.k8s.io/v1 RuntimeClasses (for the admission of the pods that name one, see below);
//   - core/v1 ResourceQuotas (for the limits on devices they declare, see below);
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
// # The pod create path
//
// A pod is read as kube-apiserver 1.37 would store it on create, with the default feature gates and
// admission plugins, as far as that bears on where it can be scheduled. The steps, in the API
// server's order (k8s.io/kubernetes v1.37.2), and what the loader does of each (see [Default]):
//
//  1. Decoding with defaults (pkg/apis/core/v1 defaults.go and zz_generated.defaults.go).
//     Reproduced: a container's or init container's request takes its limit where it has none; on
//     the host's network (spec.hostNetwork) a port with hostPort 0 gets its containerPort as
//     hostPort, so that two such pods conflict on a node as in the cluster; spec.schedulerName
//     default-scheduler; a container port's protocol TCP; every quantity of the containers, the
//     overhead and the pod-level resources rounded up to thousandths. Not reproduced, not read by
//     scheduling: restartPolicy, dnsPolicy, securityContext, terminationGracePeriodSeconds,
//     enableServiceLinks, image pull policy, probe, volume and status defaults.
//  2. Admission, the plugins on by default that act on a pod's create, in their order.
//     NamespaceLifecycle (refuses a pod in a namespace that is missing or terminating): not
//     reproduced, the loader does not require Namespaces. LimitRanger: not reproduced, LimitRange
//     objects are not read; in a namespace with one, containers get default requests and limits
//     that the loader does not know and NodeResourcesFit counts. ServiceAccount (service account
//     name, token volume): not read by scheduling. PodSecurity: refuses pods by the namespace's
//     policy level, not reproduced. Priority (spec.priority and preemptionPolicy from the
//     PriorityClass): not reproduced, PriorityClasses are not read and nothing in dralloc reads a
//     pod's priority. DefaultTolerationSeconds: reproduced, a pod that does not tolerate
//     the NoExecute taints node.kubernetes.io/not-ready and node.kubernetes.io/unreachable gets a
//     toleration of each for 300 seconds. RuntimeClass: reproduced with the RuntimeClasses of the
//     input (node.k8s.io/v1), wherever in the input they are: spec.overhead set from the
//     RuntimeClass, its scheduling.nodeSelector joined to the pod's and its tolerations merged
//     with the pod's (a toleration another covers dropped, as MergeTolerations does); a pod naming
//     a RuntimeClass the input does not have, with an overhead other than its RuntimeClass's, with
//     an overhead and no RuntimeClass that defines one, or with a node selector that says
//     otherwise than its RuntimeClass's is refused with the plugin's reason. PodTopologyLabels,
//     NodeDeclaredFeatureValidator and PodResizeValidator act on bindings, updates and resizes, not
//     on a pod's create. MutatingAdmissionPolicy, MutatingAdmissionWebhook,
//     ValidatingAdmissionPolicy and ValidatingAdmissionWebhook run the cluster's own policies and
//     webhooks, which a manifest does not have; ResourceQuota refuses pods over a ResourceQuota:
//     not reproduced (ResourceQuotas are read into Objects.ResourceQuotas for the limits on
//     devices they declare, which allocator.QuotaFromResourceQuotas turns into a quota the
//     allocator's search applies). The other plugins on by default act on other kinds.
//  3. The pod strategy's PrepareForCreate (pkg/registry/core/pod). Reproduced:
//     DefaultPodLevelResources (PodLevelResources and PodLevelResourcesFixDefaulting are on by
//     default in 1.37): with pod-level spec.resources, hugepage limits from the containers', cpu
//     and memory requests from the containers' total, then every pod-level limit without a
//     request as the request, then limits from the containers' total where every container has
//     one. Not reproduced: metadata.generation 1 and the status reset to phase Pending with the
//     QoS class and the SchedulingGated condition (a pod read keeps the status written, as a dump
//     carries the cluster's, and the scheduler reads spec.schedulingGates, not the condition); the
//     fields of features off by default dropped; matchLabelKeys and mismatchLabelKeys of pod
//     (anti-)affinity terms and topology spread constraints merged into their label selectors
//     (InterPodAffinity and PodTopologySpread are the caller's, see allocator/pods).
//  4. Validation (the strategy's, then validating admission): only what decides which pods are
//     read and what they ask of a node, see above.
//
// Admission is applied to the pods the API server has yet to create: a pod with
// metadata.resourceVersion was read back from a cluster, admitted when it was created, and is taken
// as stored (its RuntimeClass need not be in the input). Options.NoDefaults turns admission off with
// the defaults.
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
// (node affinity and taint matching, the scheduler's totals of container resources) with github.com/go-logr/logr, sigs.k8s.io/yaml,
// go.yaml.in/yaml/v3 (to find duplicate keys), the standard library and, of dralloc, only
// allocator/validation (which imports celenv and capacity, nothing of the allocator), so any part of
// dralloc can read manifests with it.
package manifest
