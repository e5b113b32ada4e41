package pods_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// TestPropCostChoosesLeast: through a stream of placements and removals on nodes with 1–4 GPUs, a Place
// with Options.Cost fits the pod somewhere exactly where FirstFit does, on the node where it fits (Fits
// on each) with the least cost, the first by name on ties; the cost is shown the node's own devices
// (every result names a device of the node's pool, also for nodes of one class), and every placement
// verifies.
func TestPropCostChoosesLeast(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		var nodes []*v1.Node
		weight := map[string]float64{}
		for i := range rapid.IntRange(2, 6).Draw(rt, "nodes") {
			n := node(fmt.Sprintf("n%d", i), nil)
			nodes = append(nodes, n)
			weight[n.Name] = float64(rapid.IntRange(0, 2).Draw(rt, n.Name+"-weight"))
		}
		var seen error
		cost := func(in pods.CostInput) (float64, error) {
			n := in.Node
			for _, r := range in.Results {
				for _, d := range r.Devices.Results {
					if d.Pool != n.Name && seen == nil {
						seen = fmt.Errorf("cost of %s shown device %s/%s", n.Name, d.Pool, d.Device)
					}
				}
			}
			return weight[n.Name], nil
		}
		base := cluster(t, pods.Options{}, 0, nodes...).Snapshot()
		c := pods.New(base, pods.Options{Cost: cost, NameSuffix: fixedSuffixes()})
		ff := pods.New(base, pods.Options{NameSuffix: fixedSuffixes()})
		snap := c.Snapshot()
		var published []*resourceapi.ResourceSlice
		for _, n := range nodes {
			s := gpus(n.Name, rapid.IntRange(1, 4).Draw(rt, n.Name+"-gpus"))
			published = append(published, s)
			must(t, snap.AddOrUpdateSlice(s))
		}
		for size := int64(1); size <= 3; size++ {
			must(t, c.AddOrUpdateTemplate(template(fmt.Sprintf("gpus-%d", size), size)))
			must(t, ff.AddOrUpdateTemplate(template(fmt.Sprintf("gpus-%d", size), size)))
		}
		var placed []*v1.Pod
		for step := range rapid.IntRange(1, 25).Draw(rt, "steps") {
			if len(placed) > 0 && rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("remove-%d", step)) == 0 {
				k := rapid.IntRange(0, len(placed)-1).Draw(rt, fmt.Sprintf("which-%d", step))
				must(t, c.Remove(placed[k]))
				placed = append(placed[:k], placed[k+1:]...)
				continue
			}
			size := rapid.IntRange(1, 3).Draw(rt, fmt.Sprintf("size-%d", step))
			p := pod(fmt.Sprintf("pod-%d", step), fmt.Sprintf("gpu=template:gpus-%d", size))
			want := lightestFit(t, snap, size, weight)
			_, ffErr := ff.Place(ctx, p)
			pl, err := c.Place(ctx, p)
			if (err == nil) != (ffErr == nil) {
				rt.Fatalf("%s: with Cost %v, FirstFit %v", p.Name, err, ffErr)
			}
			if want == "" {
				if !errors.Is(err, pods.ErrNoNode) {
					rt.Fatalf("%s: %v, but fits on no node", p.Name, err)
				}
				continue
			}
			if err != nil {
				rt.Fatalf("%s: %v, but fits on %s", p.Name, err, want)
			}
			if seen != nil {
				rt.Fatal(seen)
			}
			if pl.Node != want {
				rt.Fatalf("%s placed on %s (weights %v), want %s", p.Name, pl.Node, weight, want)
			}
			verifyAndAssume(rt, c, published, nodes, p, pl)
			placed = append(placed, p)
		}
	})
}

// A cost that fails stops the placement with its error.
func TestCostError(t *testing.T) {
	boom := errors.New("boom")
	c := exampleCluster(pods.Options{Cost: func(pods.CostInput) (float64, error) { return 0, boom }})
	_, err := c.Place(context.Background(), pod("p", "gpu=template:one-gpu"))
	if !errors.Is(err, boom) || err.Error() != "Pod default/p: node node-a: cost: boom" {
		t.Fatalf("err = %v", err)
	}
}

