package scaling_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/inventory"
)

func counts(plan *scaling.Plan) map[string]int {
	out := map[string]int{}
	for _, c := range plan.Counts {
		out[c.Type] = c.Count
	}
	return out
}

func gangsOf(pending []scaling.Pending) []scaling.Pending {
	var out []scaling.Pending
	for _, u := range pending {
		if u.Group != nil {
			out = append(out, u)
		}
	}
	return out
}

func TestScaleUp(t *testing.T) {
	many := func(n int, gpus int64) []scaling.Pending {
		var out []scaling.Pending
		for i := range n {
			out = append(out, single(extPod(fmt.Sprintf("p%d-%d", gpus, i), gpus)))
		}
		return out
	}
	migs := func(n int) []scaling.Pending {
		var out []scaling.Pending
		for i := range n {
			out = append(out, single(claimPod(fmt.Sprintf("mig-%d", i), "mig-devices")))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		pending  []scaling.Pending
		types    []string
		want     map[string]int
		unplaced int
	}{
		// 20 GPUs of 8 per H100: 8+8+4.
		{"twenty one-GPU pods need three H100s", many(20, 1), nil, map[string]int{"dgxh100": 3}, 0},
		// Three 3-GPU pods fill an H100 to 6 of 8; the fourth needs a new node.
		{"pods of three GPUs leave two free per node", many(4, 3), nil, map[string]int{"dgxh100": 2}, 0},
		// Each demo takes one whole A100 of 7 compute slices: 8 per node.
		{"nine MIG demos need two A100s", migs(9), nil, map[string]int{"dgxa100": 2}, 0},
		// The cheaper A100 serves the MIG demo, only the H100 whole GPUs.
		{"mixing types by cost", append(migs(1), many(2, 4)...), nil, map[string]int{"dgxa100": 1, "dgxh100": 1}, 0},
		{"restricted to the H100 the MIG demo fits nowhere", append(migs(1), many(1, 1)...), []string{"dgxh100"}, map[string]int{"dgxh100": 1}, 1},
		{"a gang of three pods with four GPUs each", []scaling.Pending{gang("trio", 3, "four-gpus")}, nil, map[string]int{"dgxh100": 2}, 0},
		{"a gang shares the new nodes with pods before it", append(many(1, 4), gang("pair", 2, "two-gpus")), nil, map[string]int{"dgxh100": 1}, 0},
		{"nine GPUs fit on no type", many(1, 9), nil, map[string]int{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, nil, gangsOf(tc.pending)...)
			p, err := scaling.New(c, dgxTypes(t), scaling.Options{})
			must(t, err)
			plan, err := p.ScaleUp(context.Background(), tc.pending, tc.types...)
			must(t, err)
			if got := counts(plan); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("new nodes %v, want %v", got, tc.want)
			}
			if len(plan.Unplaced) != tc.unplaced {
				t.Errorf("%d unplaced (%+v), want %d", len(plan.Unplaced), plan.Unplaced, tc.unplaced)
			}
			if len(c.Snapshot().Nodes()) != 0 || len(c.Snapshot().Claims("")) != 0 {
				t.Error("ScaleUp changed the cluster")
			}
			checkPlan(t, c, tc.pending, plan)
		})
	}
}

// checkPlan verifies a plan for real: the new nodes added to the cluster (on a fork: their Node and
// instantiated slices), every pod the plan places is placed again in the same order, and each fits.
func checkPlan(t tb, c *pods.Cluster, pending []scaling.Pending, plan *scaling.Plan) {
	t.Helper()
	f := c.Fork()
	defer f.Snapshot().Discard()
	for _, n := range plan.Nodes {
		must(t, f.Snapshot().AddOrUpdateNode(n.Instance.Node))
		for _, s := range n.Instance.Slices {
			must(t, f.Snapshot().AddOrUpdateSlice(s))
		}
	}
	unplaced := map[string]bool{}
	for _, u := range plan.Unplaced {
		unplaced[u.Pending] = true
	}
	placed := 0
	ctx := context.Background()
	for _, u := range pending {
		if unplaced[u.Name()] {
			continue
		}
		if u.Group != nil {
			gp, err := f.PlaceGroup(ctx, u.Group, u.Pods)
			if err != nil {
				t.Fatalf("%s: the plan says it fits, placing it for real: %v", u.Name(), err)
			}
			must(t, f.AssumeGroup(gp))
			placed += len(gp.Pods)
			continue
		}
		pl, err := f.Place(ctx, u.Pod)
		if err != nil {
			t.Fatalf("%s: the plan says it fits, placing it for real: %v", u.Name(), err)
		}
		must(t, f.Assume(pl))
		placed++
	}
	if placed != len(plan.Placed) {
		t.Errorf("placed %d pods for real, the plan %d", placed, len(plan.Placed))
	}
}

func TestScaleUpUsesCurrentNodesFirst(t *testing.T) {
	h100 := profile(t, "dgxh100")
	c := newCluster(t, []inventory.Instance{instance(t, h100, "node-1")})
	bind(t, c, extPod("running", 6))
	p, err := scaling.New(c, dgxTypes(t), scaling.Options{})
	must(t, err)
	pending := []scaling.Pending{single(extPod("a", 2)), single(extPod("b", 2))}
	plan, err := p.ScaleUp(context.Background(), pending)
	must(t, err)
	if len(plan.Nodes) != 1 || plan.Placed[0].Node != "node-1" || plan.Placed[0].New || !plan.Placed[1].New {
		t.Errorf("plan %+v: want a on node-1 (2 of its GPUs free) and b on one new node", plan.Placed)
	}
	checkPlan(t, c, pending, plan)
}

