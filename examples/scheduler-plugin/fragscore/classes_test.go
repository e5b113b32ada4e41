package fragscore

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
)

// rawScores runs PreScore and Score (not NormalizeScore) for the pod on the nodes.
func rawScores(t *rapid.T, p *Plugin, pod *v1.Pod, infos []fwk.NodeInfo) map[string]int64 {
	ctx := context.Background()
	state := framework.NewCycleState()
	if s := p.PreScore(ctx, state, pod, infos); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	out := map[string]int64{}
	for _, ni := range infos {
		v, s := p.Score(ctx, state, pod, ni)
		if !s.IsSuccess() {
			t.Fatalf("Score %s: %v", ni.Node().Name, s)
		}
		out[ni.Node().Name] = v
	}
	return out
}

// classFleet draws a fleet of mostly identical nodes and a few different ones: GPUs of 1000 shares
// with NUMA node, PCIe root and model attributes that no selector reads (so the allocator's node
// classes do not tell them apart), GPUs in part or wholly allocated, and pods requesting CPU on some
// nodes.
func classFleet(t *rapid.T) (*fakeDRA, []fwk.NodeInfo) {
	dra := &fakeDRA{classes: []*resourceapi.DeviceClass{gpuClass()}}
	n := rapid.IntRange(2, 14).Draw(t, "nodes")
	var infos []fwk.NodeInfo
	for i := range n {
		name := fmt.Sprintf("node-%02d", i)
		odd := rapid.IntRange(0, 3).Draw(t, "odd") == 0 // most nodes are the common kind
		gpus, numaOf, model, cpu := 2, []int64{0, 0}, "a", "8"
		// Most nodes' GPUs have a uuid, which nothing reads but makes them unlike one another for FGD;
		// on the others they have none, and are alike.
		uuids := rapid.IntRange(0, 2).Draw(t, "uuids") > 0
		if odd {
			gpus = rapid.IntRange(1, 3).Draw(t, "gpus")
			numaOf = rapid.SliceOfN(rapid.Int64Range(0, 1), gpus, gpus).Draw(t, "numa")
			model = rapid.SampledFrom([]string{"a", "b"}).Draw(t, "model")
		}
		if rapid.IntRange(0, 3).Draw(t, "bigger") == 0 {
			cpu = "16"
		}
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		node.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("32Gi"), v1.ResourcePods: resource.MustParse("110")}
		yes := true
		root := "pci-0"
		s := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu"},
			Spec:       resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &name, Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1}},
		}
		for g := range gpus {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g), AllowMultipleAllocations: &yes,
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					resourceapi.QualifiedName(allocator.AttributeNUMANode): {IntValue: &numaOf[g]},
					resourceapi.QualifiedName(allocator.AttributePCIeRoot): {StringValue: &root},
					"model": {StringValue: &model},
				},
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"shares": {Value: resource.MustParse("1000")}}})
		}
		if uuids {
			for g := range s.Spec.Devices {
				uuid := fmt.Sprintf("GPU-%s-%d", name, g)
				s.Spec.Devices[g].Attributes["uuid"] = resourceapi.DeviceAttribute{StringValue: &uuid}
			}
		}
		dra.slices = append(dra.slices, s)
		// Devices in use: none, or a share (or all) of some GPUs.
		for g := range gpus {
			used := rapid.SampledFrom([]int64{0, 0, 0, 250, 500, 1000}).Draw(t, "used")
			if used == 0 {
				continue
			}
			c := shareClaim(fmt.Sprintf("used-%s-%d", name, g), used)
			share := types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", g+1))
			c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "gpu", Driver: driver, Pool: name, Device: fmt.Sprintf("gpu-%d", g), ShareID: &share,
				ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"shares": *resource.NewQuantity(used, resource.DecimalSI)},
			}}}}
			dra.claims = append(dra.claims, c)
		}
		var running []*v1.Pod
		if reqCPU := rapid.SampledFrom([]string{"", "", "", "2", "4"}).Draw(t, "requested"); reqCPU != "" {
			running = append(running, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "run-" + name, UID: types.UID("run-" + name)},
				Spec: v1.PodSpec{NodeName: name, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(reqCPU)}}}}}})
		}
		ni := framework.NewNodeInfo(running...)
		ni.SetNode(node)
		infos = append(infos, ni)
	}
	return dra, infos
}

