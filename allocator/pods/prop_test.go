package pods_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/fuzz"
)

// propOptions are the generator features the properties use: node-local and network-attached pools,
// partitions, shareable devices, taints and claims allocated before.
func propOptions() fuzz.Options {
	return fuzz.Options{MaxNodes: 3, MaxDevices: 4, MaxClaims: 3, NetworkAttached: true, Partitionable: true,
		ConsumableCapacity: true, Taints: true, Allocated: true, FirstAvailable: true, Constraints: true}
}

var (
	envOnce sync.Once
	env     *celenv.Env
	envErr  error
)

// propEnv is one CEL environment with every feature (as ClusterGen's clusters have), shared by the
// snapshots and the checker so that selectors compile once.
func propEnv(t *rapid.T) *celenv.Env {
	envOnce.Do(func() {
		env, envErr = celenv.NewEnv(celenv.Options{Features: &celenv.Features{DRAConsumableCapacity: true, DRAListTypeAttributes: true}})
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
	return env
}

// op is one step of a sequence: place pod Pod with its claims, or remove the pod placed at step Remove.
type op struct {
	place  bool
	claims []string // "entry=template:t-i" or "entry=claim:name"
	remove int
}

func drawOps(t *rapid.T, c *fuzz.Cluster) []op {
	n := rapid.IntRange(1, 8).Draw(t, "steps")
	ops := make([]op, n)
	for i := range ops {
		if i > 0 && rapid.IntRange(0, 3).Draw(t, "kind") == 0 {
			ops[i] = op{remove: rapid.IntRange(0, i-1).Draw(t, "remove")}
			continue
		}
		o := op{place: true}
		for k := range rapid.IntRange(0, 2).Draw(t, "claims") {
			j := rapid.IntRange(0, len(c.Claims)-1).Draw(t, "claim")
			if rapid.Bool().Draw(t, "shared") {
				o.claims = append(o.claims, fmt.Sprintf("c%d=claim:%s", k, c.Claims[j].Name))
			} else {
				o.claims = append(o.claims, fmt.Sprintf("c%d=template:t-%d", k, j))
			}
		}
		ops[i] = o
	}
	return ops
}

// newCluster loads the generated cluster: its pending claims become shared claims and templates.
func newCluster(t *rapid.T, c *fuzz.Cluster) *pods.Cluster {
	return newClusterWith(t, c, nil)
}

func newClusterWith(t *rapid.T, c *fuzz.Cluster, preferred pods.Preferred) *pods.Cluster {
	n := 0
	return loadCluster(t, c, pods.Options{Workers: 2, Preferred: preferred, NameSuffix: func() string { n++; return fmt.Sprintf("s%04d", n) }})
}

// loadCluster loads the generated cluster into a Cluster with the options: its pending claims become
// shared claims and templates t-<i>.
func loadCluster(t *rapid.T, c *fuzz.Cluster, opts pods.Options) *pods.Cluster {
	snap, err := c.Snapshot(allocator.Options{StepBudget: 20000, CEL: propEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	cl := pods.New(snap, opts)
	for i, claim := range c.Claims {
		if err := snap.AddOrUpdateClaim(claim); err != nil {
			t.Fatal(err)
		}
		tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: fmt.Sprintf("t-%d", i)}}
		tmpl.Spec.Spec = *claim.Spec.DeepCopy()
		if err := cl.AddOrUpdateTemplate(tmpl); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// acceptable are the errors a placement may end with on generated input: no node, an input error the
// allocator reports (a selector failing at run time), a search that gave up.
func acceptable(err error) bool {
	return errors.Is(err, pods.ErrNoNode) || errors.Is(err, allocator.ErrInvalidInput) || errors.Is(err, allocator.ErrSearchBudget) ||
		errors.Is(err, pods.ErrClaimNotUsable) || errors.Is(err, allocator.ErrPoolNotReady)
}

// run applies the ops and checks the properties after each step; it returns what each step placed.
func run(t *rapid.T, c *fuzz.Cluster, ops []op) []string {
	return runWith(t, c, ops, nil)
}

// runWith is run with preferred amounts for ranged shares: their recorded amounts differ from what the
// requests consume, which the checker flags, so only over-allocation is checked.
func runWith(t *rapid.T, c *fuzz.Cluster, ops []op, preferred pods.Preferred) []string {
	ctx := context.Background()
	cl := newClusterWith(t, c, preferred)
	snap := cl.Snapshot()
	var placed []*v1.Pod
	var trace []string
	for step, o := range ops {
		if !o.place {
			if o.remove >= len(placed) || placed[o.remove] == nil {
				trace = append(trace, "-")
				continue
			}
			if err := cl.Remove(placed[o.remove]); err != nil {
				t.Fatalf("step %d: remove: %v", step, err)
			}
			trace = append(trace, "removed "+placed[o.remove].Name)
			placed[o.remove] = nil
			checkCluster(t, c, snap, step)
			continue
		}
		p := pod(fmt.Sprintf("pod-%d", step), o.claims...)
		p.Namespace = fuzz.Namespace
		p.UID = types.UID(fmt.Sprintf("uid-pod-%d", step))
		before := p.DeepCopy()
		pl, err := cl.Place(ctx, p)
		if !equality.Semantic.DeepEqual(before, p) {
			t.Fatalf("step %d: Place modified the pod", step)
		}
		placed = append(placed, nil)
		if err != nil {
			if !acceptable(err) {
				t.Fatalf("step %d: %v", step, err)
			}
			trace = append(trace, "no: "+err.Error())
			continue
		}
		// The new allocations pass the checker on the chosen node, next to everything allocated before.
		var fresh []*resourceapi.ResourceClaim
		var results []resourceapi.AllocationResult
		seen := map[string]bool{}
		for _, pc := range pl.Claims {
			if pc.Allocated && !seen[pc.Claim.Name] { // entries naming one claim share it
				seen[pc.Claim.Name] = true
				fresh = append(fresh, pc.Claim)
				results = append(results, *pc.Claim.Status.Allocation)
			}
		}
		var node *v1.Node
		for _, n := range snap.Nodes() {
			if n.Name == pl.Node {
				node = n
			}
		}
		features := c.Gates()
		in := verify.Input{Slices: c.Slices, Classes: c.Classes, TaintRules: c.TaintRules, Node: node, Features: &features, Claims: allocatedClaims(snap), CEL: propEnv(t)}
		vs, err := verify.Check(ctx, in, fresh, results)
		if err != nil {
			t.Fatalf("step %d: verify: %v", step, err)
		}
		if preferred != nil {
			vs = slices.DeleteFunc(vs, func(v verify.Violation) bool {
				return v.Rule == verify.RuleCapacity && !strings.Contains(v.Message, "overdrawn")
			})
		}
		if len(vs) > 0 {
			t.Fatalf("step %d: placement on %s breaks %v", step, pl.Node, vs)
		}
		if err := cl.Assume(pl); err != nil {
			t.Fatalf("step %d: assume: %v", step, err)
		}
		placed[len(placed)-1] = p
		trace = append(trace, fmt.Sprintf("%s on %s: %v", p.Name, pl.Node, devices(pl)))
		checkCluster(t, c, snap, step)
	}
	return trace
}

func allocatedClaims(snap *allocator.Snapshot) []*resourceapi.ResourceClaim {
	var out []*resourceapi.ResourceClaim
	for _, c := range snap.Claims("") {
		if c.Status.Allocation != nil {
			out = append(out, c)
		}
	}
	return out
}

// checkCluster: every allocation the placements made, taken together next to the claims allocated in
// the generated cluster, over-allocates no device, share, capacity or counter anywhere; and every such
// claim is reserved by someone.
func checkCluster(t *rapid.T, c *fuzz.Cluster, snap *allocator.Snapshot, step int) {
	pre := map[string]bool{}
	for _, a := range c.Allocated {
		pre[a.Name] = true
	}
	var ours []*resourceapi.ResourceClaim
	var results []resourceapi.AllocationResult
	for _, claim := range allocatedClaims(snap) {
		if pre[claim.Name] {
			continue
		}
		if len(claim.Status.ReservedFor) == 0 {
			t.Fatalf("step %d: claim %s is allocated but reserved by no one", step, claim.Name)
		}
		ours = append(ours, claim)
		results = append(results, *claim.Status.Allocation)
	}
	features := c.Gates()
	in := verify.Input{Slices: c.Slices, Classes: c.Classes, TaintRules: c.TaintRules, Features: &features, Claims: c.Allocated, CEL: propEnv(t)}
	vs, err := verify.Check(context.Background(), in, ours, results)
	if err != nil {
		t.Fatalf("step %d: verify: %v", step, err)
	}
	for _, v := range vs {
		switch {
		case v.Rule == verify.RuleCapacity && !strings.Contains(v.Message, "overdrawn"):
			// A ranged share records more than its request consumes; that is checked per placement.
		case v.Rule == verify.RuleInUse, v.Rule == verify.RuleShare, v.Rule == verify.RuleCapacity, v.Rule == verify.RuleCounters, v.Rule == verify.RuleCompatibility:
			t.Fatalf("step %d: cluster-wide: %v", step, v)
		}
	}
}

func TestPropPlaceRemoveVerifies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(propOptions()).Draw(t, "cluster")
		ops := drawOps(t, c)
		before := c.DeepCopy()
		run(t, c, ops)
		if !equality.Semantic.DeepEqual(before, c.DeepCopy()) {
			t.Fatal("the generated cluster was modified")
		}
	})
}

// TestPropRangedNeverOverdraws: with every share preferring twice what its request asks, sequences of
// place and remove still over-allocate no device, capacity or counter.
func TestPropRangedNeverOverdraws(t *testing.T) {
	double := func(claim *resourceapi.ResourceClaim, request string) map[resourceapi.QualifiedName]resource.Quantity {
		for _, req := range claim.Spec.Devices.Requests {
			var capReq *resourceapi.CapacityRequirements
			if req.Exactly != nil && req.Name == request {
				capReq = req.Exactly.Capacity
			}
			for _, sub := range req.FirstAvailable {
				if req.Name+"/"+sub.Name == request {
					capReq = sub.Capacity
				}
			}
			if capReq == nil {
				continue
			}
			out := map[resourceapi.QualifiedName]resource.Quantity{}
			for name, q := range capReq.Requests {
				d := q.DeepCopy()
				d.Add(q)
				out[name] = d
			}
			return out
		}
		return nil
	}
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(propOptions()).Draw(t, "cluster")
		runWith(t, c, drawOps(t, c), double)
	})
}

func TestPropPlaceDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(propOptions()).Draw(t, "cluster")
		ops := drawOps(t, c)
		first, second := run(t, c, ops), run(t, c, ops)
		if !slices.Equal(first, second) {
			t.Fatalf("same input, different placements:\n%v\n%v", first, second)
		}
	})
}

// TestPropGangAgreesWithExhaustive: on small clusters without devices shared between nodes, SearchGroupPlacement
// places a gang (minCount = every pod) exactly when some assignment of pods to nodes lets every node's
// share of the claims fit, as fuzz.Exhaustive decides each node by trying every choice of devices; and
// PlaceGroup, kube-scheduler's pass, places it only then.
func TestPropGangAgreesWithExhaustive(t *testing.T) {
	opts := fuzz.Options{MaxNodes: 2, MaxDevices: 3, MaxClaims: 3, Partitionable: true, Allocated: true}
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(opts).Draw(t, "cluster")
		nPods := rapid.IntRange(1, 3).Draw(t, "pods")
		tmplOf := make([]int, nPods)
		for i := range tmplOf {
			tmplOf[i] = rapid.IntRange(0, len(c.Claims)-1).Draw(t, "template")
		}
		cl := newCluster(t, c)
		g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: fuzz.Namespace, Name: "gang", UID: "uid-gang"}}
		g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: int32(nPods)}
		if err := cl.AddOrUpdatePodGroup(g); err != nil {
			t.Fatal(err)
		}
		var ps []*v1.Pod
		for i, tmpl := range tmplOf {
			p := pod(fmt.Sprintf("w%d", i), fmt.Sprintf("c=template:t-%d", tmpl))
			p.Namespace = fuzz.Namespace
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g.Name}
			ps = append(ps, p)
		}
		gp, err := cl.SearchGroupPlacement(context.Background(), g, ps, nil)
		if err != nil && !errors.Is(err, pods.ErrGroupUnschedulable) {
			if errors.Is(err, allocator.ErrInvalidInput) || errors.Is(err, allocator.ErrPoolNotReady) || errors.Is(err, allocator.ErrSearchBudget) {
				t.Skip(err)
			}
			t.Fatal(err)
		}

		// Exhaustive: every assignment of pods to nodes, each node decided by fuzz.Exhaustive.
		want, undecided := false, false
		memo := map[string]fuzz.Verdict{} // per node and multiset of templates
		assign := make([]int, nPods)
		var try func(i int)
		try = func(i int) {
			if want || undecided {
				return
			}
			if i == nPods {
				all := true
				for ni := range c.Nodes {
					var on []int
					for p, a := range assign {
						if a == ni {
							on = append(on, tmplOf[p])
						}
					}
					if len(on) == 0 {
						continue
					}
					slices.Sort(on)
					key := fmt.Sprint(ni, on)
					v, ok := memo[key]
					if !ok {
						sub := c.DeepCopy()
						sub.Node = sub.Nodes[ni]
						sub.Claims = nil
						for k, tmpl := range on {
							claim := c.Claims[tmpl].DeepCopy()
							claim.Name = fmt.Sprintf("w%d-claim", k)
							sub.Claims = append(sub.Claims, claim)
						}
						v, _ = fuzz.Exhaustive(context.Background(), sub, 300)
						memo[key] = v
					}
					if v == fuzz.Undecided {
						undecided = true
						return
					}
					if v != fuzz.Fits {
						all = false
						break
					}
				}
				if all {
					want = true
				}
				return
			}
			for ni := range c.Nodes {
				assign[i] = ni
				try(i + 1)
			}
		}
		try(0)
		if undecided {
			t.Skip("exhaustive search undecided")
		}
		if got := err == nil; got != want {
			t.Fatalf("SearchGroupPlacement placed: %v (%v), exhaustive: %v", got, err, want)
		}
		// kube-scheduler's pass places the gang only where some placement exists, and may miss one.
		_, passErr := cl.PlaceGroup(context.Background(), g, ps)
		if passErr != nil && !errors.Is(passErr, pods.ErrGroupUnschedulable) {
			t.Fatalf("PlaceGroup: %v, where the search gave %v", passErr, err)
		}
		if passErr == nil && !want {
			t.Fatal("PlaceGroup placed a gang that no assignment fits")
		}
		if gp != nil {
			for _, p := range gp.Pods {
				if p == nil {
					t.Fatal("a pod was left out with minCount = every pod")
				}
			}
		}
	})
}
