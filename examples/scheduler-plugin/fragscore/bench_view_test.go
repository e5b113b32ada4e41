package fragscore

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/dralloc/dralloc/allocator/headroom"
)

// perfDRA is a DRA manager over maps, as the scheduler's is over its informers' stores: a claim is
// found by name, not by a scan.
type perfDRA struct {
	fwk.SharedDRAManager
	fwk.ResourceClaimTracker
	slices  map[string]*resourceapi.ResourceSlice
	classes map[string]*resourceapi.DeviceClass
	claims  map[types.NamespacedName]*resourceapi.ResourceClaim
}

func (f *perfDRA) ResourceClaims() fwk.ResourceClaimTracker { return f }
func (f *perfDRA) ResourceSlices() fwk.ResourceSliceLister  { return f }
func (f *perfDRA) DeviceClasses() fwk.DeviceClassLister     { return perfClasses{f} }
func (f *perfDRA) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	out := make([]*resourceapi.ResourceSlice, 0, len(f.slices))
	for _, s := range f.slices {
		out = append(out, s)
	}
	return out, nil
}
func (f *perfDRA) List() ([]*resourceapi.ResourceClaim, error) {
	out := make([]*resourceapi.ResourceClaim, 0, len(f.claims))
	for _, c := range f.claims {
		out = append(out, c)
	}
	return out, nil
}
func (f *perfDRA) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	if c, ok := f.claims[types.NamespacedName{Namespace: namespace, Name: name}]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("ResourceClaim %s/%s not found", namespace, name)
}
func (f *perfDRA) GetPendingAllocation(types.UID) *resourceapi.AllocationResult { return nil }

type perfClasses struct{ f *perfDRA }

func (l perfClasses) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l.f.classes[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("DeviceClass %s not found", name)
}

func (l perfClasses) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(l.f.classes))
	for _, c := range l.f.classes {
		out = append(out, c)
	}
	return out, nil
}

type perfHandle struct {
	fwk.Handle
	dra *perfDRA
}

func (h perfHandle) SharedDRAManager() fwk.SharedDRAManager { return h.dra }

func (f *perfDRA) feed() feed {
	return feed{
		slice:  func(name string) (*resourceapi.ResourceSlice, error) { return f.slices[name], nil },
		class:  func(name string) (*resourceapi.DeviceClass, error) { return f.classes[name], nil },
		rule:   func(string) (*resourceapi.DeviceTaintRule, error) { return nil, nil },
		claims: f,
	}
}

// incrementalView is a view fed by f with every object of f reported, as the informers report their
// initial lists.
func (f *perfDRA) incrementalView() *view {
	v := newFeedView(f.feed())
	for name := range f.slices {
		v.sliceChanged(name)
	}
	for name := range f.classes {
		v.classChanged(name)
	}
	for _, c := range f.claims {
		v.claimChanged(c, false)
	}
	return v
}

// perfCluster is scheduler_perf's SchedulingWithResourceClaimTemplate cluster
// (test/integration/scheduler_perf/dra in k8s.io/kubernetes v1.37.2) at its half_* size: nodes
// with one ResourceSlice of 10 devices each, one DeviceClass, and half the devices allocated to claims
// of one device each; and a pending pod whose claim asks for one device of the class.
func perfCluster(nodes int) (*perfDRA, []fwk.NodeInfo, *v1.Pod) {
	f := &perfDRA{slices: map[string]*resourceapi.ResourceSlice{}, classes: map[string]*resourceapi.DeviceClass{}, claims: map[types.NamespacedName]*resourceapi.ResourceClaim{}}
	f.classes["gpu"] = gpuClass()
	var infos []fwk.NodeInfo
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i)
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("32Gi"), v1.ResourcePods: resource.MustParse("110")}
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		infos = append(infos, ni)
		s := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu", ResourceVersion: "1"},
			Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &name,
				Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1}},
		}
		for d := range 10 {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", d)})
		}
		f.slices[s.Name] = s
		for d := range 5 {
			c := perfClaim(fmt.Sprintf("init-%d-%d", i, d))
			c.Status.Allocation = deviceOn(name, d)
			f.claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
		}
	}
	pending := perfClaim("pending")
	f.claims[types.NamespacedName{Namespace: pending.Namespace, Name: pending.Name}] = pending
	return f, infos, podWith(pending.Name)
}

func perfClaim(name string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), ResourceVersion: "1"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}}},
	}
}

