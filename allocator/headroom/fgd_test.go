package headroom_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// fgdCluster is two nodes of one shared GPU (1000 shares): a with 400 shares used (600 left), b
// unused; cost is FGD for a mix of half GPUs only.
func fgdCluster(t *testing.T, opts func(inv *headroom.Inventory) pods.Options) *pods.Cluster {
	specs := []string{"a 32 1 1000", "b 32 1 1000"}
	inv, err := headroom.NewInventory(slicesOf(specs...))
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(opts(inv), specs...)
	placeOn(t, c, "third", "a", "third-gpu")
	placeOn(t, c, "tenth", "a", "tenth-gpu")
	return c
}

func TestFGDChoosesLeastGrowth(t *testing.T) {
	ctx := context.Background()
	half := []headroom.Shape{{Name: "half", Weight: 1, Requests: []headroom.Request{share(500)}}}
	fgd := func(inv *headroom.Inventory) pods.Options {
		cost, prefer, err := inv.FGD(half)
		if err != nil {
			t.Fatal(err)
		}
		return pods.Options{Cost: cost, Prefer: prefer}
	}
	first := func(*headroom.Inventory) pods.Options { return pods.Options{} }
	for _, tc := range []struct {
		name, tmpl string
		opts       func(*headroom.Inventory) pods.Options
		want       string
	}{
		// A share of 300 on a leaves 300 there, too little for a half: F_a grows from 0 to 0.3. On b it
		// leaves 700, where a half still fits: F_b stays 0. FGD takes b; FirstFit takes a.
		{"third, FGD", "third-gpu", fgd, "b"},
		{"third, FirstFit", "third-gpu", first, "a"},
		// A share of 100 on a leaves 500, where a half still fits: growth 0 on both, a by name.
		{"tenth, FGD", "tenth-gpu", fgd, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fgdCluster(t, tc.opts)
			p, err := c.Place(ctx, pod("new", "1", tc.tmpl))
			if err != nil {
				t.Fatal(err)
			}
			if p.Node != tc.want {
				t.Fatalf("placed on %s, want %s", p.Node, tc.want)
			}
		})
	}
}

func TestFGDBadMix(t *testing.T) {
	inv, _ := headroom.NewInventory(slicesOf("a 1 1 0"))
	if _, _, err := inv.FGD(nil); err == nil || err.Error() != "headroom: mix: must have at least one shape" {
		t.Fatalf("err = %v", err)
	}
}

// FGD chooses the device within a node by the gradient too: a share goes to the device of the node
// where F_n(M) grows least, and the node is rated with that device.
func TestFGDChoosesDevice(t *testing.T) {
	ctx := context.Background()
	half := []headroom.Shape{{Name: "half", Weight: 1, Requests: []headroom.Request{share(500)}}}
	specs := []string{"a 32 1 1000", "b 32 2 1000"}
	for _, tc := range []struct {
		name             string
		prefer           bool
		tmpl             string
		wantNode, wantOn string
	}{
		// a/gpu-0 and b/gpu-0 have 600 shares left, b/gpu-1 1000. A share of 300 on a 600 leaves 300,
		// too little for a half (growth 0.3); on b/gpu-1 it leaves 700 (growth 0). b is rated with
		// gpu-1, and the share is placed there.
		{"third", true, "third-gpu", "b", "gpu-1"},
		// Without Prefer the node is rated as with it, and BestFit's device (the most used) is taken.
		{"third, without Prefer", false, "third-gpu", "b", "gpu-0"},
		// A share of 100 leaves a half room on every device (growth 0): ties keep BestFit's device,
		// and the nodes' tie goes to a, the first by name.
		{"tenth", true, "tenth-gpu", "a", "gpu-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := headroom.NewInventory(slicesOf(specs...))
			if err != nil {
				t.Fatal(err)
			}
			cost, prefer, err := inv.FGD(half)
			if err != nil {
				t.Fatal(err)
			}
			opts := pods.Options{Cost: cost}
			if tc.prefer {
				opts.Prefer = prefer
			}
			c := cluster(opts, specs...)
			for _, n := range []string{"a", "b"} {
				placeOn(t, c, "third-"+n, n, "third-gpu")
				placeOn(t, c, "tenth-"+n, n, "tenth-gpu")
			}
			p, err := c.Place(ctx, pod("new", "1", tc.tmpl))
			if err != nil {
				t.Fatal(err)
			}
			on := p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Device
			if p.Node != tc.wantNode || on != tc.wantOn {
				t.Fatalf("placed on %s/%s, want %s/%s", p.Node, on, tc.wantNode, tc.wantOn)
			}
		})
	}
}

