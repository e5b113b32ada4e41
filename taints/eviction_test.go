package taints

import (
	"math"
	"reflect"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func secs(s int64) *int64 { return &s }

func slice(pool string, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.nvidia.com", Pool: resourceapi.ResourcePool{Name: pool}, Devices: devices}}
}

func claim(name string, pods []string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p, UID: types.UID("uid-" + p)})
	}
	return c
}

func result(device string, tols ...resourceapi.DeviceToleration) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "node-1", Device: device, Tolerations: tols}
}

func TestPlan(t *testing.T) {
	added := metav1.NewTime(t0.Add(-time.Minute))
	drain := resourceapi.DeviceTaint{Key: "drain", Effect: noExecute, TimeAdded: &added}
	tests := []struct {
		name      string
		taint     resourceapi.DeviceTaint
		tols      []resourceapi.DeviceToleration
		wantNow   bool
		wantLater time.Time
	}{
		{name: "an untolerated NoExecute taint evicts at timeAdded, which is now", taint: drain, wantNow: true},
		{name: "NoExecute with a toleration of 300s evicts at timeAdded+300s",
			taint: drain, tols: []resourceapi.DeviceToleration{{Key: "drain", Operator: exists, Effect: noExecute, TolerationSeconds: secs(300)}}, wantLater: added.Add(300 * time.Second)},
		{name: "the smallest tolerationSeconds wins",
			taint: drain, tols: []resourceapi.DeviceToleration{{Operator: exists, Effect: noExecute, TolerationSeconds: secs(600)}, {Key: "drain", Operator: exists, Effect: noExecute, TolerationSeconds: secs(120)}}, wantLater: added.Add(120 * time.Second)},
		{name: "a toleration whose time has passed evicts now",
			taint: drain, tols: []resourceapi.DeviceToleration{{Operator: exists, Effect: noExecute, TolerationSeconds: secs(30)}}, wantNow: true},
		{name: "negative tolerationSeconds count as zero",
			taint: drain, tols: []resourceapi.DeviceToleration{{Operator: exists, Effect: noExecute, TolerationSeconds: secs(-5)}}, wantNow: true},
		{name: "a NoExecute toleration without seconds tolerates forever",
			taint: drain, tols: []resourceapi.DeviceToleration{{Operator: exists, Effect: noExecute}, {Operator: exists, Effect: noExecute, TolerationSeconds: secs(1)}}},
		// 9,223,372,036 s is the longest time.Duration in whole seconds.
		{name: "a toleration of math.MaxInt64 seconds evicts about 292 years later, not now",
			taint: drain, tols: []resourceapi.DeviceToleration{{Operator: exists, Effect: noExecute, TolerationSeconds: secs(math.MaxInt64)}}, wantLater: added.Add(9223372036 * time.Second)},
		{name: "a toleration one second longer than a time.Duration holds is clamped to it",
			taint: drain, tols: []resourceapi.DeviceToleration{{Operator: exists, Effect: noExecute, TolerationSeconds: secs(9223372037)}}, wantLater: added.Add(9223372036 * time.Second)},
		{name: "a toleration a time.Duration holds exactly is kept",
			taint: drain, tols: []resourceapi.DeviceToleration{{Operator: exists, Effect: noExecute, TolerationSeconds: secs(9223372035)}}, wantLater: added.Add(9223372035 * time.Second)},
		{name: "a toleration with an empty effect does not prevent eviction",
			taint: drain, tols: []resourceapi.DeviceToleration{{Operator: exists}}, wantNow: true},
		{name: "NoSchedule never evicts", taint: resourceapi.DeviceTaint{Key: "k", Effect: noSchedule, TimeAdded: &added}},
		{name: "None never evicts", taint: resourceapi.DeviceTaint{Key: "k", Effect: none, TimeAdded: &added}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slices := []*resourceapi.ResourceSlice{slice("node-1", resourceapi.Device{Name: "gpu-0", Taints: []resourceapi.DeviceTaint{tc.taint}})}
			plan, err := (*Evaluator)(nil).Plan(t0, slices, []*resourceapi.ResourceClaim{claim("train", []string{"p"}, result("gpu-0", tc.tols...))})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantNow != (len(plan.Now) == 1) {
				t.Fatalf("now: %+v", plan.Now)
			}
			if tc.wantLater.IsZero() != (len(plan.Later) == 0) || (len(plan.Later) == 1 && !plan.Later[0].At.Equal(tc.wantLater)) {
				t.Fatalf("later: %+v, want at %v", plan.Later, tc.wantLater)
			}
			if (tc.wantNow || !tc.wantLater.IsZero()) && (len(plan.Pods) != 1 || plan.Pods[0].Name != "p") {
				t.Fatalf("pods: %+v", plan.Pods)
			}
		})
	}
}

