package pods_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"

	"github.com/dralloc/dralloc/allocator/pods"
)

// TestPlaceGroup: kube-scheduler's one pass over a group's pods, each placed as Place places it (here
// FirstFit: the first node by name), without going back.
func TestPlaceGroup(t *testing.T) {
	zoned := func() []*v1.Node {
		return []*v1.Node{
			node("n1", map[string]string{"zone": "a"}), node("n2", map[string]string{"zone": "b"}),
			node("n3", map[string]string{"zone": "a"}), node("n4", map[string]string{"zone": "b"}),
		}
	}
	// b may run in zone a only (n1, n3), and runs first when prioritised.
	zoneA := func(priority int32) []*v1.Pod {
		ps := members([]string{"a", "b"}, "gpu=template:one-gpu")
		ps[1].Spec.NodeSelector = map[string]string{"zone": "a"}
		if priority != 0 {
			ps[1].Spec.Priority = ptr(priority)
		}
		return ps
	}
	// onNode is a pod of the group already bound to the node (no claim).
	onNode := func(name string) *v1.Pod {
		p := members([]string{"old"})[0]
		p.Spec.NodeName = name
		return p
	}
	tests := []struct {
		name       string
		gpus       int
		nodes      []*v1.Node
		slices     []*resourceapi.ResourceSlice
		taken      []string // nodes whose GPU gpu-0 is allocated before
		bound      []*v1.Pod
		group      *schedulingapi.PodGroup
		pods       []*v1.Pod
		wantNodes  []string
		wantDomain string
		// For a group left pending: the plugin's reason, and the node the pass chose for each pod and
		// whether it found no node for it.
		wantReason string
		wantNoNode []bool
	}{
		{name: "the first pod takes the whole partitionable GPU, the second fits nowhere: pending, though the halves hold both",
			nodes: nodes(1), slices: partitionedGPU("n1"), group: gang(2, ""), pods: members([]string{"a", "b"}, "gpu=template:one-gpu"),
			wantReason: "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining", wantNodes: []string{"n1", ""}, wantNoNode: []bool{false, true}},
		{name: "no backtracking: the first pod keeps the node the second needs", gpus: 1, nodes: nodes(2), group: gang(2, ""), pods: zoneA(0),
			wantReason: "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining", wantNodes: []string{"n1", ""}, wantNoNode: []bool{false, true}},
		{name: "higher priority first: the pod that needs n1 takes it, and both fit", gpus: 1, nodes: nodes(2), group: gang(2, ""), pods: zoneA(10),
			wantNodes: []string{"n2", "n1"}},
		{name: "the pass stops once minCount is out of reach: the third pod is not tried", gpus: 1, nodes: nodes(1), group: gang(3, ""),
			pods:       members([]string{"a", "b", "c"}, "gpu=template:one-gpu"),
			wantReason: "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining", wantNodes: []string{"n1", "", ""}, wantNoNode: []bool{false, true, false}},
		{name: "fewer pods than minCount: judged before any pod", gpus: 1, nodes: nodes(2), group: gang(3, ""),
			pods:       members([]string{"a", "b"}, "gpu=template:one-gpu"),
			wantReason: "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining", wantNodes: []string{"", ""}, wantNoNode: []bool{false, false}},
		{name: "minCount of the pods suffice; the pass goes on, and the pod that fits nowhere stays pending", gpus: 1, nodes: nodes(2), group: gang(2, ""),
			pods: members([]string{"a", "b", "c"}, "gpu=template:one-gpu"), wantNodes: []string{"n1", "n2", "-"}},
		{name: "a pod of the group on a node counts as scheduled", gpus: 1, nodes: nodes(2), bound: []*v1.Pod{onNode("n2")}, group: gang(2, ""),
			pods: members([]string{"a"}, "gpu=template:one-gpu"), wantNodes: []string{"n1"}},
		{name: "basic policy: no pod fits", gpus: 1, nodes: nodes(1), taken: []string{"n1"}, group: basic(""),
			pods:       members([]string{"a", "b"}, "gpu=template:one-gpu"),
			wantReason: "minCount (1) cannot be satisfied: 0 scheduled, 0 remaining", wantNodes: []string{"", ""}, wantNoNode: []bool{true, true}},
		{name: "topology: every domain passes with as many pods, the first by value is kept", gpus: 1, nodes: zoned(), group: gang(2, "zone"),
			pods: members([]string{"a", "b"}, "gpu=template:one-gpu"), wantNodes: []string{"n1", "n3"}, wantDomain: "a"},
		{name: "topology: the domain placing most pods is kept", gpus: 1, nodes: zoned(), taken: []string{"n3"}, group: basic("zone"),
			pods: members([]string{"a", "b"}, "gpu=template:one-gpu"), wantNodes: []string{"n2", "n4"}, wantDomain: "b"},
		{name: "topology: the domain of the group's pods on nodes is the only one", gpus: 1, nodes: zoned(), bound: []*v1.Pod{onNode("n2")}, group: gang(2, "zone"),
			pods: members([]string{"a"}, "gpu=template:one-gpu"), wantNodes: []string{"n2"}, wantDomain: "b"},
		{name: "topology: no domain passes; the first domain's reason", gpus: 1, nodes: zoned(), taken: []string{"n3", "n4"}, group: gang(2, "zone"),
			pods:       members([]string{"a", "b"}, "gpu=template:one-gpu"),
			wantReason: "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining", wantDomain: "a", wantNodes: []string{"n1", ""}, wantNoNode: []bool{false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(t, pods.Options{}, tt.gpus, tt.nodes...)
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
			for _, p := range tt.bound {
				must(t, c.AddOrUpdatePod(p))
			}
			before := len(c.Snapshot().Claims(""))
			gp, err := c.PlaceGroup(context.Background(), tt.group, tt.pods)
			if len(c.Snapshot().Claims("")) != before {
				t.Error("PlaceGroup changed the snapshot")
			}
			if tt.wantReason != "" {
				var ge *pods.GroupUnschedulableError
				if !errors.As(err, &ge) || !errors.Is(err, pods.ErrGroupUnschedulable) {
					t.Fatalf("error %v, want a GroupUnschedulableError", err)
				}
				var noNode []bool
				for _, nn := range ge.NoNode {
					noNode = append(noNode, nn != nil)
				}
				if ge.Reason != tt.wantReason || ge.Domain != tt.wantDomain || !slices.Equal(ge.Nodes, tt.wantNodes) || !slices.Equal(noNode, tt.wantNoNode) {
					t.Errorf("pending: %q in domain %q, pass on %v, no node %v; want %q in %q, on %v, no node %v",
						ge.Reason, ge.Domain, ge.Nodes, noNode, tt.wantReason, tt.wantDomain, tt.wantNodes, tt.wantNoNode)
				}
				return
			}
			must(t, err)
			if got := placedNodes(gp); !slices.Equal(got, tt.wantNodes) || gp.Domain != tt.wantDomain {
				t.Errorf("placed on %v in domain %q, want %v in %q", got, gp.Domain, tt.wantNodes, tt.wantDomain)
			}
			must(t, c.AssumeGroup(gp))
		})
	}
}

