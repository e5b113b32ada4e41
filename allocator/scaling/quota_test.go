package scaling_test

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/inventory"
)

func TestClassMatcherAppliesTheClassesSelectors(t *testing.T) {
	a := instance(t, profile(t, "dgxa100"), "a100-1")
	h := instance(t, profile(t, "dgxh100"), "h100-1")
	inv, err := scaling.NewInventory(append(a.Slices, h.Slices...), nvidiaClasses())
	must(t, err)
	// The A100, MIG enabled, publishes 25 placements per GPU and no whole GPU; the H100 the whole
	// GPU and 28 placements.
	if got, want := len(inv.Classes["gpu.nvidia.com"]), 8; got != want {
		t.Errorf("gpu.nvidia.com selects %d devices, want %d", got, want)
	}
	if got, want := len(inv.Classes["mig.nvidia.com"]), 8*25+8*28; got != want {
		t.Errorf("mig.nvidia.com selects %d devices, want %d", got, want)
	}
	bad := nvidiaClasses()[0].DeepCopy()
	bad.Spec.Selectors = append(bad.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: "device.nope"}})
	_, err = scaling.ClassMatcher([]*resourceapi.DeviceClass{bad})
	var ie *allocator.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "DeviceClass gpu.nvidia.com: spec.selectors[1].cel.expression") {
		t.Errorf("err = %v, want an InputError naming the selector", err)
	}
}

func TestCharges(t *testing.T) {
	h := instance(t, profile(t, "dgxh100"), "h100-1")
	a := instance(t, profile(t, "dgxa100"), "a100-1")
	c := newCluster(t, []inventory.Instance{h, a})
	inv, err := scaling.NewInventory(append(h.Slices, a.Slices...), nvidiaClasses())
	must(t, err)
	bind(t, c, extPod("infer", 2))            // through the extended resource
	bind(t, c, claimPod("train", "two-gpus")) // through a claim template
	// A claim of its own, not allocated yet: one GPU, or else two MIG devices.
	choice := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "choice"}}
	choice.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "dev", FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "gpu", DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		{Name: "mig", DeviceClassName: "mig.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
	}}}
	must(t, c.Snapshot().AddOrUpdateClaim(choice))
	chooser := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "chooser", UID: "uid-chooser"}, Spec: v1.PodSpec{
		Containers:     []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "dev"}}}}},
		ResourceClaims: []v1.PodResourceClaim{{Name: "dev", ResourceClaimName: ptr("choice")}},
	}}
	q, err := scaling.Charges(c, inv, []*v1.Pod{claimPod("mig-demo", "mig-devices"), extPod("more", 3), chooser})
	must(t, err)
	for _, tc := range []struct {
		name string
		got  map[string]int64
		want map[string]int64
	}{
		{"allocated in default: 2 GPUs by extended resource and 2 by claim", q.Allocated["default"].Devices, map[string]int64{"gpu.nvidia.com": 4}},
		{"pending in default: the demo's 4 MIG devices and 3 GPUs by extended resource", q.Pending["default"].Devices, map[string]int64{"mig.nvidia.com": 4, "gpu.nvidia.com": 3}},
		{"pending in ml: firstAvailable charges the largest alternative per class", q.Pending["ml"].Devices, map[string]int64{"gpu.nvidia.com": 1, "mig.nvidia.com": 2}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if _, ok := q.Allocated["ml"]; ok {
		t.Error("ml has no allocated claim but is charged")
	}
}

func TestChargebackAndAudit(t *testing.T) {
	a := instance(t, profile(t, "dgxa100"), "a100-1")
	h := instance(t, profile(t, "dgxh100"), "h100-1")
	c := newCluster(t, []inventory.Instance{a, h})
	inv, err := scaling.NewInventory(append(a.Slices, h.Slices...), nvidiaClasses())
	must(t, err)
	job := func(p *v1.Pod) *v1.Pod {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "uid-job", Controller: ptr(true)}}
		return p
	}
	running := []*v1.Pod{
		bind(t, c, job(claimPod("train-0", "two-gpus"))),
		bind(t, c, job(claimPod("train-1", "two-gpus"))),
		bind(t, c, extPod("infer", 1)),
		bind(t, c, claimPod("mig-demo", "mig-devices")),
	}
	cb, err := scaling.NewChargeback(c, inv, running)
	must(t, err)
	var owners []string
	for _, o := range cb.Owners {
		owners = append(owners, o.Owner+":"+strconv.Itoa(o.Pods)+" pods:"+strconv.Itoa(int(o.Devices)))
	}
	if want := []string{"Job/train:2 pods:4", "Pod/infer:1 pods:1", "Pod/mig-demo:1 pods:4"}; !reflect.DeepEqual(owners, want) {
		t.Errorf("owners %v, want %v", owners, want)
	}
	// The demo's MIG devices: 14+14+28+42 multiprocessors of one A100.
	demo := cb.Pods[3].Charge.Capacity["mig.nvidia.com"]
	if sm := demo["multiprocessors"]; sm.Value() != 98 {
		t.Errorf("MIG demo multiprocessors %s, want 98", sm.String())
	}

	audit, err := scaling.Audit(c, inv, append(running, claimPod("pending", "two-gpus")))
	must(t, err)
	for i, want := range []struct {
		claims, extended int64
		declared         int
		missed           bool
	}{{2, 0, 0, true}, {2, 0, 0, true}, {0, 1, 1, false}, {4, 0, 0, true}, {2, 0, 0, true}} {
		e := audit[i]
		if e.ClaimDevices != want.claims || e.ExtendedDevices != want.extended || len(e.Declared) != want.declared || e.Missed != want.missed {
			t.Errorf("%s: %+v, want claims %d extended %d declared %d missed %v", e.Pod, e, want.claims, want.extended, want.declared, want.missed)
		}
	}
	if d := audit[2].Declared; len(d) != 1 || d[0].Resource != "nvidia.com/gpu" || d[0].Count != 1 {
		t.Errorf("infer declares %+v, want nvidia.com/gpu: 1", d)
	}
}

