package manifest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestDefault(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 30, 15, 500_000_000, time.UTC)
	nowSecond := metav1.NewTime(time.Date(2026, 12, 1, 9, 30, 15, 0, time.UTC))
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	claim := func(requests []resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}}}
	}
	exactly := func(mode resourceapi.DeviceAllocationMode, count int64) []resourceapi.DeviceRequest {
		return []resourceapi.DeviceRequest{{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "c", AllocationMode: mode, Count: count}}}
	}
	sub := func(mode resourceapi.DeviceAllocationMode, count int64) []resourceapi.DeviceRequest {
		return []resourceapi.DeviceRequest{{Name: "r", FirstAvailable: []resourceapi.DeviceSubRequest{
			{Name: "a", DeviceClassName: "c", AllocationMode: mode, Count: count},
		}}}
	}
	tolerations := func(ops ...resourceapi.DeviceTolerationOperator) []resourceapi.DeviceToleration {
		var out []resourceapi.DeviceToleration
		for _, op := range ops {
			out = append(out, resourceapi.DeviceToleration{Key: "k", Operator: op})
		}
		return out
	}
	withTolerations := func(reqs []resourceapi.DeviceRequest, tol []resourceapi.DeviceToleration) []resourceapi.DeviceRequest {
		if reqs[0].Exactly != nil {
			reqs[0].Exactly.Tolerations = tol
		}
		for i := range reqs[0].FirstAvailable {
			reqs[0].FirstAvailable[i].Tolerations = tol
		}
		return reqs
	}
	allocated := func(tol []resourceapi.DeviceToleration) *resourceapi.ResourceClaim {
		c := claim(nil)
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "r", Driver: "d", Pool: "p", Device: "x", Tolerations: tol}},
		}}
		return c
	}
	template := func(reqs []resourceapi.DeviceRequest) *resourceapi.ResourceClaimTemplate {
		return &resourceapi.ResourceClaimTemplate{Spec: resourceapi.ResourceClaimTemplateSpec{Spec: claim(reqs).Spec}}
	}
	slice := func(added *metav1.Time) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Devices: []resourceapi.Device{{
			Name: "x", Taints: []resourceapi.DeviceTaint{{Key: "k", Effect: resourceapi.DeviceTaintEffectNoSchedule, TimeAdded: added}},
		}}}}
	}
	rule := func(added *metav1.Time) *resourceapi.DeviceTaintRule {
		return &resourceapi.DeviceTaintRule{Spec: resourceapi.DeviceTaintRuleSpec{
			Taint: resourceapi.DeviceTaint{Key: "k", Effect: resourceapi.DeviceTaintEffectNoExecute, TimeAdded: added},
		}}
	}
	gpu := resource.MustParse("1")
	mem := resource.MustParse("1Gi")
	cpu := resource.MustParse("500m")
	pod := func(limits, requests corev1.ResourceList, scheduler string) *corev1.Pod {
		c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Limits: limits, Requests: requests}}
		return &corev1.Pod{Spec: corev1.PodSpec{SchedulerName: scheduler, Containers: []corev1.Container{c}, InitContainers: []corev1.Container{c}}}
	}

	cases := []struct {
		name string
		now  time.Time
		in   runtime.Object
		want runtime.Object
	}{
		{"exactly: no mode is ExactCount of one", now,
			claim(exactly("", 0)), claim(exactly(resourceapi.DeviceAllocationModeExactCount, 1))},
		{"exactly: ExactCount without count is one", now,
			claim(exactly(resourceapi.DeviceAllocationModeExactCount, 0)), claim(exactly(resourceapi.DeviceAllocationModeExactCount, 1))},
		{"exactly: a count is kept", now,
			claim(exactly("", 4)), claim(exactly(resourceapi.DeviceAllocationModeExactCount, 4))},
		{"exactly: All gets no count", now,
			claim(exactly(resourceapi.DeviceAllocationModeAll, 0)), claim(exactly(resourceapi.DeviceAllocationModeAll, 0))},
		{"firstAvailable: no mode is ExactCount of one", now,
			claim(sub("", 0)), claim(sub(resourceapi.DeviceAllocationModeExactCount, 1))},
		{"firstAvailable: All gets no count", now,
			claim(sub(resourceapi.DeviceAllocationModeAll, 0)), claim(sub(resourceapi.DeviceAllocationModeAll, 0))},
		{"exactly: a toleration without operator is Equal, Exists is kept", now,
			claim(withTolerations(exactly("ExactCount", 1), tolerations("", resourceapi.DeviceTolerationOpExists))),
			claim(withTolerations(exactly("ExactCount", 1), tolerations(resourceapi.DeviceTolerationOpEqual, resourceapi.DeviceTolerationOpExists)))},
		{"firstAvailable: a toleration without operator is Equal", now,
			claim(withTolerations(sub("ExactCount", 1), tolerations(""))),
			claim(withTolerations(sub("ExactCount", 1), tolerations(resourceapi.DeviceTolerationOpEqual)))},
		{"allocation result: a toleration without operator is Equal", now,
			allocated(tolerations("")), allocated(tolerations(resourceapi.DeviceTolerationOpEqual))},
		{"template: requests are defaulted as in a claim", now,
			template(withTolerations(sub("", 0), tolerations(""))),
			template(withTolerations(sub(resourceapi.DeviceAllocationModeExactCount, 1), tolerations(resourceapi.DeviceTolerationOpEqual)))},
		{"slice: a device taint without timeAdded was added now, in whole seconds", now,
			slice(nil), slice(&nowSecond)},
		{"slice: timeAdded is kept", now,
			slice(&earlier), slice(&earlier)},
		{"slice: without a time timeAdded stays unset", time.Time{},
			slice(nil), slice(nil)},
		{"taint rule: a taint without timeAdded was added now", now,
			rule(nil), rule(&nowSecond)},
		{"taint rule: timeAdded is kept", now,
			rule(&earlier), rule(&earlier)},
		{"device class: nothing to default", now,
			&resourceapi.DeviceClass{Spec: resourceapi.DeviceClassSpec{}}, &resourceapi.DeviceClass{Spec: resourceapi.DeviceClassSpec{}}},
		{"pod group: no disruption mode is Single", now,
			&schedulingapi.PodGroup{},
			&schedulingapi.PodGroup{Spec: schedulingapi.PodGroupSpec{DisruptionMode: &schedulingapi.DisruptionMode{Single: &schedulingapi.SingleDisruptionMode{}}}}},
		{"pod group: a disruption mode is kept", now,
			&schedulingapi.PodGroup{Spec: schedulingapi.PodGroupSpec{DisruptionMode: &schedulingapi.DisruptionMode{All: &schedulingapi.AllDisruptionMode{}}}},
			&schedulingapi.PodGroup{Spec: schedulingapi.PodGroupSpec{DisruptionMode: &schedulingapi.DisruptionMode{All: &schedulingapi.AllDisruptionMode{}}}}},
		{"pod: requests default to limits, requests given are kept", now,
			pod(corev1.ResourceList{"example.com/gpu": gpu, corev1.ResourceMemory: mem}, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}, ""),
			pod(corev1.ResourceList{"example.com/gpu": gpu, corev1.ResourceMemory: mem},
				corev1.ResourceList{"example.com/gpu": gpu, corev1.ResourceMemory: resource.MustParse("512Mi")}, corev1.DefaultSchedulerName)},
		{"pod: a scheduler name is kept, requests without limits too", now,
			pod(nil, corev1.ResourceList{corev1.ResourceCPU: cpu}, "my-scheduler"),
			pod(nil, corev1.ResourceList{corev1.ResourceCPU: cpu}, "my-scheduler")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopyObject()
			got := Default(tc.in, tc.now)
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if !apiequality.Semantic.DeepEqual(tc.in, before) {
				t.Errorf("Default changed its input")
			}
			if !apiequality.Semantic.DeepEqual(Default(got, tc.now), got) {
				t.Errorf("defaulting twice differs from once")
			}
		})
	}
}