func TestScaleUpIsBounded(t *testing.T) {
	pending := []scaling.Pending{single(extPod("a", 8)), single(extPod("b", 8)), single(extPod("c", 8))}
	types := []scaling.NodeType{{Template: profile(t, "dgxh100"), Max: 2}}
	p, err := scaling.New(newCluster(t, nil), types, scaling.Options{})
	must(t, err)
	plan, err := p.ScaleUp(context.Background(), pending)
	must(t, err)
	if len(plan.Nodes) != 2 || len(plan.Unplaced) != 1 || plan.Unplaced[0].Pending != "Pod default/c" {
		t.Errorf("plan: %d nodes, unplaced %+v; want 2 nodes and c unplaced (Max 2)", len(plan.Nodes), plan.Unplaced)
	}
	p, err = scaling.New(newCluster(t, nil), types, scaling.Options{StepBudget: 2})
	must(t, err)
	if _, err := p.ScaleUp(context.Background(), pending); !errors.Is(err, allocator.ErrSearchBudget) {
		t.Errorf("with a budget of 2 attempts: err = %v, want ErrSearchBudget", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.ScaleUp(ctx, pending); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func TestScaleUpIsDeterministic(t *testing.T) {
	pending := []scaling.Pending{single(extPod("a", 3)), single(claimPod("m", "mig-devices")), single(extPod("b", 7))}
	var first []string
	for range 3 {
		p, err := scaling.New(newCluster(t, nil), dgxTypes(t), scaling.Options{})
		must(t, err)
		plan, err := p.ScaleUp(context.Background(), pending)
		must(t, err)
		var got []string
		for _, pl := range plan.Placed {
			got = append(got, pl.Pod+"@"+pl.Node)
		}
		if first == nil {
			first = got
		} else if !reflect.DeepEqual(got, first) {
			t.Fatalf("placements %v, then %v", first, got)
		}
	}
}

// TestNewRefusesCostsThatAreNoPrice: a NaN cost compares as neither cheaper nor dearer, so the cheapest
// type first would be decided by where sorting meets it and every plan adding such a node would cost NaN;
// an infinite or negative cost is no price of a node either. New names the type and the field.
func TestNewRefusesCostsThatAreNoPrice(t *testing.T) {
	for _, cost := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1} {
		types := dgxTypes(t)
		types[1].Cost = cost
		_, err := scaling.New(newCluster(t, nil), types, scaling.Options{})
		want := fmt.Sprintf("invalid planner: types[1] dgxh100: cost: must be a finite number, not negative, got %v", cost)
		if !errors.Is(err, scaling.ErrInvalidPlanner) || err.Error() != want {
			t.Errorf("cost %v: err = %v, want %q", cost, err, want)
		}
	}
	types := dgxTypes(t)
	types[0].Cost = 0 // free nodes are a price
	if _, err := scaling.New(newCluster(t, nil), types, scaling.Options{}); err != nil {
		t.Errorf("cost 0: %v", err)
	}
}

// TestGangTriesCountAgainstTheBudget: a gang is not one attempt but one per pod (kube-scheduler's pass
// places each), so that Options.StepBudget bounds ScaleUp and Fits with gangs too.
func TestGangTriesCountAgainstTheBudget(t *testing.T) {
	u := gang("trainers", 10, "one-gpu")
	types := []scaling.NodeType{{Template: profile(t, "dgxh100")}}
	p, err := scaling.New(newCluster(t, nil, u), types, scaling.Options{})
	must(t, err)
	plan, err := p.ScaleUp(context.Background(), []scaling.Pending{u})
	must(t, err)
	if len(plan.Nodes) != 2 || len(plan.Placed) != 10 || plan.Steps < 10 {
		t.Fatalf("plan: %d nodes, %d pods placed in %d steps; want 2 nodes, 10 pods, a step per pod at least", len(plan.Nodes), len(plan.Placed), plan.Steps)
	}
	t.Logf("ten one-GPU pods on two new DGX H100: %d steps", plan.Steps)
	for _, budget := range []int{5, plan.Steps - 1} {
		p, err = scaling.New(newCluster(t, nil, u), types, scaling.Options{StepBudget: budget})
		must(t, err)
		if _, err := p.ScaleUp(context.Background(), []scaling.Pending{u}); !errors.Is(err, allocator.ErrSearchBudget) {
			t.Errorf("ScaleUp with StepBudget %d: %v, want ErrSearchBudget", budget, err)
		}
		if _, err := p.Fits(context.Background(), []scaling.Pending{u}); budget == 5 && !errors.Is(err, allocator.ErrSearchBudget) {
			t.Errorf("Fits with StepBudget %d: %v, want ErrSearchBudget", budget, err)
		}
	}
	p, err = scaling.New(newCluster(t, nil, u), types, scaling.Options{StepBudget: plan.Steps})
	must(t, err)
	again, err := p.ScaleUp(context.Background(), []scaling.Pending{u})
	if err != nil || again.Steps != plan.Steps {
		t.Errorf("ScaleUp with StepBudget %d (what it takes): %v, %v steps", plan.Steps, err, again)
	}
}
