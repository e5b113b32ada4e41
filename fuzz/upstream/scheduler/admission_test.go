package scheduler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/manifest"
)

// admit reads the pod as written, with the scenario's RuntimeClasses, through allocator/manifest, and
// compares what the scheduler reads of it with the pod the API server stored (created). The pod it
// returns has the stored pod's metadata (its UID owns its claims); nil when the loader refuses the pod.
func admit(written *v1.Pod, classes []*nodev1.RuntimeClass, created *v1.Pod) (*v1.Pod, []difference) {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, rc := range classes {
		rc = rc.DeepCopy()
		rc.TypeMeta = metav1.TypeMeta{APIVersion: "node.k8s.io/v1", Kind: "RuntimeClass"}
		if err := enc.Encode(rc); err != nil {
			return nil, []difference{{category: "admission", detail: err.Error()}}
		}
	}
	p := written.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	if err := enc.Encode(p); err != nil {
		return nil, []difference{{category: "admission", detail: err.Error()}}
	}
	// SkipUnknown: a loader that does not read RuntimeClasses reads the pod without them.
	objs, err := manifest.Decode(&in, "scenario", manifest.Options{SkipUnknown: true})
	if err != nil {
		return nil, []difference{{category: "admission", detail: fmt.Sprintf("the API server created the pod, allocator/manifest refuses it: %v", err)}}
	}
	if len(objs.Pods) != 1 {
		return nil, []difference{{category: "admission", detail: fmt.Sprintf("allocator/manifest read %d pods", len(objs.Pods))}}
	}
	admitted := objs.Pods[0]
	created.ObjectMeta.DeepCopyInto(&admitted.ObjectMeta)
	var diffs []difference
	if d, a := schedulingView(admitted), schedulingView(created); !apiequality.Semantic.DeepEqual(d, a) {
		diffs = append(diffs, difference{category: "admission",
			detail: fmt.Sprintf("the pod as scheduled: allocator/manifest %s, API server %s", rendered(d), rendered(a))})
	}
	return admitted, diffs
}

// podView is what kube-scheduler's filters and dralloc read of a pod that defaults and admission change.
type podView struct {
	SchedulerName  string
	Overhead       v1.ResourceList
	Resources      *v1.ResourceRequirements
	NodeSelector   map[string]string
	Tolerations    []v1.Toleration
	InitContainers []containerView
	Containers     []containerView
}

type containerView struct {
	Resources v1.ResourceRequirements
	Ports     []v1.ContainerPort
}

func schedulingView(p *v1.Pod) podView {
	view := func(ctrs []v1.Container) []containerView {
		out := make([]containerView, len(ctrs))
		for i, c := range ctrs {
			out[i] = containerView{Resources: *c.Resources.DeepCopy(), Ports: c.Ports}
		}
		return out
	}
	return podView{SchedulerName: p.Spec.SchedulerName, Overhead: p.Spec.Overhead, Resources: p.Spec.Resources,
		NodeSelector: p.Spec.NodeSelector, Tolerations: p.Spec.Tolerations,
		InitContainers: view(p.Spec.InitContainers), Containers: view(p.Spec.Containers)}
}

// admissionScenarios are pods whose placement depends on what the API server does to a pod before the
// scheduler sees it: RuntimeClass admission, pod-level resource defaults, host ports on the host's network.
func admissionScenarios() []*scenario {
	cpu := func(q string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)} }
	withRuntimeClass := func(p *v1.Pod, rc string) *v1.Pod {
		p.Spec.RuntimeClassName = ptr.To(rc)
		return p
	}
	// The overhead of a sandbox: 1 cpu, besides the containers'.
	sandbox := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "dralloc-sandbox"}, Handler: "sandbox",
		Overhead: &nodev1.Overhead{PodFixed: cpu("1")}}
	// kata runs on the nodes labelled for it, which are tainted for everyone else.
	kata := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "dralloc-kata"}, Handler: "kata",
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"example.com/runtime": "kata"},
			Tolerations: []v1.Toleration{{Key: "example.com/runtime", Operator: v1.TolerationOpEqual, Value: "kata", Effect: v1.TaintEffectNoSchedule}}}}
	kataNode := node("node-kata", nil)
	kataNode.Labels["example.com/runtime"] = "kata"
	kataNode.Spec.Taints = []v1.Taint{{Key: "example.com/runtime", Value: "kata", Effect: v1.TaintEffectNoSchedule}}

	podLevel := func(name string) *v1.Pod {
		p := pod(name)
		p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("5"), v1.ResourceMemory: resource.MustParse("1Gi")}}
		return p
	}
	hostNetwork := func(name string) *v1.Pod {
		p := pod(name)
		p.Spec.HostNetwork = true
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}
		return p
	}

	return []*scenario{{
		// 7.5 cpu fit the node's 8, with the sandbox's overhead 8.5 do not; the pod without it fits.
		name:           "a RuntimeClass's overhead makes the pod too big for the node",
		nodes:          []*v1.Node{node("node-a", nil)},
		runtimeClasses: []*nodev1.RuntimeClass{sandbox},
		pods: []*v1.Pod{withRuntimeClass(requesting(pod("sandboxed"), cpu("7500m")), sandbox.Name),
			requesting(pod("plain"), cpu("7500m"))},
	}, {
		// The kata pod goes where the RuntimeClass's node selector says, tolerating the node's taint;
		// the plain pod does not tolerate it.
		name:           "a RuntimeClass's node selector and toleration steer the pod",
		nodes:          []*v1.Node{node("node-plain", nil), kataNode},
		runtimeClasses: []*nodev1.RuntimeClass{kata},
		pods:           []*v1.Pod{withRuntimeClass(pod("kata-0"), kata.Name), pod("plain-0"), withRuntimeClass(pod("kata-1"), kata.Name)},
	}, {
		// Pod-level limits only: 5 cpu requested each, the second does not fit the node's 8.
		name:  "pod-level limits only are the pod's requests",
		nodes: []*v1.Node{node("node-a", nil)},
		pods:  []*v1.Pod{podLevel("pod-level-0"), podLevel("pod-level-1")},
	}, {
		// On the host's network containerPort 8080 is the host's port 8080: the second pod stays pending.
		name:  "two pods on the host's network with the same containerPort on a one-node cluster",
		nodes: []*v1.Node{node("node-a", nil)},
		pods:  []*v1.Pod{hostNetwork("host-0"), hostNetwork("host-1")},
	}}
}

// TestAdmissionScenarios compares dralloc with kube-scheduler, pod by pod, on pods the API server changes
// before the scheduler sees them, each read by allocator/manifest as written.
func TestAdmissionScenarios(t *testing.T) {
	c := client(t)
	tl := newTally()
	for _, sc := range admissionScenarios() {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, c, sc, tl) })
	}
	t.Logf("admission scenarios against kube-scheduler:\n%s", tl.summary())
}
