package explainer

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestUnschedulable(t *testing.T) {
	with := func(edit func(p *v1.Pod)) *v1.Pod {
		p := pod("ns", "p", "c", "", "")
		unschedulable(p)
		edit(p)
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"PodScheduled=False, reason Unschedulable", with(func(*v1.Pod) {}), true},
		{"no condition yet", pod("ns", "p", "c", "", ""), false},
		{"waiting for scheduling gates", with(func(p *v1.Pod) { p.Status.Conditions[0].Reason = v1.PodReasonSchedulingGated }), false},
		{"scheduled", with(func(p *v1.Pod) { p.Status.Conditions[0].Status = v1.ConditionTrue; p.Status.Conditions[0].Reason = "" }), false},
		{"bound to a node", with(func(p *v1.Pod) { p.Spec.NodeName = "n1" }), false},
		{"being deleted", with(func(p *v1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }), false},
		{"failed", with(func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }), false},
	} {
		if got := Unschedulable(tc.pod); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestUsesDRA(t *testing.T) {
	mapped := class("fpga", "")
	mapped.Spec.ExtendedResourceName = ptr.To("example.com/fpga")
	plugin := node("n1")
	plugin.Status.Allocatable["example.com/nic"] = resource.MustParse("4")
	classes, nodes := []*resourceapi.DeviceClass{mapped, class("gpu", "a100")}, []*v1.Node{plugin}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"resource claim", pod("ns", "p", "c", "", ""), true},
		{"claim template", pod("ns", "p", "", "t", ""), true},
		{"extended resource a class names", pod("ns", "p", "", "", "example.com/fpga"), true},
		{"implicit extended resource of a class", pod("ns", "p", "", "", "deviceclass.resource.kubernetes.io/gpu"), true},
		{"implicit extended resource of a missing class", pod("ns", "p", "", "", "deviceclass.resource.kubernetes.io/tpu"), true},
		{"extended resource nothing serves", pod("ns", "p", "", "", "example.com/tpu"), true},
		{"extended resource of a device plugin", pod("ns", "p", "", "", "example.com/nic"), false},
		{"cpu only", pod("ns", "p", "", "", "cpu"), false},
		{"hugepages", pod("ns", "p", "", "", "hugepages-2Mi"), false},
	} {
		if got := UsesDRA(tc.pod, classes, nodes); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
