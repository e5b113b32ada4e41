package pods_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// copyNode adds to the generated cluster a node like node 0 (its node-local slices copied, with the
// copy's names), so that the gang search meets nodes it cannot tell apart.
func copyNode(c *fuzz.Cluster, k int) {
	src := c.Nodes[0]
	n := src.DeepCopy()
	n.Name = fmt.Sprintf("%s-copy-%d", src.Name, k)
	n.Labels["kubernetes.io/hostname"] = n.Name
	c.Nodes = append(c.Nodes, n)
	for _, s := range slices.Clone(c.Slices) {
		if s.Spec.NodeName == nil || *s.Spec.NodeName != src.Name {
			continue
		}
		cp := s.DeepCopy()
		cp.Name = fmt.Sprintf("%s-copy-%d", s.Name, k)
		cp.Spec.NodeName = &n.Name
		cp.Spec.Pool.Name = fmt.Sprintf("%s-copy-%d", s.Spec.Pool.Name, k)
		c.Slices = append(c.Slices, cp)
	}
}

// drawGang draws a PodGroup and its pods over the cluster's claims (as templates t-i): few templates,
// so that pods alike are common; sometimes a claim shared by name, a claim of the group, a node
// selector, a topology constraint; minCount up to every pod.
func drawGang(t *rapid.T, c *fuzz.Cluster, cl *pods.Cluster) (*schedulingapi.PodGroup, []*v1.Pod) {
	nPods := rapid.IntRange(1, 5).Draw(t, "pods")
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: fuzz.Namespace, Name: "gang", UID: "uid-gang"}}
	g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: int32(rapid.IntRange(1, nPods).Draw(t, "minCount"))}
	if rapid.IntRange(0, 3).Draw(t, "topology") == 0 {
		g.Spec.SchedulingConstraints = &schedulingapi.PodGroupSchedulingConstraints{Topology: []schedulingapi.TopologyConstraint{{Key: fuzz.ZoneLabel}}}
	}
	templates := min(2, len(c.Claims))
	var groupEntry string
	if rapid.IntRange(0, 3).Draw(t, "groupClaim") == 0 {
		tmpl := fmt.Sprintf("t-%d", rapid.IntRange(0, templates-1).Draw(t, "groupTemplate"))
		g.Spec.ResourceClaims = []schedulingapi.PodGroupResourceClaim{{Name: "g", ResourceClaimTemplateName: &tmpl}}
		groupEntry = "g=template:" + tmpl
	}
	if err := cl.AddOrUpdatePodGroup(g); err != nil {
		t.Fatal(err)
	}
	var ps []*v1.Pod
	for i := range nPods {
		var claims []string
		for k := range rapid.IntRange(0, 2).Draw(t, "claims") {
			j := rapid.IntRange(0, templates-1).Draw(t, "template")
			if rapid.IntRange(0, 4).Draw(t, "shared") == 0 {
				claims = append(claims, fmt.Sprintf("c%d=claim:%s", k, c.Claims[j].Name))
			} else {
				claims = append(claims, fmt.Sprintf("c%d=template:t-%d", k, j))
			}
		}
		if groupEntry != "" && rapid.Bool().Draw(t, "usesGroupClaim") {
			claims = append(claims, groupEntry)
		}
		p := pod(fmt.Sprintf("w%d", i), claims...)
		p.Namespace = fuzz.Namespace
		p.UID = types.UID(fmt.Sprintf("uid-w%d", i))
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g.Name}
		if rapid.IntRange(0, 4).Draw(t, "nodeSelector") == 0 {
			p.Spec.NodeSelector = map[string]string{fuzz.ZoneLabel: c.Nodes[rapid.IntRange(0, len(c.Nodes)-1).Draw(t, "selected")].Labels[fuzz.ZoneLabel]}
		}
		ps = append(ps, p)
	}
	return g, ps
}

