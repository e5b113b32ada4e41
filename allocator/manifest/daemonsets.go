package manifest

import (
	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// daemonSetPods returns the pods the DaemonSet controller (k8s.io/kubernetes pkg/controller/daemon)
// creates for ds on nodes, in the order of nodes: one on every node where NodeShouldRunDaemonPod
// holds (the template's nodeName, if any, is the node; its node selector and required node affinity
// match the node; it tolerates the node's NoSchedule and NoExecute taints, with the tolerations the
// controller adds). Each pod is built as syncNodes builds it: the template with the daemon
// tolerations (util.CreatePodTemplate), generateName "<daemonset>-", the DaemonSet as controller,
// and a required node affinity for the node's name alone
// (util.ReplaceDaemonSetPodNodeNameNodeAffinity). The controller-revision-hash label, a hash of
// the ControllerRevision, is not set. It reports false, before building any pod, when ds would
// run on more than limit nodes, and charge's error when charge refuses the pods' number.
func daemonSetPods(ds *appsv1.DaemonSet, nodes []*corev1.Node, n *namer, limit int, charge func(pods int) error) ([]*corev1.Pod, bool, error) {
	e := expander{namer: n}
	tmpl := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&tmpl.Spec)
	runs := daemonNodes(tmpl, nodes, limit)
	if runs == nil {
		return nil, false, nil
	}
	if err := charge(len(runs)); err != nil {
		return nil, true, err
	}
	ref := controllerRef(appsv1.SchemeGroupVersion.String(), "DaemonSet", &ds.ObjectMeta)
	pods := make([]*corev1.Pod, 0, len(runs))
	for _, node := range runs {
		pod := e.podFromTemplate(tmpl, ds.Namespace, ds.Name, ref)
		pod.Spec.Affinity = nodeNameAffinity(pod.Spec.Affinity, node.Name)
		e.name(pod)
		pods = append(pods, pod)
	}
	return pods, true, nil
}

// daemonNodes returns the nodes that a daemon pod of tmpl goes to (NodeShouldRunDaemonPod's first
// answer), or nil when they are more than limit.
func daemonNodes(tmpl *corev1.PodTemplateSpec, nodes []*corev1.Node, limit int) []*corev1.Node {
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	runs := []*corev1.Node{}
	for _, node := range nodes {
		if tmpl.Spec.NodeName != "" && tmpl.Spec.NodeName != node.Name {
			continue
		}
		// As the controller, a node affinity that does not parse matches no node.
		if fits, _ := affinity.Match(node); !fits {
			continue
		}
		_, untolerated := v1helper.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations,
			func(t *corev1.Taint) bool {
				return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
			}, false)
		if untolerated {
			continue
		}
		if len(runs) == limit {
			return nil
		}
		runs = append(runs, node)
	}
	return runs
}

// addDaemonTolerations is util.AddOrUpdateDaemonPodTolerations: daemon pods tolerate the taints
// of node conditions.
func addDaemonTolerations(spec *corev1.PodSpec) {
	add := func(key string, effect corev1.TaintEffect) {
		t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
		// v1helper.AddOrUpdateTolerationInPodSpec: a toleration of the same key, operator, value
		// and effect is replaced.
		for i := range spec.Tolerations {
			if spec.Tolerations[i].MatchToleration(&t) {
				spec.Tolerations[i] = t
				return
			}
		}
		spec.Tolerations = append(spec.Tolerations, t)
	}
	add(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)
	if spec.HostNetwork {
		add(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)
	}
}

// nodeNameAffinity is util.ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity
// becomes the one term that selects the node by name; affinity is a copy the pod owns.
func nodeNameAffinity(affinity *corev1.Affinity, node string) *corev1.Affinity {
	selector := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{
			Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
		}},
	}}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = selector
	return affinity
}