// TestPlaceGroupAndSearchDiffer: where the pass leaves a gang pending, the search still finds the
// placement; the two answer different questions.
func TestPlaceGroupAndSearchDiffer(t *testing.T) {
	c := cluster(t, pods.Options{}, 0, nodes(1)...)
	for _, s := range partitionedGPU("n1") {
		must(t, c.Snapshot().AddOrUpdateSlice(s))
	}
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	g := gang(2, "")
	must(t, c.AddOrUpdatePodGroup(g))
	ps := members([]string{"a", "b"}, "gpu=template:one-gpu")
	if _, err := c.PlaceGroup(context.Background(), g, ps); !errors.Is(err, pods.ErrGroupUnschedulable) {
		t.Fatalf("PlaceGroup: %v, want ErrGroupUnschedulable", err)
	}
	gp, err := c.SearchGroupPlacement(context.Background(), g, ps, nil)
	must(t, err)
	var got []string
	for _, p := range gp.Pods {
		got = append(got, devices(p)...)
	}
	if !slices.Equal(got, []string{"n1/half-a", "n1/half-b"}) {
		t.Errorf("search placed the pods on %v, want the two halves", got)
	}
}

// TestPlaceGroupClaimOfTheGroup: the PodGroup's claim is allocated by the first pod of the pass and
// reserved for the group; AssumeGroup writes it once whatever the order of the pods given.
func TestPlaceGroupClaimOfTheGroup(t *testing.T) {
	g := gang(2, "", schedulingapi.PodGroupResourceClaim{Name: "fabric", ResourceClaimTemplateName: ptr("one-gpu")})
	c := cluster(t, pods.Options{}, 1, nodes(2)...)
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	must(t, c.AddOrUpdatePodGroup(g))
	ps := members([]string{"a", "b"}, "fabric=template:one-gpu")
	ps[1].Spec.Priority = ptr(int32(5)) // b runs first and allocates the group's claim
	gp, err := c.PlaceGroup(context.Background(), g, ps)
	must(t, err)
	if got := placedNodes(gp); !slices.Equal(got, []string{"n1", "n1"}) {
		t.Errorf("nodes %v, want both on n1, where the group's GPU is", got)
	}
	for _, p := range gp.Pods {
		if len(p.Claims) != 1 || !p.Claims[0].Allocated || !p.Claims[0].Generated {
			t.Fatalf("%s: claims %+v, want the group's claim, generated and allocated by the group", p.Pod.Name, p.Claims)
		}
	}
	must(t, c.AssumeGroup(gp))
	name := gp.Pods[0].Claims[0].Claim.Name
	got, ok := c.Snapshot().Claim("default", name)
	if !ok || got.Status.Allocation == nil || len(got.Status.ReservedFor) != 1 || got.Status.ReservedFor[0].Resource != "podgroups" {
		t.Errorf("claim %s after AssumeGroup: %+v", name, got)
	}
}