func TestPlanWithRules(t *testing.T) {
	added := metav1.NewTime(t0)
	e, err := NewEvaluator([]*resourceapi.DeviceTaintRule{
		{ObjectMeta: metav1.ObjectMeta{Name: "drain-gpu-3", Generation: 2}, Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: sp("gpu.nvidia.com"), Pool: sp("node-1"), Device: sp("gpu-3")},
			Taint:          resourceapi.DeviceTaint{Key: "maintenance", Effect: noExecute, TimeAdded: &added}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "probe-node-1"}, Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Pool: sp("node-1")},
			Taint:          resourceapi.DeviceTaint{Key: "probe", Effect: none, TimeAdded: &added}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	slices := []*resourceapi.ResourceSlice{slice("node-1", resourceapi.Device{Name: "gpu-2"}, resourceapi.Device{Name: "gpu-3"})}
	claims := []*resourceapi.ResourceClaim{
		claim("a", []string{"pa"}, result("gpu-2")),
		claim("b", []string{"pb1", "pb2"}, result("gpu-3")),
		claim("c", []string{"pc"}, result("gpu-3", resourceapi.DeviceToleration{Key: "maintenance", Operator: exists, Effect: noExecute, TolerationSeconds: secs(3600)})),
		{ObjectMeta: metav1.ObjectMeta{Name: "unallocated"}},
	}
	plan, err := e.Plan(t0, slices, claims)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Now) != 1 || plan.Now[0].Claim.Name != "b" || plan.Now[0].Rule != "drain-gpu-3" || plan.Now[0].Device.Device != "gpu-3" {
		t.Fatalf("now: %+v", plan.Now)
	}
	if len(plan.Later) != 1 || plan.Later[0].Claim.Name != "c" || !plan.Later[0].At.Equal(t0.Add(time.Hour)) {
		t.Fatalf("later: %+v", plan.Later)
	}
	var pods []string
	for _, p := range plan.Pods {
		pods = append(pods, p.Name)
	}
	if !reflect.DeepEqual(pods, []string{"pb1", "pb2", "pc"}) {
		t.Fatalf("pods %v", pods)
	}
	drain := plan.RuleStatus["drain-gpu-3"].Conditions[0]
	if drain.Type != "EvictionInProgress" || drain.Status != metav1.ConditionTrue || drain.ObservedGeneration != 2 || drain.Reason != "PodsPendingEviction" || drain.Message != "3 pods need to be evicted in 1 namespace." {
		t.Fatalf("drain status %+v", drain)
	}
	probe := plan.RuleStatus["probe-node-1"].Conditions[0]
	if probe.Status != metav1.ConditionFalse || probe.Reason != "NoEffect" ||
		probe.Message != "2 published devices selected. 3 allocated devices selected. 4 pods would be evicted in 1 namespace if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update." {
		t.Fatalf("probe status %+v", probe)
	}
}