// A Cost is shown the pod, what it requests and what the pods already on the node request (here one
// pod of 2 CPUs assumed on node-a), as NodeResourcesFit counts them.
func TestCostInputRequests(t *testing.T) {
	seen := map[string]string{}
	c := exampleCluster(pods.Options{Cost: func(in pods.CostInput) (float64, error) {
		seen[in.Node.Name] = fmt.Sprint(in.Pod.Name, " ", in.PodRequests[v1.ResourceCPU], " ", in.Requested[v1.ResourceCPU])
		return 0, nil
	}})
	ctx := context.Background()
	first := withExtended(pod("first"), v1.ResourceCPU, 2)
	p, err := c.Place(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Assume(p))
	if got := c.Requested(p.Node)[v1.ResourceCPU]; got != 2000 {
		t.Fatalf("Requested(%s) cpu = %d, want 2000", p.Node, got)
	}
	clear(seen)
	if _, err := c.Place(ctx, withExtended(pod("second", "gpu=template:one-gpu"), v1.ResourceCPU, 1)); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"node-a": "second 1000 2000", "node-b": "second 1000 0"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("cost saw %v, want %v", seen, want)
	}
}

// A Cost chooses among the nodes where the pod fits, the lowest first: here node-b costs less.
func ExampleCost() {
	cost := func(in pods.CostInput) (float64, error) {
		if in.Node.Name == "node-b" {
			return 0, nil
		}
		return 1, nil
	}
	c := exampleCluster(pods.Options{Cost: cost})
	p, err := c.Place(context.Background(), pod("train", "gpu=template:one-gpu"))
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Node, p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Pool)
	// Output: node-b node-b
}

// TestPropCostSeesEachNodesAllocation: on a fleet of nodes alike (one or two kinds: whole GPUs and a
// GPU taking shares of its memory, each node's devices and pool named after it), partly used by the
// pods placed before, the cost of every node is shown exactly the allocation AllocateWith(BestFit)
// gives on that node (its own pool, devices and node selector), also where the node's allocation is its
// class's; share IDs are drawn per call and only their presence is compared.
func TestPropCostSeesEachNodesAllocation(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		var nodes []*v1.Node
		for i := range rapid.IntRange(2, 6).Draw(rt, "nodes") {
			nodes = append(nodes, node(fmt.Sprintf("n%d", i), nil))
		}
		kinds := []int{rapid.IntRange(1, 3).Draw(rt, "kind-0"), rapid.IntRange(1, 3).Draw(rt, "kind-1")}
		weight := rapid.IntRange(0, 2)
		var mismatch error
		var probe *resourceapi.ResourceClaim // the placed pod's claim, as a claim of its own
		calls := 0
		cost := func(in pods.CostInput) (float64, error) {
			calls++
			want, err := in.Snapshot.AllocateWith(ctx, allocator.BestFit, in.Node, []*resourceapi.ResourceClaim{probe})
			if err == nil {
				err = sameAllocation(in.Results, want)
			}
			if err != nil && mismatch == nil {
				mismatch = fmt.Errorf("node %s: %w", in.Node.Name, err)
			}
			return float64(weight.Draw(rt, fmt.Sprintf("weight-%d", calls))), nil
		}
		snap := allocator.NewSnapshot(allocator.Options{})
		must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
		for _, n := range nodes {
			must(t, snap.AddOrUpdateNode(n))
			must(t, snap.AddOrUpdateSlice(namedGPUs(n.Name, kinds[rapid.IntRange(0, 1).Draw(rt, n.Name+"-kind")])))
		}
		c := pods.New(snap, pods.Options{Cost: cost, NameSuffix: fixedSuffixes()})
		templates := []*resourceapi.ResourceClaimTemplate{template("gpus-1", 1), template("gpus-2", 2), memoryTemplate("mem-2", "2Gi"), memoryTemplate("mem-3", "3Gi")}
		for _, tm := range templates {
			must(t, c.AddOrUpdateTemplate(tm))
		}
		var placed []*v1.Pod
		for step := range rapid.IntRange(1, 20).Draw(rt, "steps") {
			if len(placed) > 0 && rapid.IntRange(0, 4).Draw(rt, fmt.Sprintf("remove-%d", step)) == 0 {
				k := rapid.IntRange(0, len(placed)-1).Draw(rt, fmt.Sprintf("which-%d", step))
				must(t, c.Remove(placed[k]))
				placed = append(placed[:k], placed[k+1:]...)
				continue
			}
			tm := templates[rapid.IntRange(0, len(templates)-1).Draw(rt, fmt.Sprintf("template-%d", step))]
			probe = &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe"}, Spec: tm.Spec.Spec}
			p := pod(fmt.Sprintf("pod-%d", step), "gpu=template:"+tm.Name)
			pl, err := c.Place(ctx, p)
			if mismatch != nil {
				rt.Fatal(mismatch)
			}
			if errors.Is(err, pods.ErrNoNode) {
				continue
			}
			if err != nil {
				rt.Fatal(err)
			}
			must(t, c.Assume(pl))
			placed = append(placed, p)
		}
	})
}

