package manifest

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// Expand returns the pods the controller of a Deployment, ReplicaSet, StatefulSet or Job creates
// for it when it starts, as kube-controller-manager (k8s.io/kubernetes pkg/controller) creates them:
//
//   - every pod is built from the template as GetPodFromTemplate (pkg/controller/controller_utils.go)
//     builds it: the template's labels, annotations, finalizers and spec, the namespace of the
//     workload, generateName "<owner>-" and one owner reference to the owner with controller and
//     blockOwnerDeletion set;
//   - a pod with generateName is named as kube-apiserver names it (names.SimpleNameGenerator):
//     generateName, cut to 58 characters, and a five character suffix from suffix(generateName, i),
//     where i counts the names drawn for generateNames that agree in those 58 characters in the
//     namespace, from 0; suffix nil takes one derived from those characters and i, from the
//     alphabet kube-apiserver draws from, which never gives one name twice (for fewer than 27⁵
//     pods). A name drawn twice by a caller's suffix is drawn again, as kube-apiserver retries
//     (see Options.Suffix);
//   - a Deployment gets spec.replicas (default 1) pods of its ReplicaSet "<deployment>-<hash>": hash
//     is the pod-template-hash label the deployment controller computes (controller.ComputeHash over
//     the template and status.collisionCount), added to the pods' labels; their owner is that
//     ReplicaSet (without a UID, as it does not exist yet). The hash matches the cluster's when
//     the template carries kube-apiserver's defaults, as `kubectl get -o yaml` writes it;
//   - a ReplicaSet gets spec.replicas (default 1) pods;
//   - a StatefulSet gets spec.replicas (default 1) pods "<name>-<ordinal>", ordinals from
//     spec.ordinals.start (all of them, as they are once running: with podManagementPolicy
//     OrderedReady the controller creates each after the one before is ready), with the labels
//     statefulset.kubernetes.io/pod-name and apps.kubernetes.io/pod-index, hostname and subdomain (spec.serviceName) and a volume for
//     each volumeClaimTemplate, as newStatefulSetPod (pkg/controller/statefulset) sets them; the
//     controller-revision-hash label, a hash of the ControllerRevision, is not set;
//   - a Job gets min(parallelism, completions) pods (parallelism default 1; none when suspended),
//     with the labels batch.kubernetes.io/job-name and job-name (and the controller-uid labels
//     when the Job has a UID) that kube-apiserver adds to the template unless spec.manualSelector
//     is set, and the finalizer batch.kubernetes.io/job-tracking; in Indexed completion mode pod
//     i has the job-completion-index annotation and label, generateName "<job>-<i>-", hostname
//     "<job>-<i>" and the JOB_COMPLETION_INDEX variable (pkg/controller/job/indexed_job_utils.go).
//
// Pods that a controller would create later (a Job's next completions, a rollout's new
// ReplicaSet) are not part of the answer. A DaemonSet's pods depend on the nodes: Decode and Load
// expand DaemonSets over the Nodes of their input, and Expand refuses them. Expand creates as
// many pods as obj asks for; Decode and Load refuse input whose workloads ask for more than
// Options.MaxPods together. obj is not changed.
func Expand(obj runtime.Object, suffix func(generateName string, i int) string) ([]*corev1.Pod, error) {
	return expand(obj, newNamer(suffix))
}

// expand is Expand with the names drawn by n, which may have drawn names before.
func expand(obj runtime.Object, n *namer) ([]*corev1.Pod, error) {
	e := expander{namer: n}
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return e.deployment(w), nil
	case *appsv1.ReplicaSet:
		ref := controllerRef(appsv1.SchemeGroupVersion.String(), "ReplicaSet", &w.ObjectMeta)
		return e.replicas(&w.Spec.Template, w.Namespace, w.Name, replicas(w.Spec.Replicas), ref), nil
	case *appsv1.StatefulSet:
		return e.statefulSet(w), nil
	case *batchv1.Job:
		return e.job(w), nil
	}
	return nil, fmt.Errorf("%w: cannot expand %T into pods", ErrUnknownKind, obj)
}

type expander struct {
	namer *namer
}

func replicas(r *int32) int {
	if r == nil {
		return 1 // the apps/v1 default
	}
	return int(*r)
}

