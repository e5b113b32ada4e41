package manifest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDaemonSet reads a DaemonSet before the Nodes it runs on and expects one pod on every node
// the DaemonSet controller would run one on.
func TestDaemonSet(t *testing.T) {
	input := `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system, uid: ds-uid}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {gpu: "true"}
      tolerations: [{key: maintenance, operator: Exists, effect: NoExecute}]
      containers: [{name: c, image: i}]
---
apiVersion: v1
kind: Node
metadata: {name: plain, labels: {gpu: "true"}}
---
apiVersion: v1
kind: Node
metadata: {name: cpu-only, labels: {gpu: "false"}}
---
apiVersion: v1
kind: Node
metadata: {name: dedicated, labels: {gpu: "true"}}
spec: {taints: [{key: dedicated, value: team-a, effect: NoSchedule}]}
---
apiVersion: v1
kind: Node
metadata: {name: cordoned, labels: {gpu: "true"}}
spec:
  unschedulable: true
  taints: [{key: node.kubernetes.io/unschedulable, effect: NoSchedule}]
---
apiVersion: v1
kind: Node
metadata: {name: in-maintenance, labels: {gpu: "true"}}
spec: {taints: [{key: maintenance, effect: NoExecute}]}
`
	objs := decodeString(t, input, Options{Suffix: numbered})
	var got []string
	for _, pod := range objs.Pods {
		terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		got = append(got, pod.Name+" on "+terms[0].MatchFields[0].Values[0])
	}
	// "cpu-only" does not match the node selector, "dedicated" has a taint the pods do not
	// tolerate; the daemon tolerations admit "cordoned", the template's "in-maintenance".
	equal(t, got, []string{"agent-n0000 on plain", "agent-n0001 on cordoned", "agent-n0002 on in-maintenance"})

	pod := objs.Pods[0]
	src, _ := objs.Source(pod)
	equal(t, src, Source{File: "input.yaml", Document: 1, Owner: "DaemonSet kube-system/agent"})
	equal(t, pod.Namespace, "kube-system")
	equal(t, pod.GenerateName, "agent-")
	equal(t, pod.Labels, map[string]string{"app": "agent"})
	equal(t, pod.OwnerReferences, ownerRef("apps/v1", "DaemonSet", "agent", "ds-uid"))
	equal(t, pod.Spec.NodeName, "")
	equal(t, pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms,
		[]corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"plain"}},
		}}})
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	equal(t, pod.Spec.Tolerations, []corev1.Toleration{
		exists("maintenance", corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	})
}

func TestDaemonSetGivesWayToItsPods(t *testing.T) {
	input := `
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: agent-x7k2p
  namespace: kube-system
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u, controller: true}]
spec: {containers: [{name: c, image: i}]}
`
	objs := decodeString(t, input, Options{})
	one(t, objs.Pods)
	equal(t, objs.Pods[0].Name, "agent-x7k2p")
}
