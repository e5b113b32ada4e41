package pods_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

func gang(minCount int32, topologyKey string, claims ...schedulingapi.PodGroupResourceClaim) *schedulingapi.PodGroup {
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gang", UID: "uid-gang"}}
	g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: minCount}
	if topologyKey != "" {
		g.Spec.SchedulingConstraints = &schedulingapi.PodGroupSchedulingConstraints{Topology: []schedulingapi.TopologyConstraint{{Key: topologyKey}}}
	}
	g.Spec.ResourceClaims = claims
	return g
}

// basic is a PodGroup named "gang" with the basic scheduling policy.
func basic(topologyKey string) *schedulingapi.PodGroup {
	g := gang(0, topologyKey)
	g.Spec.SchedulingPolicy = schedulingapi.PodGroupSchedulingPolicy{Basic: &schedulingapi.BasicSchedulingPolicy{}}
	return g
}

func members(names []string, claims ...string) []*v1.Pod {
	var out []*v1.Pod
	for _, n := range names {
		p := pod(n, claims...)
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr("gang")}
		out = append(out, p)
	}
	return out
}

// partitionedGPU is one GPU on the node with 8Gi of memory, offered whole (listed first) or as two
// halves; the class "gpu" selects all three.
func partitionedGPU(nodeName string) []*resourceapi.ResourceSlice {
	mem := func(q string) map[string]resourceapi.Counter {
		return map[string]resourceapi.Counter{"memory": {Value: resource.MustParse(q)}}
	}
	counters := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-counters"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &nodeName,
			Pool:           resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 2},
			SharedCounters: []resourceapi.CounterSet{{Name: "gpu-0", Counters: mem("8Gi")}}},
	}
	dev := func(name, q string) resourceapi.Device {
		return resourceapi.Device{Name: name, ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: mem(q)}}}
	}
	devs := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-devices"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &nodeName,
			Pool:    resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 2},
			Devices: []resourceapi.Device{dev("whole", "8Gi"), dev("half-a", "4Gi"), dev("half-b", "4Gi")}},
	}
	return []*resourceapi.ResourceSlice{counters, devs}
}

func placedNodes(gp *pods.GroupPlacement) []string {
	var out []string
	for _, p := range gp.Pods {
		if p == nil {
			out = append(out, "-")
			continue
		}
		out = append(out, p.Node)
	}
	return out
}

func TestSearchGroupPlacement(t *testing.T) {
	zoned := func() []*v1.Node {
		return []*v1.Node{
			node("n1", map[string]string{"zone": "a"}), node("n2", map[string]string{"zone": "b"}),
			node("n3", map[string]string{"zone": "a"}), node("n4", map[string]string{"zone": "b"}),
		}
	}
	tests := []struct {
		name       string
		opts       pods.Options
		gpus       int
		nodes      []*v1.Node
		slices     []*resourceapi.ResourceSlice
		taken      []string // nodes whose GPU gpu-0 is allocated before
		group      *schedulingapi.PodGroup
		pods       []*v1.Pod
		wantNodes  []string
		wantDomain string
		wantErr    error
	}{
		{name: "two pods that each need part of one partitionable GPU both fit (the first does not take the whole GPU)",
			nodes: nodes(1), slices: partitionedGPU("n1"), group: gang(2, ""), pods: members([]string{"a", "b"}, "gpu=template:one-gpu"),
			wantNodes: []string{"n1", "n1"}},
		{name: "a pod moves so that the next one fits (backtracking across pods)", gpus: 1, nodes: nodes(2), group: gang(2, ""),
			pods: func() []*v1.Pod {
				ps := members([]string{"a", "b"}, "gpu=template:one-gpu")
				ps[1].Spec.NodeSelector = map[string]string{"zone": "a"} // only n1
				return ps
			}(), wantNodes: []string{"n2", "n1"}},
		{name: "minCount of the pods suffice; the rest is left out", gpus: 1, nodes: nodes(2), group: gang(2, ""),
			pods: members([]string{"a", "b", "c"}, "gpu=template:one-gpu"), wantNodes: []string{"n1", "n2", "-"}},
		{name: "fewer places than minCount: nothing is placed", gpus: 1, nodes: nodes(2), group: gang(3, ""),
			pods: members([]string{"a", "b", "c"}, "gpu=template:one-gpu"), wantErr: pods.ErrGroupUnschedulable},
		{name: "fewer pods than minCount", gpus: 1, nodes: nodes(2), group: gang(3, ""),
			pods: members([]string{"a", "b"}, "gpu=template:one-gpu"), wantErr: pods.ErrGroupUnschedulable},
		{name: "a topology constraint keeps all pods in one domain, the first by value", gpus: 1, nodes: zoned(), group: gang(2, "zone"),
			pods: members([]string{"a", "b"}, "gpu=template:one-gpu"), wantNodes: []string{"n1", "n3"}, wantDomain: "a"},
		{name: "the next domain when the first has too few places", gpus: 1, nodes: zoned(), taken: []string{"n3"}, group: gang(2, "zone"),
			pods: members([]string{"a", "b"}, "gpu=template:one-gpu"), wantNodes: []string{"n2", "n4"}, wantDomain: "b"},
		{name: "no domain has enough places", gpus: 1, nodes: zoned(), taken: []string{"n3", "n4"}, group: gang(2, "zone"),
			pods: members([]string{"a", "b"}, "gpu=template:one-gpu"), wantErr: pods.ErrGroupUnschedulable},
		{name: "basic policy: the pod that fits is placed, the other stays pending (GangScheduling's minCount 1)", gpus: 1, nodes: nodes(1), group: basic(""),
			pods: members([]string{"a", "b"}, "gpu=template:one-gpu"), wantNodes: []string{"n1", "-"}},
		{name: "basic policy: no pod fits", gpus: 1, nodes: nodes(1), taken: []string{"n1"}, group: basic(""),
			pods: members([]string{"a", "b"}, "gpu=template:one-gpu"), wantErr: pods.ErrGroupUnschedulable},
		{name: "basic policy: every pod that fits is placed", gpus: 1, nodes: nodes(2), group: basic(""),
			pods: members([]string{"a", "b", "c"}, "gpu=template:one-gpu"), wantNodes: []string{"n1", "n2", "-"}},
		{name: "a step budget makes the search give up, which is not a no", opts: pods.Options{StepBudget: 2}, gpus: 1, nodes: zoned(), taken: []string{"n3", "n4"}, group: gang(2, "zone"),
			pods: members([]string{"a", "b"}, "gpu=template:one-gpu"), wantErr: allocator.ErrSearchBudget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(t, tt.opts, tt.gpus, tt.nodes...)
			for _, s := range tt.slices {
				must(t, c.Snapshot().AddOrUpdateSlice(s))
			}
			must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
			must(t, c.AddOrUpdatePodGroup(tt.group))
			for _, n := range tt.taken {
				held := claim("held-"+n, 1)
				held.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: driver, Pool: n, Device: "gpu-0"}}}}
				must(t, c.Snapshot().AddOrUpdateClaim(held))
			}
			before := len(c.Snapshot().Claims(""))
			gp, err := c.SearchGroupPlacement(context.Background(), tt.group, tt.pods, nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if len(c.Snapshot().Claims("")) != before {
				t.Error("SearchGroupPlacement changed the snapshot")
			}
			if err != nil {
				return
			}
			if got := placedNodes(gp); !slices.Equal(got, tt.wantNodes) || gp.Domain != tt.wantDomain {
				t.Errorf("placed on %v in domain %q, want %v in %q", got, gp.Domain, tt.wantNodes, tt.wantDomain)
			}
			must(t, c.AssumeGroup(gp))
		})
	}
}