// TestPropGangPruningAgrees: on small generated gangs, the pruned search (kinds of pods, classes of
// nodes, counting) places the pods on the same nodes as the search of every assignment, or neither
// places them, for the same reason; its placement passes allocator/verify, node by node and across the
// cluster; and any budget below the tries it needed gives allocator.ErrSearchBudget, never "does not fit".
func TestPropGangPruningAgrees(t *testing.T) {
	opts := fuzz.Options{MaxNodes: 3, MaxDevices: 3, MaxClaims: 3, NetworkAttached: true, Partitionable: true,
		ConsumableCapacity: true, Taints: true, Allocated: true, FirstAvailable: true, Constraints: true}
	// The tries of the pruned search and of the search of every assignment: where the pruned one
	// needed the most, and where the other one did.
	var worst, worstRef [2]int
	defer func() {
		t.Logf("most tries of the pruned search: %d (every assignment: %d); most of every assignment: %d (pruned: %d)", worst[0], worst[1], worstRef[1], worstRef[0])
	}()
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(opts).Draw(t, "cluster")
		for k := range rapid.IntRange(0, 2).Draw(t, "copies") {
			copyNode(c, k)
		}
		cl := newCluster(t, c)
		g, ps := drawGang(t, c, cl)
		ctx := context.Background()
		rb := &pods.Budget{Limit: 5000}
		ref, refErr := cl.PlaceGroupUnpruned(ctx, g, ps, rb)
		if errors.Is(refErr, allocator.ErrSearchBudget) {
			t.Skip("the search of every assignment gave up")
		}
		b := &pods.Budget{Limit: 6000}
		gp, err := cl.SearchGroupPlacement(ctx, g, ps, b)
		if b.Used > worst[0] {
			worst = [2]int{b.Used, rb.Used}
		}
		if rb.Used > worstRef[1] {
			worstRef = [2]int{b.Used, rb.Used}
		}
		// Any smaller budget gives up, and says so (asked before the placement is assumed below).
		if b.Used > 1 {
			limit := rapid.IntRange(1, b.Used-1).Draw(t, "limit")
			small := &pods.Budget{Limit: limit}
			if _, err := cl.SearchGroupPlacement(ctx, g, ps, small); !errors.Is(err, allocator.ErrSearchBudget) || errors.Is(err, pods.ErrGroupUnschedulable) || small.Used != limit {
				t.Fatalf("budget %d of the %d tries needed: %v after %d tries, want ErrSearchBudget after %d", limit, b.Used, err, small.Used, limit)
			}
		}
		switch {
		case errors.Is(err, allocator.ErrSearchBudget):
			t.Fatalf("the pruned search gave up after %d tries, the search of every assignment decided: %v", b.Used, refErr)
		case (err == nil) != (refErr == nil):
			t.Fatalf("pruned: %v; every assignment: %v", err, refErr)
		case err != nil:
			if errors.Is(err, pods.ErrGroupUnschedulable) != errors.Is(refErr, pods.ErrGroupUnschedulable) {
				t.Fatalf("pruned: %v; every assignment: %v", err, refErr)
			}
			if !errors.Is(err, pods.ErrGroupUnschedulable) && !acceptable(err) && !errors.Is(err, pods.ErrClaimNotFound) {
				t.Fatal(err)
			}
		default:
			if got, want := placedNodes(gp), placedNodes(ref); !slices.Equal(got, want) || gp.Domain != ref.Domain {
				t.Fatalf("pruned placed on %v in %q; every assignment: %v in %q", got, gp.Domain, want, ref.Domain)
			}
			verifyGroup(t, c, cl, gp)
		}
	})
}