// The scores PreScore computes once per scoreKey are the scores of each node on its own, in both
// modes, on fleets of nodes that the allocator's node classes cannot tell apart but whose device
// attributes, devices in use, allocatable and requested CPU differ.
func TestScoresPerKeyEqualScoresPerNode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dra, infos := classFleet(t)
		count := rapid.Int64Range(1, 2).Draw(t, "count")
		shares := rapid.SampledFrom([]int64{250, 500, 1000}).Draw(t, "shares")
		claim := shareClaim("want", shares)
		claim.Spec.Devices.Requests[0].Exactly.Count = count
		dra.claims = append(dra.claims, claim)
		pod := podWith("want")
		pod.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}}
		// A configured mix whose shapes read CPU and a device attribute, drawn more often than the others.
		mix := `{"mix": [{"name": "whole", "weight": 0.5, "requests": [{"count": 1}], "cpu": "6"},` +
			`{"name": "half", "weight": 0.3, "requests": [{"count": 1, "capacity": "shares", "amount": "500"}]},` +
			`{"name": "b", "weight": 0.2, "requests": [{"count": 1, "attributes": {"model": ["b"]}}]}]}`
		args := rapid.SampledFrom([]string{
			`{"mode": "Topology"}`,
			`{"mode": "Topology", "topologyAttributes": ["model", "` + string(allocator.AttributeNUMANode) + `"]}`,
			`{}`, mix, mix, mix,
		}).Draw(t, "args")
		plugin := func(perNode bool) *Plugin {
			pl, err := New(context.Background(), &runtime.Unknown{Raw: []byte(args)}, fakeHandle{dra: dra})
			if err != nil {
				t.Fatal(err)
			}
			p := pl.(*Plugin)
			p.perNode = perNode
			return p
		}
		want := rawScores(t, plugin(true), pod, infos)
		got := rawScores(t, plugin(false), pod, infos)
		for name, w := range want {
			if got[name] != w {
				t.Fatalf("node %s scores %d per key, %d on its own (all per key %v, per node %v)", name, got[name], w, got, want)
			}
		}
	})
}

// On a fleet where more than half the feasible nodes have keys of their own, PreScore leaves every node
// to Score (which the framework runs for many nodes at once) instead of scoring them one by one, and
// the scores are the same either way; on a fleet of alike nodes it scores once per key.
func TestPreScoreLeavesMostlyDistinctFleetsToScore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		distinct bool
	}{{"alike", false}, {"distinct", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dra := &fakeDRA{classes: []*resourceapi.DeviceClass{gpuClass()}, claims: []*resourceapi.ResourceClaim{shareClaim("want", 500)}}
			var infos []fwk.NodeInfo
			for i := range minNodesForGroups + 4 {
				n, s := gpuNode(fmt.Sprintf("node-%02d", i))
				if tc.distinct {
					// FGD's key holds the node's allocatable CPU: every node its own key.
					n.Status.Allocatable[v1.ResourceCPU] = *resource.NewQuantity(int64(8+i), resource.DecimalSI)
				}
				dra.slices = append(dra.slices, s)
				ni := framework.NewNodeInfo()
				ni.SetNode(n)
				infos = append(infos, ni)
			}
			perNode := map[bool]map[string]int64{}
			for _, pn := range []bool{false, true} {
				pl, err := New(context.Background(), nil, fakeHandle{dra: dra})
				if err != nil {
					t.Fatal(err)
				}
				p := pl.(*Plugin)
				p.perNode = pn
				state := framework.NewCycleState()
				pod := podWith("want")
				if s := p.PreScore(context.Background(), state, pod, infos); !s.IsSuccess() {
					t.Fatalf("PreScore: %v", s)
				}
				d, err := readDemand(state)
				if err != nil {
					t.Fatal(err)
				}
				if !pn && (d.scores == nil) != tc.distinct {
					t.Errorf("PreScore scored %d nodes by key (nil: left to Score), want left to Score: %v", len(d.scores), tc.distinct)
				}
				perNode[pn] = map[string]int64{}
				for _, ni := range infos {
					v, s := p.Score(context.Background(), state, pod, ni)
					if !s.IsSuccess() {
						t.Fatalf("Score: %v", s)
					}
					perNode[pn][ni.Node().Name] = v
				}
			}
			if !reflect.DeepEqual(perNode[false], perNode[true]) {
				t.Errorf("scores %v, per node %v", perNode[false], perNode[true])
			}
		})
	}
}
