package manifest

import (
	"testing"
	"unsafe"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// compactInput is two pods of one Job and two nodes as kubectl get -o json writes them: managed
// fields, labels, owners, images and conditions that repeat from one object to the next.
const compactInput = `{"apiVersion":"v1","kind":"List","items":[
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-0","namespace":"ml","labels":{"job-name":"train","app":"trainer"},
 "ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"train","uid":"u-1","controller":true}],
 "managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
 "spec":{"containers":[{"name":"main","image":"registry.example.com/ml/trainer:v1"}]},
 "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/2 nodes are available"}]}},
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-1","namespace":"ml","labels":{"job-name":"train","app":"trainer"},
 "ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"train","uid":"u-1","controller":true}],
 "managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
 "spec":{"containers":[{"name":"main","image":"registry.example.com/ml/trainer:v1"}]},
 "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/2 nodes are available"}]}},
{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-0","labels":{"topology.kubernetes.io/zone":"a"},
 "managedFields":[{"manager":"kubelet","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{}}}]},
 "status":{"nodeInfo":{"kubeletVersion":"v1.37.2","osImage":"Linux"},"images":[{"names":["registry.k8s.io/pause:3.10"]}]}},
{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1","labels":{"topology.kubernetes.io/zone":"a"},
 "managedFields":[{"manager":"kubelet","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{}}}]},
 "status":{"nodeInfo":{"kubeletVersion":"v1.37.2","osImage":"Linux"},"images":[{"names":["registry.k8s.io/pause:3.10"]}]}}
]}`

// TestDecodeCompact: with Options.Compact the pods and nodes are those decoded without it less their
// managed fields, and the strings that repeat from one object to the next are one copy.
func TestDecodeCompact(t *testing.T) {
	plain := decodeString(t, compactInput, Options{})
	compact := decodeString(t, compactInput, Options{Compact: true})
	if len(compact.Pods) != 2 || len(compact.Nodes) != 2 {
		t.Fatalf("got %d pods and %d nodes, want 2 and 2", len(compact.Pods), len(compact.Nodes))
	}
	for i, p := range plain.Pods {
		want := p.DeepCopy()
		want.ManagedFields = nil
		if !apiequality.Semantic.DeepEqual(compact.Pods[i], want) {
			t.Errorf("pod %s: got %+v, want %+v", p.Name, compact.Pods[i], want)
		}
	}
	for i, n := range plain.Nodes {
		want := n.DeepCopy()
		want.ManagedFields = nil
		if !apiequality.Semantic.DeepEqual(compact.Nodes[i], want) {
			t.Errorf("node %s: got %+v, want %+v", n.Name, compact.Nodes[i], want)
		}
	}
	same := func(what, a, b string) {
		t.Helper()
		if unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s: two copies of %q", what, a)
		}
	}
	p0, p1 := compact.Pods[0], compact.Pods[1]
	same("label", p0.Labels["job-name"], p1.Labels["job-name"])
	same("owner", p0.OwnerReferences[0].Name, p1.OwnerReferences[0].Name)
	same("image", p0.Spec.Containers[0].Image, p1.Spec.Containers[0].Image)
	same("condition message", p0.Status.Conditions[0].Message, p1.Status.Conditions[0].Message)
	n0, n1 := compact.Nodes[0], compact.Nodes[1]
	same("node label", n0.Labels["topology.kubernetes.io/zone"], n1.Labels["topology.kubernetes.io/zone"])
	same("kubelet version", n0.Status.NodeInfo.KubeletVersion, n1.Status.NodeInfo.KubeletVersion)
	same("image name", n0.Status.Images[0].Names[0], n1.Status.Images[0].Names[0])
}