// verifyGroup checks a group placement with allocator/verify: the claims allocated on each node against
// the cluster's allocated state, then, once assumed, everything allocated across the cluster.
func verifyGroup(t *rapid.T, c *fuzz.Cluster, cl *pods.Cluster, gp *pods.GroupPlacement) {
	ctx := context.Background()
	snap := cl.Snapshot()
	before := allocatedClaims(snap)
	features := c.Gates()
	byNode := map[string][]*resourceapi.ResourceClaim{}
	var order []string
	seen := map[string]bool{}
	for _, p := range gp.Pods {
		if p == nil {
			continue
		}
		for _, pc := range p.Claims {
			if !pc.Allocated || seen[pc.Claim.Name] {
				continue
			}
			seen[pc.Claim.Name] = true
			if byNode[p.Node] == nil {
				order = append(order, p.Node)
			}
			byNode[p.Node] = append(byNode[p.Node], pc.Claim)
		}
	}
	for _, name := range order {
		var node *v1.Node
		for _, n := range snap.Nodes() {
			if n.Name == name {
				node = n
			}
		}
		var results []resourceapi.AllocationResult
		for _, claim := range byNode[name] {
			results = append(results, *claim.Status.Allocation)
		}
		in := verify.Input{Slices: c.Slices, Classes: c.Classes, TaintRules: c.TaintRules, Node: node, Features: &features, Claims: before, CEL: propEnv(t)}
		vs, err := verify.Check(ctx, in, byNode[name], results)
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		if len(vs) > 0 {
			t.Fatalf("the group's claims on %s break %v", name, vs)
		}
	}
	if err := cl.AssumeGroup(gp); err != nil {
		t.Fatalf("assume: %v", err)
	}
	checkCluster(t, c, snap, 0)
}

// TestPropGangOfPodsAlikeIsDecided: a gang of up to 16 pods alike (one claim from one template) over
// generated clusters with up to six copies of a node is decided, fits or not, within 20000 tries (13000
// draws needed at most about 3000; the search of every assignment needs up to nodes^pods); what it
// places passes allocator/verify. It logs the most tries any gang needed. The most are spent where
// the nodes share a network-attached pool: each node's count holds the whole pool, so the count does
// not cut, and the search goes through the ways to spread the pods that do fit.
func TestPropGangOfPodsAlikeIsDecided(t *testing.T) {
	opts := fuzz.Options{MaxNodes: 4, MaxDevices: 4, MaxClaims: 3, NetworkAttached: true, Partitionable: true,
		ConsumableCapacity: true, Taints: true, Allocated: true, FirstAvailable: true, Constraints: true}
	var worst struct{ tries, pods, nodes int }
	defer func() {
		t.Logf("most tries: %d, for %d pods over %d nodes", worst.tries, worst.pods, worst.nodes)
	}()
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(opts).Draw(t, "cluster")
		for k := range rapid.IntRange(0, 6).Draw(t, "copies") {
			copyNode(c, k)
		}
		cl := newCluster(t, c)
		n := rapid.IntRange(1, 16).Draw(t, "pods")
		g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: fuzz.Namespace, Name: "gang", UID: "uid-gang"}}
		g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: int32(rapid.IntRange(1, n).Draw(t, "minCount"))}
		if err := cl.AddOrUpdatePodGroup(g); err != nil {
			t.Fatal(err)
		}
		entry := fmt.Sprintf("c=template:t-%d", rapid.IntRange(0, len(c.Claims)-1).Draw(t, "template"))
		var ps []*v1.Pod
		for i := range n {
			p := pod(fmt.Sprintf("w%d", i), entry)
			p.Namespace = fuzz.Namespace
			p.UID = types.UID(fmt.Sprintf("uid-w%d", i))
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g.Name}
			ps = append(ps, p)
		}
		b := &pods.Budget{Limit: 20000}
		gp, err := cl.SearchGroupPlacement(context.Background(), g, ps, b)
		if b.Used > worst.tries {
			worst.tries, worst.pods, worst.nodes = b.Used, n, len(c.Nodes)
		}
		switch {
		case b.Used >= b.Limit:
			t.Fatalf("%d pods alike over %d nodes: gave up after %d tries: %v", n, len(c.Nodes), b.Used, err)
		case err == nil:
			verifyGroup(t, c, cl, gp)
		case errors.Is(err, pods.ErrGroupUnschedulable), acceptable(err), errors.Is(err, pods.ErrClaimNotFound):
			// The allocator's own budget may run out on many claims on one node: ErrSearchBudget, but
			// not the gang's.
		default:
			t.Fatal(err)
		}
	})
}