func TestPlaceOneByOneMissesThePartitionedFit(t *testing.T) {
	// What kube-scheduler does with pods one at a time: the first takes the whole GPU.
	c := cluster(t, pods.Options{}, 0, nodes(1)...)
	for _, s := range partitionedGPU("n1") {
		must(t, c.Snapshot().AddOrUpdateSlice(s))
	}
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	must(t, c.AddOrUpdatePodGroup(gang(2, "")))
	ps := members([]string{"a", "b"}, "gpu=template:one-gpu")
	first, err := c.Place(context.Background(), ps[0])
	must(t, err)
	if d := devices(first); !slices.Equal(d, []string{"n1/whole"}) {
		t.Fatalf("first pod got %v, want the whole GPU", d)
	}
	must(t, c.Assume(first))
	if _, err := c.Place(context.Background(), ps[1]); !errors.Is(err, pods.ErrNoNode) {
		t.Fatalf("second pod: %v, want ErrNoNode", err)
	}
}

func TestSearchGroupPlacementClaimsAllocatedOnce(t *testing.T) {
	g := gang(2, "", schedulingapi.PodGroupResourceClaim{Name: "fabric", ResourceClaimTemplateName: ptr("one-gpu")})
	c := cluster(t, pods.Options{}, 0, nodes(2)...)
	// One network-attached GPU that every node reaches, plus one GPU per node.
	all := true
	must(t, c.Snapshot().AddOrUpdateSlice(&resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "fabric"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, AllNodes: &all,
			Pool:    resourceapi.ResourcePool{Name: "fabric", Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "fabric-0"}}},
	}))
	must(t, c.Snapshot().AddOrUpdateSlice(gpus("n1", 1)))
	must(t, c.Snapshot().AddOrUpdateSlice(gpus("n2", 1)))
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	must(t, c.AddOrUpdatePodGroup(g))
	ps := members([]string{"a", "b"}, "fabric=template:one-gpu", "own=template:one-gpu")
	gp, err := c.SearchGroupPlacement(context.Background(), g, ps, nil)
	must(t, err)
	fabric := map[string]bool{}
	for _, p := range gp.Pods {
		for _, pc := range p.Claims {
			if pc.Name != "fabric" {
				if len(pc.Claim.Status.ReservedFor) != 1 || pc.Claim.Status.ReservedFor[0].Resource != "pods" {
					t.Errorf("own claim %s reserved for %+v, want its pod", pc.Claim.Name, pc.Claim.Status.ReservedFor)
				}
				continue
			}
			fabric[pc.Claim.Name] = true
			want := []resourceapi.ResourceClaimConsumerReference{{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: "gang", UID: "uid-gang"}}
			if !slices.Equal(pc.Claim.Status.ReservedFor, want) {
				t.Errorf("group claim reserved for %+v, want %+v", pc.Claim.Status.ReservedFor, want)
			}
			if r := pc.Claim.Status.Allocation.Devices.Results; len(r) != 1 || r[0].Device != "fabric-0" {
				t.Errorf("group claim got %+v, want fabric-0", r)
			}
		}
	}
	if len(fabric) != 1 {
		t.Errorf("group claims %v, want one", fabric)
	}
	if got := placedNodes(gp); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("nodes %v, want n1 n2", got)
	}
}

func TestSearchGroupPlacementCancelled(t *testing.T) {
	c := cluster(t, pods.Options{}, 1, nodes(2)...)
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	g := gang(2, "")
	must(t, c.AddOrUpdatePodGroup(g))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.SearchGroupPlacement(ctx, g, members([]string{"a", "b"}, "gpu=template:one-gpu"), nil)
	if !errors.Is(err, context.Canceled) || errors.Is(err, pods.ErrGroupUnschedulable) {
		t.Errorf("error %v, want context.Canceled only", err)
	}
}
