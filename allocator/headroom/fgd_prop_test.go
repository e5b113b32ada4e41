package headroom_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
)

// TestPropFGDFitsWhereFirstFit: through a stream of pods of whole GPUs and shares on nodes of 1–3 GPUs,
// shared or not, a Place with FGD fits the pod exactly when FirstFit on the same state does, each FGD
// placement verifies with allocator/verify, and F(M) stays within [0, free capacity].
func TestPropFGDFitsWhereFirstFit(t *testing.T) {
	ctx := context.Background()
	tmpls := []string{"one-gpu", "two-gpus", "half-gpu", "third-gpu", "tenth-gpu"}
	rapid.Check(t, func(rt *rapid.T) {
		var specs []string
		for i := range rapid.IntRange(1, 4).Draw(rt, "nodes") {
			shares := rapid.SampledFrom([]int{0, 1000}).Draw(rt, fmt.Sprint("shares-", i))
			specs = append(specs, fmt.Sprintf("n%d 64 %d %d", i, rapid.IntRange(1, 3).Draw(rt, fmt.Sprint("gpus-", i)), shares))
		}
		published := slicesOf(specs...)
		inv, err := headroom.NewInventory(published)
		if err != nil {
			rt.Fatal(err)
		}
		mix := []headroom.Shape{
			{Name: "whole", Weight: 0.5, Requests: []headroom.Request{whole(1)}},
			{Name: "half", Weight: 0.5, Requests: []headroom.Request{share(500)}},
		}
		cost, err := inv.FGD(mix)
		if err != nil {
			rt.Fatal(err)
		}
		c := cluster(pods.Options{Cost: cost}, specs...)
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			p := pod(fmt.Sprint("p", step), "1", rapid.SampledFrom(tmpls).Draw(rt, fmt.Sprint("tmpl-", step)))
			// FirstFit on a fork of the same snapshot (a fork of c would keep its Cost).
			fork := c.Snapshot().Fork()
			ff := pods.New(fork, pods.Options{})
			addTemplates(ff)
			_, ffErr := ff.Place(ctx, p)
			_ = fork.Discard()
			pl, err := c.Place(ctx, p)
			if (err == nil) != (ffErr == nil) || (err != nil && !errors.Is(err, pods.ErrNoNode)) {
				rt.Fatalf("%s: FGD %v, FirstFit %v", p.Name, err, ffErr)
			}
			if err != nil {
				continue
			}
			snap := c.Snapshot()
			n, _ := snap.Node(pl.Node)
			in := verify.Input{Slices: published, Classes: snap.Classes(), Claims: snap.Claims(""), Node: n}
			claim := pl.Claims[0].Claim
			vs, err := verify.Check(ctx, in, []*resourceapi.ResourceClaim{claim}, []resourceapi.AllocationResult{*claim.Status.Allocation})
			if err != nil || len(vs) > 0 {
				rt.Fatalf("%s on %s does not verify: %v %v", p.Name, pl.Node, err, vs)
			}
			if err := c.Assume(pl); err != nil {
				rt.Fatal(err)
			}
			rep, err := inv.Fragmentation(c, mix)
			if err != nil {
				rt.Fatal(err)
			}
			if rep.F < -1e-9 || rep.F > rep.Free+1e-9 {
				rt.Fatalf("F %v outside [0, %v]", rep.F, rep.Free)
			}
		}
	})
}

// TestPropCachedMeasure: through a stream of FGD placements, assumes and removals of pods
// of whole GPUs, shares and CPU on nodes of 1–3 GPUs, shared or not, and of 2–8 CPUs, the measure of an
// Inventory that kept its nodes' states from step to step equals, node by node, the measure of a new
// Inventory, and every FGD cost the placements asked for equals the growth a new Inventory measures
// from scratch for the same input.
func TestPropCachedMeasure(t *testing.T) {
	ctx := context.Background()
	tmpls := []string{"one-gpu", "two-gpus", "half-gpu", "third-gpu", "tenth-gpu", ""}
	rapid.Check(t, func(rt *rapid.T) {
		var specs []string
		for i := range rapid.IntRange(1, 4).Draw(rt, "nodes") {
			shares := rapid.SampledFrom([]int{0, 1000}).Draw(rt, fmt.Sprint("shares-", i))
			cpus := rapid.IntRange(2, 8).Draw(rt, fmt.Sprint("cpus-", i))
			specs = append(specs, fmt.Sprintf("n%d %d %d %d", i, cpus, rapid.IntRange(1, 3).Draw(rt, fmt.Sprint("gpus-", i)), shares))
		}
		published := slicesOf(specs...)
		inv, err := headroom.NewInventory(published)
		if err != nil {
			rt.Fatal(err)
		}
		mix := []headroom.Shape{
			{Name: "whole", Weight: 0.4, Requests: []headroom.Request{whole(1)}, CPU: cpus(2)},
			{Name: "half", Weight: 0.4, Requests: []headroom.Request{share(500)}, CPU: cpus(1)},
			{Name: "cpu", Weight: 0.2, CPU: cpus(3)},
		}
		cached, err := inv.FGD(mix)
		if err != nil {
			rt.Fatal(err)
		}
		var mismatch error
		cost := func(in pods.CostInput) (float64, error) {
			got, err := cached(in)
			if err != nil {
				return 0, err
			}
			fresh, _ := headroom.NewInventory(published)
			fc, _ := fresh.FGD(mix)
			want, _ := fc(in)
			if got != want && mismatch == nil {
				mismatch = fmt.Errorf("%s on %s: cached growth %v, from scratch %v", in.Pod.Name, in.Node.Name, got, want)
			}
			return got, nil
		}
		c := cluster(pods.Options{Cost: cost}, specs...)
		var placed []*v1.Pod
		for step := range rapid.IntRange(1, 15).Draw(rt, "steps") {
			if len(placed) > 0 && rapid.IntRange(0, 3).Draw(rt, fmt.Sprint("remove-", step)) == 0 {
				k := rapid.IntRange(0, len(placed)-1).Draw(rt, fmt.Sprint("which-", step))
				if err := c.Remove(placed[k]); err != nil {
					rt.Fatal(err)
				}
				placed = append(placed[:k], placed[k+1:]...)
			} else {
				p := pod(fmt.Sprint("p", step), fmt.Sprint(rapid.IntRange(1, 3).Draw(rt, fmt.Sprint("cpu-", step))), rapid.SampledFrom(tmpls).Draw(rt, fmt.Sprint("tmpl-", step)))
				pl, err := c.Place(ctx, p)
				if errors.Is(err, pods.ErrNoNode) {
					continue
				}
				if err != nil {
					rt.Fatal(err)
				}
				if err := c.Assume(pl); err != nil {
					rt.Fatal(err)
				}
				placed = append(placed, pl.Pod)
			}
			if mismatch != nil {
				rt.Fatal(mismatch)
			}
			got, err := inv.Fragmentation(c, mix)
			if err != nil {
				rt.Fatal(err)
			}
			fresh, _ := headroom.NewInventory(published)
			want, _ := fresh.Fragmentation(c, mix)
			if got.String() != want.String() || !near(got.F, want.F) {
				rt.Fatalf("step %d: cached\n%s\nfrom scratch\n%s", step, got, want)
			}
		}
	})
}
