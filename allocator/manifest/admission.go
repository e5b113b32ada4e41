package manifest

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Tolerations the DefaultTolerationSeconds admission plugin gives a pod that tolerates neither taint
// (k8s.io/kubernetes plugin/pkg/admission/defaulttolerationseconds: its default of 300 seconds).
var (
	notReadyToleration = corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))}
	unreachableToleration = corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))}
)

func ptrTo[T any](v T) *T { return &v }

// admitPods runs, on every pod of the input that is created (see created), the admission plugins
// kube-apiserver 1.37 enables by default that change a pod's scheduling, in their order:
// DefaultTolerationSeconds, then RuntimeClass with the RuntimeClasses of the input. A pod the API
// server would refuse is an error naming it and the field.
func (d *decoder) admitPods() error {
	classes := make(map[string]*nodev1.RuntimeClass, len(d.objs.RuntimeClasses))
	for _, rc := range d.objs.RuntimeClasses {
		classes[rc.Name] = rc // a later one replaces an earlier one, as kubectl apply would
	}
	for _, pod := range d.objs.Pods {
		if !created(pod) {
			continue
		}
		defaultTolerationSeconds(pod)
		if path, err := admitRuntimeClass(pod, classes); err != nil {
			src, _ := d.objs.Source(pod)
			return &Error{Source: src, Object: objectName(pod, nil), Field: path.String(),
				Err: fmt.Errorf("%w: %s: Forbidden: %w", ErrInvalid, path, err)}
		}
	}
	return nil
}

// created reports whether pod is one the API server has yet to create: one read back from a cluster
// (it has a resourceVersion) went through admission when it was created, and the scheduler sees it as
// stored then, whatever its RuntimeClass is now or whether the input has it.
func created(pod *corev1.Pod) bool {
	return pod.ResourceVersion == ""
}

// defaultTolerationSeconds is the DefaultTolerationSeconds admission plugin: a pod that does not
// tolerate the NoExecute taints node.kubernetes.io/not-ready and node.kubernetes.io/unreachable gets
// a toleration of each for 300 seconds. A toleration with an empty key, or an empty effect, counts.
func defaultTolerationSeconds(pod *corev1.Pod) {
	notReady, unreachable := false, false
	for _, t := range pod.Spec.Tolerations {
		noExecute := t.Effect == corev1.TaintEffectNoExecute || t.Effect == ""
		notReady = notReady || noExecute && (t.Key == corev1.TaintNodeNotReady || t.Key == "")
		unreachable = unreachable || noExecute && (t.Key == corev1.TaintNodeUnreachable || t.Key == "")
	}
	if notReady && unreachable {
		return
	}
	// A new slice: the pod's may share its array with a workload's template.
	tolerations := slices.Clip(slices.Clone(pod.Spec.Tolerations))
	if !notReady {
		tolerations = append(tolerations, *notReadyToleration.DeepCopy())
	}
	if !unreachable {
		tolerations = append(tolerations, *unreachableToleration.DeepCopy())
	}
	pod.Spec.Tolerations = tolerations
}

// admitRuntimeClass is the RuntimeClass admission plugin (k8s.io/kubernetes
// plugin/pkg/admission/runtimeclass) on create, its mutation (setOverhead, setScheduling) then its
// validation (validateOverhead). It returns the field at fault and the plugin's reason.
func admitRuntimeClass(pod *corev1.Pod, classes map[string]*nodev1.RuntimeClass) (*field.Path, error) {
	spec := field.NewPath("spec")
	var rc *nodev1.RuntimeClass
	if name := pod.Spec.RuntimeClassName; name != nil {
		rc = classes[*name]
		if rc == nil {
			return spec.Child("runtimeClassName"), fmt.Errorf("pod rejected: RuntimeClass %q not found", *name)
		}
	}
	// setOverhead: an overhead the pod has must be the RuntimeClass's.
	if rc != nil && rc.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return spec.Child("overhead"), fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
		// As stored: defaults ran before admission, and RuntimeClasses have none, so this overhead
		// is not rounded as the pod's own quantities are (which is also why a pod's own overhead of
		// 0.0001 cpu never matches a RuntimeClass's).
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	// setScheduling: the RuntimeClass's node selector joins the pod's, which must not say otherwise;
	// its tolerations are merged with the pod's.
	if rc != nil && rc.Scheduling != nil {
		selector := pod.Spec.NodeSelector
		if selector == nil {
			selector = rc.Scheduling.NodeSelector
		} else {
			selector = make(map[string]string, len(pod.Spec.NodeSelector)+len(rc.Scheduling.NodeSelector))
			for k, v := range pod.Spec.NodeSelector {
				selector[k] = v
			}
			// In key order, so that the same input gives the same error (the plugin ranges over
			// the map).
			for _, k := range sortedKeys(rc.Scheduling.NodeSelector) {
				v := rc.Scheduling.NodeSelector[k]
				if podValue, ok := pod.Spec.NodeSelector[k]; ok && podValue != v {
					return spec.Child("nodeSelector").Key(k), fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, podValue)
				}
				selector[k] = v
			}
		}
		pod.Spec.NodeSelector = copyMap(selector)
		pod.Spec.Tolerations = mergeTolerations(pod.Spec.Tolerations, rc.Scheduling.Tolerations)
	}
	// validateOverhead: a pod with an overhead needs a RuntimeClass that defines one.
	if (rc == nil || rc.Overhead == nil) && pod.Spec.Overhead != nil {
		return spec.Child("overhead"), fmt.Errorf("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil, nil
}

// mergeTolerations is MergeTolerations (k8s.io/kubernetes pkg/util/tolerations): the tolerations of
// first, then of second, without those another one covers; of two equal ones the first is kept. The
// result is a new slice.
func mergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := make([]corev1.Toleration, 0, len(first)+len(second))
	all = append(all, first...)
	all = append(all, second...)
	var merged []corev1.Toleration
next:
	for i := range all {
		t := &all[i]
		for j := range merged {
			if covers(&merged[j], t) {
				continue next
			}
		}
		for j := i + 1; j < len(all); j++ {
			if !apiequality.Semantic.DeepEqual(t, &all[j]) && covers(&all[j], t) {
				continue next
			}
		}
		merged = append(merged, *t.DeepCopy())
	}
	return merged
}

// covers is isSuperset (pkg/util/tolerations): whether ss tolerates every taint t tolerates. An
// operator that is neither Equal, empty nor Exists covers nothing but its equal (validation refuses
// it).
func covers(ss, t *corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(t, ss) {
		return true
	}
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != corev1.TolerationOpExists) {
		return false
	}
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == corev1.TaintEffectNoExecute && ss.TolerationSeconds != nil &&
		(t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds) {
		return false
	}
	switch ss.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == ss.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