// TestChargesRefusesOnlyTheInvalidPod: one pending pod whose template does not exist (or a nil entry)
// must not keep every namespace from being charged; it is listed with its error, the others charged.
func TestChargesRefusesOnlyTheInvalidPod(t *testing.T) {
	h := instance(t, profile(t, "dgxh100"), "h100-1")
	c := newCluster(t, []inventory.Instance{h})
	inv, err := scaling.NewInventory(h.Slices, nvidiaClasses())
	must(t, err)
	missing := claimPod("typo", "no-such-template")
	q, err := scaling.Charges(c, inv, []*v1.Pod{extPod("first", 2), missing, nil, extPod("last", 1)})
	if err != nil {
		t.Fatalf("Charges failed for every namespace: %v", err)
	}
	if got := q.Pending["default"].Devices["gpu.nvidia.com"]; got != 3 {
		t.Errorf("default pending GPUs %d, want 3 (first and last)", got)
	}
	if len(q.Refused) != 2 {
		t.Fatalf("refused %+v, want typo and the nil entry", q.Refused)
	}
	if r := q.Refused[0]; r.Pod != "default/typo" || !errors.Is(r.Err, pods.ErrTemplateNotFound) || !strings.Contains(r.Err.Error(), "Pod default/typo") {
		t.Errorf("refused[0] = %s: %v, want default/typo naming the missing template", r.Pod, r.Err)
	}
	if r := q.Refused[1]; r.Pod != "pending[2]" || !errors.Is(r.Err, allocator.ErrInvalidInput) || r.Err.Error() != "pending[2]: nil object" {
		t.Errorf("refused[1] = %s: %v, want pending[2]: nil object", r.Pod, r.Err)
	}
}

// TestChargesRefusesAPodPastTheClaimLimit: 20 GPUs through nvidia.com/gpu and 20 MIG devices through the
// class's implicit extended resource make one claim of two requests, 40 devices, past the 32 an
// allocation can hold: no scheduler can allocate it, so it is refused and charges no pending device,
// while a pod of 20 + 12 (32) is charged in full.
func TestChargesRefusesAPodPastTheClaimLimit(t *testing.T) {
	h := instance(t, profile(t, "dgxh100"), "h100-1")
	c := newCluster(t, []inventory.Instance{h})
	inv, err := scaling.NewInventory(h.Slices, nvidiaClasses())
	must(t, err)
	two := func(name string, gpus, migs int64) *v1.Pod {
		p := extPod(name, gpus)
		m := *resource.NewQuantity(migs, resource.DecimalSI)
		r := &p.Spec.Containers[0].Resources
		r.Requests[v1.ResourceName(resourceapi.ResourceDeviceClassPrefix+"mig.nvidia.com")] = m
		r.Limits[v1.ResourceName(resourceapi.ResourceDeviceClassPrefix+"mig.nvidia.com")] = m
		return p
	}
	q, err := scaling.Charges(c, inv, []*v1.Pod{two("forty", 20, 20), two("thirty-two", 20, 12)})
	must(t, err)
	if len(q.Refused) != 1 || q.Refused[0].Pod != "default/forty" ||
		!strings.Contains(q.Refused[0].Err.Error(), "adding 20 devices exceeds the claim limit of 32, with 20 already accounted for") {
		t.Fatalf("refused %+v, want default/forty past the claim limit", q.Refused)
	}
	if got, want := q.Pending["default"].Devices, map[string]int64{"gpu.nvidia.com": 20, "mig.nvidia.com": 12}; !reflect.DeepEqual(got, want) {
		t.Errorf("pending %v, want %v (thirty-two alone)", got, want)
	}
}
