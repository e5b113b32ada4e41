package fragscore

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
)

// fakeDRA is the part of the scheduler's DRA manager the plugin reads. The embedded interfaces are nil:
// a method the plugin must not call panics.
type fakeDRA struct {
	fwk.SharedDRAManager
	fwk.ResourceClaimTracker
	slices  []*resourceapi.ResourceSlice
	classes []*resourceapi.DeviceClass
	claims  []*resourceapi.ResourceClaim
	pending map[types.UID]*resourceapi.AllocationResult
}

func (f *fakeDRA) ResourceClaims() fwk.ResourceClaimTracker    { return f }
func (f *fakeDRA) ResourceSlices() fwk.ResourceSliceLister     { return sliceLister{f} }
func (f *fakeDRA) DeviceClasses() fwk.DeviceClassLister        { return classLister{f} }
func (f *fakeDRA) List() ([]*resourceapi.ResourceClaim, error) { return f.claims, nil }
func (f *fakeDRA) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	for _, c := range f.claims {
		if c.Namespace == namespace && c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("not found")
}
func (f *fakeDRA) GetPendingAllocation(uid types.UID) *resourceapi.AllocationResult {
	return f.pending[uid]
}

type sliceLister struct{ f *fakeDRA }

func (l sliceLister) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	return l.f.slices, nil
}

type classLister struct{ f *fakeDRA }

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l.f.classes, nil }
func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l.f.classes {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("not found")
}

type fakeHandle struct {
	fwk.Handle
	dra *fakeDRA
}

func (h fakeHandle) SharedDRAManager() fwk.SharedDRAManager { return h.dra }

const driver = "gpu.example.com"

func gpuNode(name string) (*v1.Node, *resourceapi.ResourceSlice) {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("32Gi"), v1.ResourcePods: resource.MustParse("110")}
	yes := true
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &name, Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "gpu-0", AllowMultipleAllocations: &yes,
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"shares": {Value: resource.MustParse("1000")}}}}},
	}
	return n, s
}

func shareClaim(name string, shares int64) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
			Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"shares": *resource.NewQuantity(shares, resource.DecimalSI)}},
		}}}}},
	}
}

// halfOn is the allocation of half of node's GPU.
func halfOn(node string) *resourceapi.AllocationResult {
	share := types.UID("00000000-0000-0000-0000-000000000001")
	return &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: driver, Pool: node, Device: "gpu-0", ShareID: &share,
		ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"shares": resource.MustParse("500")},
	}}}}
}

func podWith(claim string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: claim, UID: types.UID("pod-" + claim)},
		Spec: v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}}}
}

// scores runs PreScore, Score and NormalizeScore for the pod on the nodes, as the framework does.
func scores(t *testing.T, p *Plugin, pod *v1.Pod, nodes ...*v1.Node) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	infos := make([]fwk.NodeInfo, len(nodes))
	for i, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		infos[i] = ni
	}
	if s := p.PreScore(ctx, state, pod, infos); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	list := make(fwk.NodeScoreList, len(nodes))
	for i, ni := range infos {
		v, s := p.Score(ctx, state, pod, ni)
		if !s.IsSuccess() {
			t.Fatalf("Score %s: %v", ni.Node().Name, s)
		}
		list[i] = fwk.NodeScore{Name: ni.Node().Name, Score: v}
	}
	if s := p.NormalizeScore(ctx, state, pod, list); !s.IsSuccess() {
		t.Fatalf("NormalizeScore: %v", s)
	}
	out := map[string]int64{}
	for _, s := range list {
		out[s.Name] = s.Score
	}
	return out
}

func gpuClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
		CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`}}}}}
}

// wholeGPUMix is a mix of tasks that each want one whole GPU: a GPU in part used is a fragment for it.
var wholeGPUMix = []headroom.Shape{{Name: "whole", Weight: 1, Requests: []headroom.Request{{Count: 1}}}}

// A half GPU fills the GPU already half used (no new fragment) rather than break a whole one, whether
// the other half was written to the claim's status, assumed by the DRA plugin, or only reserved in a
// binding cycle (a pending allocation, which the tracker's List does not show).
func TestScorePrefersTheNodeWhereFragmentationGrowsLeast(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pending bool
	}{
		{name: "allocation in the claim's status"},
		{name: "pending allocation of a pod in its binding cycle", pending: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, sa := gpuNode("node-a")
			b, sb := gpuNode("node-b")
			used := shareClaim("used", 500)
			dra := &fakeDRA{slices: []*resourceapi.ResourceSlice{sa, sb}, classes: []*resourceapi.DeviceClass{gpuClass()}}
			if tc.pending {
				dra.pending = map[types.UID]*resourceapi.AllocationResult{used.UID: halfOn("node-a")}
			} else {
				used.Status.Allocation = halfOn("node-a")
			}
			dra.claims = []*resourceapi.ResourceClaim{used, shareClaim("new", 500)}
			pl, err := New(context.Background(), nil, fakeHandle{dra: dra})
			if err != nil {
				t.Fatal(err)
			}
			p := pl.(*Plugin)
			p.args.Mix, p.mix = MixOf(wholeGPUMix), wholeGPUMix
			got := scores(t, p, podWith("new"), a, b)
			if got["node-a"] != 100 || got["node-b"] != 0 {
				t.Errorf("scores %v, want node-a 100 (fills its half-used GPU), node-b 0 (breaks a whole GPU)", got)
			}
			if used.Status.Allocation == nil && !tc.pending {
				t.Error("the claim was modified")
			}
			if tc.pending && used.Status.Allocation != nil {
				t.Error("the tracker's claim was modified")
			}
		})
	}
}

func TestPreScoreSkipsPodsWithoutClaimsToAllocate(t *testing.T) {
	done := shareClaim("done", 500)
	done.Status.Allocation = halfOn("node-a")
	dra := &fakeDRA{classes: []*resourceapi.DeviceClass{gpuClass()}, claims: []*resourceapi.ResourceClaim{done}}
	pl, err := New(context.Background(), nil, fakeHandle{dra: dra})
	if err != nil {
		t.Fatal(err)
	}
	for name, pod := range map[string]*v1.Pod{
		"no claims":           {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cpu"}},
		"its claim allocated": podWith("done"),
	} {
		if s := pl.(*Plugin).PreScore(context.Background(), framework.NewCycleState(), pod, nil); s.Code() != fwk.Skip {
			t.Errorf("%s: PreScore %v, want Skip", name, s)
		}
	}
}

func TestNormalizeScore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want []int64
	}{
		{name: "stretched over 0..100", in: []int64{40, 45, 50}, want: []int64{0, 50, 100}},
		{name: "all alike all 100", in: []int64{30, 30}, want: []int64{100, 100}},
		{name: "one node", in: []int64{7}, want: []int64{100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := make(fwk.NodeScoreList, len(tc.in))
			for i, v := range tc.in {
				list[i] = fwk.NodeScore{Name: fmt.Sprint(i), Score: v}
			}
			if s := (&Plugin{}).NormalizeScore(context.Background(), nil, nil, list); !s.IsSuccess() {
				t.Fatal(s)
			}
			for i, s := range list {
				if s.Score != tc.want[i] {
					t.Errorf("node %d: %d, want %d", i, s.Score, tc.want[i])
				}
			}
		})
	}
}

func TestArgsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args Args
		ok   bool
	}{
		{name: "empty: fragmentation with a learned mix", ok: true},
		{name: "topology", args: Args{Mode: Topology}, ok: true},
		{name: "unknown mode", args: Args{Mode: "Packing"}},
		{name: "mix whose weights do not sum to 1", args: Args{Mix: []MixShape{{Name: "x", Weight: 0.5, Requests: []MixRequest{{Count: 1}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.args.validate()
			if (err == nil) != tc.ok {
				t.Errorf("validate: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// Without a configured mix, the mix is the shapes of the pods scored, weighted by how many pods had each.
func TestLearnedMix(t *testing.T) {
	a, sa := gpuNode("node-a")
	dra := &fakeDRA{slices: []*resourceapi.ResourceSlice{sa}, classes: []*resourceapi.DeviceClass{gpuClass()},
		claims: []*resourceapi.ResourceClaim{shareClaim("h1", 500), shareClaim("h2", 500), shareClaim("q", 250)}}
	pl, err := New(context.Background(), nil, fakeHandle{dra: dra})
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Plugin)
	for _, c := range []string{"h1", "h2", "q"} {
		scores(t, p, podWith(c), a)
	}
	got := map[string]float64{}
	for _, s := range p.mix {
		got[s.Requests[0].Amount.String()] = s.Weight
	}
	if len(got) != 2 || got["500"] < 0.66 || got["500"] > 0.67 || got["250"] < 0.33 || got["250"] > 0.34 {
		t.Errorf("learned mix %v, want shares 500 weighted 2/3 and 250 weighted 1/3", got)
	}
}

// Topology mode rates a node by the innermost topology domain the pod's devices there share.
func TestTopologyMode(t *testing.T) {
	node := func(name string, numa ...int64) (*v1.Node, *resourceapi.ResourceSlice) {
		n, s := gpuNode(name)
		s.Spec.Devices = nil
		root := "pci-" + name
		for i, v := range numa {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				resourceapi.QualifiedName(allocator.AttributeNUMANode): {IntValue: &v},
				resourceapi.QualifiedName(allocator.AttributePCIeRoot): {StringValue: &root},
			}})
		}
		return n, s
	}
	a, sa := node("node-a", 0, 0)
	b, sb := node("node-b", 0, 1)
	two := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "two", UID: "two"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2}}}}},
	}
	dra := &fakeDRA{slices: []*resourceapi.ResourceSlice{sa, sb}, classes: []*resourceapi.DeviceClass{gpuClass()}, claims: []*resourceapi.ResourceClaim{two}}
	pl, err := New(context.Background(), &runtime.Unknown{Raw: []byte(`{"mode": "Topology"}`)}, fakeHandle{dra: dra})
	if err != nil {
		t.Fatal(err)
	}
	got := scores(t, pl.(*Plugin), podWith("two"), a, b)
	if got["node-a"] != 100 || got["node-b"] != 0 {
		t.Errorf("scores %v, want node-a 100 (both GPUs on one NUMA node), node-b 0 (two NUMA nodes)", got)
	}
}

// A claim the tracker no longer lists (deleted, or deallocated) frees its devices in the plugin's view
// at the next pod: node-a's half-used GPU is whole again, so both nodes rate alike.
func TestViewForgetsClaimsNoLongerListed(t *testing.T) {
	a, sa := gpuNode("node-a")
	b, sb := gpuNode("node-b")
	used := shareClaim("used", 500)
	used.Status.Allocation = halfOn("node-a")
	dra := &fakeDRA{slices: []*resourceapi.ResourceSlice{sa, sb}, classes: []*resourceapi.DeviceClass{gpuClass()}}
	dra.claims = []*resourceapi.ResourceClaim{used, shareClaim("new", 500)}
	pl, err := New(context.Background(), nil, fakeHandle{dra: dra})
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Plugin)
	p.args.Mix, p.mix = MixOf(wholeGPUMix), wholeGPUMix
	if got := scores(t, p, podWith("new"), a, b); got["node-a"] != 100 || got["node-b"] != 0 {
		t.Fatalf("with the half-used GPU: scores %v, want node-a 100, node-b 0", got)
	}
	dra.claims = dra.claims[1:]
	if got := scores(t, p, podWith("new"), a, b); got["node-a"] != got["node-b"] {
		t.Errorf("after the claim was deleted: scores %v, want both alike", got)
	}
	if _, ok := p.view.snap.Claim("default", "used"); ok {
		t.Error("the deleted claim is still in the view's snapshot")
	}
}