// FGD rates nodes by the simulator's integer score, 100·σ(−growth): growths that differ by less than
// its step tie, and the tie goes to the first node by name. With a mix of 5 % half
// GPUs and 95 % CPU-only tasks, a share of 300 on a's unused GPU grows F_a by −0.285 (score 57); on b's
// GPU with 400 shares left by −0.30 (score 57 too): the tie goes to a, the first by name, where the
// least growth alone would take b.
func TestFGDScoresAsTheSimulator(t *testing.T) {
	specs := []string{"a 32 1 1000", "b 32 1 1000"}
	inv, err := headroom.NewInventory(slicesOf(specs...))
	if err != nil {
		t.Fatal(err)
	}
	mix := []headroom.Shape{
		{Name: "half", Weight: 0.05, Requests: []headroom.Request{share(500)}},
		{Name: "cpu", Weight: 0.95},
	}
	cost, prefer, err := inv.FGD(mix)
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(pods.Options{Cost: cost, Prefer: prefer}, specs...)
	placeOn(t, c, "half", "b", "half-gpu")
	placeOn(t, c, "tenth", "b", "tenth-gpu")
	p, err := c.Place(context.Background(), pod("new", "1", "third-gpu"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Node != "a" {
		t.Fatalf("placed on %s, want a", p.Node)
	}
}

// Among nodes of one score FGD takes the first by name, as the simulator's kube-scheduler does (its
// selectHost keeps the smallest node name of the best score), not a draw: pods placed alone on two
// identical empty nodes, added to the cluster b first, all go to a, the first by name.
func TestFGDTakesFirstNodeByNameOnTies(t *testing.T) {
	specs := []string{"b 32 1 1000", "a 32 1 1000"}
	inv, err := headroom.NewInventory(slicesOf(specs...))
	if err != nil {
		t.Fatal(err)
	}
	cost, prefer, err := inv.FGD([]headroom.Shape{{Name: "half", Weight: 1, Requests: []headroom.Request{share(500)}}})
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(pods.Options{Cost: cost, Prefer: prefer}, specs...)
	for i := range 32 {
		name := fmt.Sprintf("p%d", i)
		p, err := c.Place(context.Background(), pod(name, "1", "third-gpu"))
		if err != nil {
			t.Fatal(err)
		}
		if p.Node != "a" {
			t.Fatalf("pod %s placed on %s, want a (the first by name of two nodes of one score)", name, p.Node)
		}
	}
}

// Among a node's devices of one score FGD takes the first in the node's order, as the simulator takes
// the first GPU of the best score (fgd_score.go), not BestFit's device. With a mix of tenths, a's
// gpu-0 is free and gpu-1 has 500 shares left; a share of 300 leaves 700 or 200, both at least a
// tenth: growth 0 on either device, score 50 both. BestFit would take gpu-1, the more used; FGD takes
// gpu-0.
func TestFGDTakesFirstDeviceOnTies(t *testing.T) {
	ctx := context.Background()
	specs := []string{"a 32 2 1000"}
	inv, err := headroom.NewInventory(slicesOf(specs...))
	if err != nil {
		t.Fatal(err)
	}
	cost, prefer, err := inv.FGD([]headroom.Shape{{Name: "tenth", Weight: 1, Requests: []headroom.Request{share(100)}}})
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(pods.Options{Cost: cost, Prefer: prefer}, specs...)
	// Two halves fill gpu-0 (ties go to the first device), a third half takes gpu-1, and the first two
	// go away: gpu-0 free, gpu-1 half used.
	var placed []*pods.Placement
	for _, name := range []string{"h1", "h2", "h3"} {
		p, err := c.Place(ctx, pod(name, "1", "half-gpu"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Assume(p); err != nil {
			t.Fatal(err)
		}
		placed = append(placed, p)
	}
	for i, want := range []string{"gpu-0", "gpu-0", "gpu-1"} {
		if on := placed[i].Claims[0].Claim.Status.Allocation.Devices.Results[0].Device; on != want {
			t.Fatalf("half %d on %s, want %s", i+1, on, want)
		}
	}
	for _, p := range placed[:2] {
		if err := c.Remove(p.Pod); err != nil {
			t.Fatal(err)
		}
	}
	p, err := c.Place(ctx, pod("new", "1", "third-gpu"))
	if err != nil {
		t.Fatal(err)
	}
	if on := p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Device; on != "gpu-0" {
		t.Fatalf("third on %s, want gpu-0 (the first device of score 50)", on)
	}
}
