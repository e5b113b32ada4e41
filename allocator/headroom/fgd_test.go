package headroom_test

import (
	"context"
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
		cost, err := inv.FGD(half)
		if err != nil {
			t.Fatal(err)
		}
		return pods.Options{Cost: cost}
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
	if _, err := inv.FGD(nil); err == nil || err.Error() != "headroom: mix: must have at least one shape" {
		t.Fatalf("err = %v", err)
	}
}