// namedGPUs is a node's slice of n whole GPUs and one GPU taking shares of its 8Gi of memory, the pool
// and every device named after the node.
func namedGPUs(nodeName string, n int) *resourceapi.ResourceSlice {
	s := gpus(nodeName, n)
	s.Spec.Pool.Name = nodeName + "-pool"
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].Name = fmt.Sprintf("%s-gpu-%d", nodeName, i)
	}
	shared := sharedGPU().Spec.Devices[0]
	shared.Name = nodeName + "-shared"
	s.Spec.Devices = append(s.Spec.Devices, shared)
	return s
}

// sameAllocation compares the results of one claim as a placement writes them, but for share IDs (drawn
// anew by every call), of which only the presence is compared.
func sameAllocation(got, want []resourceapi.AllocationResult) error {
	strip := func(rs []resourceapi.AllocationResult) []resourceapi.AllocationResult {
		out := make([]resourceapi.AllocationResult, len(rs))
		for i := range rs {
			rs[i].DeepCopyInto(&out[i])
			for j := range out[i].Devices.Results {
				if d := &out[i].Devices.Results[j]; d.ShareID != nil {
					id := types.UID("share")
					d.ShareID = &id
				}
			}
		}
		return out
	}
	if g, w := strip(got), strip(want); !equality.Semantic.DeepEqual(g, w) {
		return fmt.Errorf("cost shown %+v, AllocateWith gives %+v", g, w)
	}
	return nil
}

// A snapshot that changes while a placement with a Cost is rated (here by the cost itself, standing
// for an Assume in another goroutine) leaves the node classes behind: the nodes rated after the change
// are allocated on their own, as the snapshot now stands, and the placement succeeds.
func TestCostWhileTheSnapshotChanges(t *testing.T) {
	ctx := context.Background()
	nodes := []*v1.Node{node("n0", nil), node("n1", nil), node("n2", nil)}
	c := cluster(t, pods.Options{NameSuffix: fixedSuffixes()}, 2, nodes...)
	snap := c.Snapshot()
	calls := 0
	cost := func(in pods.CostInput) (float64, error) {
		calls++
		if calls == 1 {
			busy := claim("busy", 1)
			busy.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: driver, Pool: "n2", Device: "gpu-0"}}}}
			if err := snap.AddOrUpdateClaim(busy); err != nil {
				return 0, err
			}
		}
		for _, r := range in.Results {
			for _, d := range r.Devices.Results {
				if d.Pool != in.Node.Name {
					return 0, fmt.Errorf("cost of %s shown %s/%s", in.Node.Name, d.Pool, d.Device)
				}
			}
		}
		return float64(3 - calls), nil // the last rated costs least
	}
	cc := pods.New(snap, pods.Options{Cost: cost, NameSuffix: fixedSuffixes()})
	must(t, cc.AddOrUpdateTemplate(template("one-gpu", 1)))
	p, err := cc.Place(ctx, pod("p", "gpu=template:one-gpu"))
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 || p.Node != "n2" || p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Device != "gpu-1" {
		t.Fatalf("%d nodes rated, placed on %s %+v; want 3, n2 gpu-1", calls, p.Node, p.Claims[0].Claim.Status.Allocation.Devices.Results)
	}
}

// lightestFit is the node of least weight (the first by name on ties) where a claim for size GPUs fits,
// "" where it fits nowhere: where a Cost of these weights places such a pod.
func lightestFit(t *testing.T, snap *allocator.Snapshot, size int, weight map[string]float64) string {
	t.Helper()
	want := ""
	for _, n := range snap.Nodes() {
		fits, err := snap.Fits(context.Background(), n, []*resourceapi.ResourceClaim{claim("probe", int64(size))})
		must(t, err)
		if fits && (want == "" || weight[n.Name] < weight[want]) {
			want = n.Name
		}
	}
	return want
}