// BenchmarkViewModes measures PreScore, and PreScore with Score on every node (all are feasible), for
// one pod on scheduler_perf's half-used DRA cluster (perfCluster) of 500 and 1,000 nodes, with the
// view kept by listing the DRA manager per pod (the plugin's first way, and still the way with a DRA
// manager other than the scheduler's) and incrementally from events. Between two pods one claim
// changes (the last pod's claim allocated, or freed again): the incremental view reads that claim,
// the listing view every claim and slice. The mix is configured (one whole device), so FGD is built
// once; its memos are filled before the timer starts. Compare the modes with benchstat -col /view.
func BenchmarkViewModes(b *testing.B) {
	ctx := context.Background()
	mix := []headroom.Shape{{Name: "one", Weight: 1, Requests: []headroom.Request{{Count: 1}}}}
	for _, nodes := range []int{500, 1000} {
		for _, mode := range []string{"listing", "incremental"} {
			f, infos, pod := perfCluster(nodes)
			args := Args{Mode: Fragmentation, Mix: MixOf(mix)}
			v := newView()
			if mode == "incremental" {
				v = f.incrementalView()
			}
			p := &Plugin{handle: perfHandle{dra: f}, args: args, view: v, mix: args.shapes()}
			// churn allocates the claim churn on device gpu-9 of node-0 (free until then) on odd calls and
			// deletes it on even ones, as the informer would report it.
			churnKey := types.NamespacedName{Namespace: "default", Name: "churn"}
			churns := 0
			churn := func() {
				churns++
				if churns%2 == 0 {
					old := f.claims[churnKey]
					delete(f.claims, churnKey)
					if v.feed != nil {
						v.claimChanged(old, true)
					}
					return
				}
				c := perfClaim("churn")
				c.ResourceVersion = strconv.Itoa(churns + 1)
				c.Status.Allocation = deviceOn("node-0", 9)
				f.claims[churnKey] = c
				if v.feed != nil {
					v.claimChanged(c, false)
				}
			}
			preScore := func(b *testing.B) fwk.CycleState {
				state := framework.NewCycleState()
				if s := p.PreScore(ctx, state, pod, infos); !s.IsSuccess() {
					b.Fatalf("PreScore: %v", s)
				}
				return state
			}
			// The view and FGD built, and FGD's memos of the nodes' states filled, as after the first
			// pods of a run.
			for range 2 {
				churn()
				state := preScore(b)
				for _, ni := range infos {
					if _, s := p.Score(ctx, state, pod, ni); !s.IsSuccess() {
						b.Fatalf("Score: %v", s)
					}
				}
			}
			name := fmt.Sprintf("nodes=%d/view=%s", nodes, mode)
			b.Run(name+"/op=PreScore", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					churn()
					preScore(b)
				}
			})
			b.Run(name+"/op=PreScoreScore", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					churn()
					state := preScore(b)
					for _, ni := range infos {
						if _, s := p.Score(ctx, state, pod, ni); !s.IsSuccess() {
							b.Fatalf("Score: %v", s)
						}
					}
				}
			})
		}
	}
}

// BenchmarkWaitingClaims measures PreScore with the incremental view on scheduler_perf's half-used
// cluster of 500 nodes while 0, 500 or 2,500 other pods wait with a claim not allocated yet (as in
// the burst workload 5000pods_500nodes, where 2,500 pods are created at once): what a sync does per
// claim waiting. One claim changes between two pods, as in BenchmarkViewModes.
func BenchmarkWaitingClaims(b *testing.B) {
	ctx := context.Background()
	mix := []headroom.Shape{{Name: "one", Weight: 1, Requests: []headroom.Request{{Count: 1}}}}
	for _, waiting := range []int{0, 500, 2500} {
		f, infos, pod := perfCluster(500)
		for i := range waiting {
			c := perfClaim(fmt.Sprintf("waiting-%d", i))
			f.claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
		}
		args := Args{Mode: Fragmentation, Mix: MixOf(mix)}
		v := f.incrementalView()
		p := &Plugin{handle: perfHandle{dra: f}, args: args, view: v, mix: args.shapes()}
		churnKey := types.NamespacedName{Namespace: "default", Name: "churn"}
		churns := 0
		b.Run(fmt.Sprintf("waiting=%d", waiting), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				churns++
				c := perfClaim("churn")
				c.ResourceVersion = strconv.Itoa(churns + 1)
				if churns%2 == 1 {
					c.Status.Allocation = deviceOn("node-0", 9)
				}
				f.claims[churnKey] = c
				v.claimChanged(c, false)
				if s := p.PreScore(ctx, framework.NewCycleState(), pod, infos); !s.IsSuccess() {
					b.Fatalf("PreScore: %v", s)
				}
			}
		})
	}
}