func controllerRef(apiVersion, kind string, owner *metav1.ObjectMeta) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion:         apiVersion,
		Kind:               kind,
		Name:               owner.Name,
		UID:                owner.UID,
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// podFromTemplate is GetPodFromTemplate followed by kube-apiserver's naming of generateName.
func (e *expander) podFromTemplate(tmpl *corev1.PodTemplateSpec, namespace, ownerName string, ref metav1.OwnerReference) *corev1.Pod {
	prefix := ownerName + "-"
	if len(prefix) > 253 { // GetPodsPrefix keeps the dash only while the name stays valid
		prefix = ownerName
	}
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       namespace,
			GenerateName:    prefix,
			Labels:          copyMap(tmpl.Labels),
			Annotations:     copyMap(tmpl.Annotations),
			Finalizers:      append([]string(nil), tmpl.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{ref},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	return pod
}

// name gives a pod with generateName its name.
func (e *expander) name(pod *corev1.Pod) { e.namer.name(pod) }

func (e *expander) replicas(tmpl *corev1.PodTemplateSpec, namespace, owner string, n int, ref metav1.OwnerReference) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, max(n, 0))
	for range n {
		pod := e.podFromTemplate(tmpl, namespace, owner, ref)
		e.name(pod)
		pods = append(pods, pod)
	}
	return pods
}

// deployment creates the ReplicaSet's pods as the deployment controller's getNewReplicaSet
// (pkg/controller/deployment/sync.go) names and labels the ReplicaSet.
func (e *expander) deployment(d *appsv1.Deployment) []*corev1.Pod {
	hash := podTemplateHash(&d.Spec.Template, d.Status.CollisionCount)
	tmpl := d.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = make(map[string]string, 1)
	}
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs := metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace}
	ref := controllerRef(appsv1.SchemeGroupVersion.String(), "ReplicaSet", &rs)
	return e.replicas(tmpl, d.Namespace, rs.Name, replicas(d.Spec.Replicas), ref)
}

// podTemplateHash is controller.ComputeHash: FNV-1a over the template as hash.DeepHashObject
// prints it, then the collision count, encoded with kube's safe alphabet.
func podTemplateHash(tmpl *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*tmpl))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return utilrand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// statefulSet creates the pods as newStatefulSetPod (pkg/controller/statefulset/stateful_set_utils.go).
func (e *expander) statefulSet(set *appsv1.StatefulSet) []*corev1.Pod {
	ref := controllerRef(appsv1.SchemeGroupVersion.String(), "StatefulSet", &set.ObjectMeta)
	start := 0
	if set.Spec.Ordinals != nil {
		start = int(set.Spec.Ordinals.Start)
	}
	n := replicas(set.Spec.Replicas)
	pods := make([]*corev1.Pod, 0, max(n, 0))
	for ordinal := start; ordinal < start+n; ordinal++ {
		pod := e.podFromTemplate(&set.Spec.Template, set.Namespace, set.Name, ref)
		pod.Name = fmt.Sprintf("%s-%d", set.Name, ordinal)
		if pod.Labels == nil {
			pod.Labels = make(map[string]string, 2)
		}
		pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
		pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinal)
		pod.Spec.Hostname = pod.Name
		pod.Spec.Subdomain = set.Spec.ServiceName
		// updateStorage: every claim template becomes a volume of the claim "<template>-<pod>",
		// replacing a template volume of the same name.
		for _, claim := range set.Spec.VolumeClaimTemplates {
			volume := corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name + "-" + pod.Name},
			}}
			replaced := false
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == claim.Name {
					pod.Spec.Volumes[i] = volume
					replaced = true
				}
			}
			if !replaced {
				pod.Spec.Volumes = append(pod.Spec.Volumes, volume)
			}
		}
		pods = append(pods, pod)
	}
	return pods
}

// jobPods is the number of pods a Job starts with: min(parallelism, completions), none when
// suspended. batch/v1 defaults: neither set means one pod to one completion; parallelism defaults
// to 1.
func jobPods(job *batchv1.Job) int {
	if job.Spec.Suspend != nil && *job.Spec.Suspend {
		return 0
	}
	n := 1
	if job.Spec.Parallelism != nil {
		n = int(*job.Spec.Parallelism)
	}
	if job.Spec.Completions != nil {
		n = min(n, int(*job.Spec.Completions))
	}
	return n
}