func TestPlanPodTakesItsEarliestClaim(t *testing.T) {
	early, late := metav1.NewTime(t0.Add(time.Minute)), metav1.NewTime(t0.Add(time.Hour))
	slices := []*resourceapi.ResourceSlice{slice("node-1",
		resourceapi.Device{Name: "gpu-0", Taints: []resourceapi.DeviceTaint{{Key: "k", Effect: noExecute, TimeAdded: &late}}},
		resourceapi.Device{Name: "gpu-1", Taints: []resourceapi.DeviceTaint{{Key: "k", Effect: noExecute, TimeAdded: &early}}})}
	plan, err := (*Evaluator)(nil).Plan(t0, slices, []*resourceapi.ResourceClaim{claim("x", []string{"p"}, result("gpu-0")), claim("y", []string{"p"}, result("gpu-1"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Pods) != 1 || !plan.Pods[0].At.Equal(early.Time) {
		t.Fatalf("pods %+v", plan.Pods)
	}
	if len(plan.Later) != 2 || plan.Later[0].Claim.Name != "y" {
		t.Fatalf("later %+v", plan.Later)
	}
}

func TestPlanRulesMatchUnpublishedDevices(t *testing.T) {
	added := metav1.NewTime(t0)
	e, err := NewEvaluator([]*resourceapi.DeviceTaintRule{{ObjectMeta: metav1.ObjectMeta{Name: "drain-node-1"}, Spec: resourceapi.DeviceTaintRuleSpec{
		DeviceSelector: &resourceapi.DeviceTaintSelector{Pool: sp("node-1")},
		Taint:          resourceapi.DeviceTaint{Key: "drain", Effect: noExecute, TimeAdded: &added}}}})
	if err != nil {
		t.Fatal(err)
	}
	// The node's slice is gone (the node was removed), the claim still holds gpu-0.
	plan, err := e.Plan(t0, nil, []*resourceapi.ResourceClaim{claim("orphan", []string{"p"}, result("gpu-0"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Now) != 1 || plan.Now[0].Rule != "drain-node-1" {
		t.Fatalf("now %+v", plan.Now)
	}
}

// TestPlanRuleStatusReasons checks each reason and the singular forms of the controller's messages
// (kube-controller-manager's devicetainteviction updateRuleStatus): a None rule counts only the newest
// generation of a pool, a NoSchedule rule says it never evicts, a NoExecute rule without pods has not started.
func TestPlanRuleStatusReasons(t *testing.T) {
	added := metav1.NewTime(t0)
	rule := func(name string, effect resourceapi.DeviceTaintEffect, device string) *resourceapi.DeviceTaintRule {
		return &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Pool: sp("node-1"), Device: sp(device)},
			Taint:          resourceapi.DeviceTaint{Key: "k", Effect: effect, TimeAdded: &added}}}
	}
	e, err := NewEvaluator([]*resourceapi.DeviceTaintRule{
		rule("probe-gpu-0", none, "gpu-0"), rule("fence-gpu-0", noSchedule, "gpu-0"),
		rule("drain-gpu-9", noExecute, "gpu-9"), rule("drain-gpu-0", noExecute, "gpu-0")})
	if err != nil {
		t.Fatal(err)
	}
	old := slice("node-1", resourceapi.Device{Name: "gpu-0"})
	current := slice("node-1", resourceapi.Device{Name: "gpu-0"})
	current.Spec.Pool.Generation = 1
	other := claim("b", []string{"q"}, result("gpu-0"))
	other.Namespace = "serving"
	plan, err := e.Plan(t0, []*resourceapi.ResourceSlice{old, current}, []*resourceapi.ResourceClaim{claim("a", []string{"p"}, result("gpu-0")), other})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]string{
		"probe-gpu-0": {"False", "NoEffect", "1 published device selected. 2 allocated devices selected. 2 pods would be evicted in 2 different namespaces if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."},
		"fence-gpu-0": {"False", "OtherEffect", "Eviction only happens for the NoExecute effect."},
		"drain-gpu-9": {"False", "NotStarted", ""},
		"drain-gpu-0": {"True", "PodsPendingEviction", "2 pods need to be evicted in 2 different namespaces."},
	}
	for name, w := range want {
		c := plan.RuleStatus[name].Conditions[0]
		if got := [3]string{string(c.Status), c.Reason, c.Message}; got != w {
			t.Errorf("%s: got %q, want %q", name, got, w)
		}
	}
	one, err := e.Plan(t0, []*resourceapi.ResourceSlice{current}, []*resourceapi.ResourceClaim{claim("a", []string{"p"}, result("gpu-0"))})
	if err != nil {
		t.Fatal(err)
	}
	if got := one.RuleStatus["drain-gpu-0"].Conditions[0].Message; got != "1 pod needs to be evicted in 1 namespace." {
		t.Errorf("singular: %q", got)
	}
}