// podCount is the number of pods Expand creates for obj and the field that asks for them.
func podCount(obj runtime.Object) (int, string) {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return replicas(w.Spec.Replicas), "spec.replicas"
	case *appsv1.ReplicaSet:
		return replicas(w.Spec.Replicas), "spec.replicas"
	case *appsv1.StatefulSet:
		return replicas(w.Spec.Replicas), "spec.replicas"
	case *batchv1.Job:
		return jobPods(w), "spec.parallelism"
	}
	return 0, ""
}

func (e *expander) job(job *batchv1.Job) []*corev1.Pod {
	n := jobPods(job)
	tmpl := job.Spec.Template.DeepCopy()
	if job.Spec.ManualSelector == nil || !*job.Spec.ManualSelector {
		// The labels kube-apiserver's job strategy (generateSelector) adds to the template.
		if tmpl.Labels == nil {
			tmpl.Labels = make(map[string]string, 4)
		}
		tmpl.Labels[batchv1.JobNameLabel] = job.Name
		tmpl.Labels[legacyJobNameLabel] = job.Name
		if job.UID != "" {
			tmpl.Labels[batchv1.ControllerUidLabel] = string(job.UID)
			tmpl.Labels[legacyControllerUIDLabel] = string(job.UID)
		}
	}
	tmpl.Finalizers = appendMissing(tmpl.Finalizers, batchv1.JobTrackingFinalizer)
	ref := controllerRef(batchv1.SchemeGroupVersion.String(), "Job", &job.ObjectMeta)
	indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
	if !indexed {
		return e.replicas(tmpl, job.Namespace, job.Name, n, ref)
	}
	pods := make([]*corev1.Pod, 0, max(n, 0))
	for index := range n {
		pod := e.podFromTemplate(tmpl, job.Namespace, job.Name, ref)
		i := strconv.Itoa(index)
		if pod.Annotations == nil {
			pod.Annotations = make(map[string]string, 1)
		}
		pod.Annotations[batchv1.JobCompletionIndexAnnotation] = i
		if pod.Labels == nil {
			pod.Labels = make(map[string]string, 1)
		}
		pod.Labels[batchv1.JobCompletionIndexAnnotation] = i
		pod.GenerateName = indexedGenerateName(job.Name, i)
		if pod.Spec.Hostname == "" {
			pod.Spec.Hostname = indexedHostname(job.Name, i)
		}
		for c := range pod.Spec.Containers {
			addIndexEnv(&pod.Spec.Containers[c])
		}
		for c := range pod.Spec.InitContainers {
			addIndexEnv(&pod.Spec.InitContainers[c])
		}
		e.name(pod)
		pods = append(pods, pod)
	}
	return pods
}

// indexedGenerateName is podGenerateNameWithIndex: the job name is cut so that "-<index>-" fits.
func indexedGenerateName(job, index string) string {
	appendix := "-" + index + "-"
	name := job + appendix
	if len(name) > maxGeneratedNameLength {
		name = name[:maxGeneratedNameLength-len(appendix)] + appendix
	}
	return name
}

// indexedHostname is podHostnameWithIndex: at most 63 characters, without a trailing dash.
func indexedHostname(job, index string) string {
	appendix := "-" + index
	name := job + appendix
	if len(name) > 63 {
		name = job[:63-len(appendix)] + appendix
	}
	return name
}

// addIndexEnv is addCompletionIndexEnvVariable: JOB_COMPLETION_INDEX from the annotation, unless
// the container has it.
func addIndexEnv(c *corev1.Container) {
	for _, env := range c.Env {
		if env.Name == "JOB_COMPLETION_INDEX" {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{
		Name: "JOB_COMPLETION_INDEX",
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation),
		}},
	})
}

// The labels kube-apiserver's job strategy sets next to the batch.kubernetes.io ones, for selectors
// written before those existed (pkg/apis/batch: LegacyJobNameLabel, LegacyControllerUidLabel).
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

func appendMissing(list []string, s string) []string {
	for _, have := range list {
		if have == s {
			return list
		}
	}
	return append(list, s)
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
