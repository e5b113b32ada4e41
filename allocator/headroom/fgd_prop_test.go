package headroom_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
)

// TestPropFGDFitsWhereFirstFit: through a stream of pods of whole GPUs, shares and CPU (or CPU only) on
// nodes of 1–3 GPUs, shared or not, and 2–8 CPUs, a Place with FGD (its mix asking for CPU too) fits
// the pod exactly when FirstFit and BestFit on the same state do, each FGD placement verifies with
// allocator/verify, and F(M) stays within [0, free capacity].
func TestPropFGDFitsWhereFirstFit(t *testing.T) {
	ctx := context.Background()
	tmpls := []string{"one-gpu", "two-gpus", "half-gpu", "third-gpu", "tenth-gpu", ""}
	rapid.Check(t, func(rt *rapid.T) {
		specs := drawSpecs(rt)
		published := slicesOf(specs...)
		inv, err := headroom.NewInventory(published)
		if err != nil {
			rt.Fatal(err)
		}
		mix := []headroom.Shape{
			{Name: "whole", Weight: 0.5, Requests: []headroom.Request{whole(1)}, CPU: cpus(2)},
			{Name: "half", Weight: 0.5, Requests: []headroom.Request{share(500)}, CPU: cpus(1)},
		}
		cost, prefer, err := inv.FGD(mix)
		if err != nil {
			rt.Fatal(err)
		}
		c := cluster(pods.Options{Cost: cost, Prefer: prefer}, specs...)
		var bound []*v1.Pod // the pods placed, bound to their nodes, for the other strategies' clusters
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			cpu := fmt.Sprint(rapid.IntRange(1, 3).Draw(rt, fmt.Sprint("cpu-", step)))
			p := pod(fmt.Sprint("p", step), cpu, rapid.SampledFrom(tmpls).Draw(rt, fmt.Sprint("tmpl-", step)))
			// The other strategies on a fork of the same snapshot (a fork of c would keep its Cost),
			// told the pods on each node.
			fork := c.Snapshot().Fork()
			var others []error
			for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit} {
				o := pods.New(fork, pods.Options{Choice: choice})
				addTemplates(o)
				for _, b := range bound {
					must(o.AddOrUpdatePod(b))
				}
				_, err := o.Place(ctx, p)
				others = append(others, err)
			}
			_ = fork.Discard()
			pl, err := c.Place(ctx, p)
			for i, oErr := range others {
				if (err == nil) != (oErr == nil) || (err != nil && !errors.Is(err, pods.ErrNoNode)) {
					rt.Fatalf("%s: FGD %v, %v %v", p.Name, err, []pods.Choice{pods.FirstFit, pods.BestFit}[i], oErr)
				}
			}
			if err != nil {
				continue
			}
			snap := c.Snapshot()
			n, _ := snap.Node(pl.Node)
			in := verify.Input{Slices: published, Classes: snap.Classes(), Claims: snap.Claims(""), Node: n}
			for _, pc := range pl.Claims {
				claim := pc.Claim
				vs, err := verify.Check(ctx, in, []*resourceapi.ResourceClaim{claim}, []resourceapi.AllocationResult{*claim.Status.Allocation})
				if err != nil || len(vs) > 0 {
					rt.Fatalf("%s on %s does not verify: %v %v", p.Name, pl.Node, err, vs)
				}
			}
			if err := c.Assume(pl); err != nil {
				rt.Fatal(err)
			}
			b := p.DeepCopy()
			b.Spec.NodeName = pl.Node
			bound = append(bound, b)
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
		specs := drawSpecs(rt)
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
		cached, cachedPrefer, err := inv.FGD(mix)
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
			fc, _, _ := fresh.FGD(mix)
			want, _ := fc(in)
			if got != want && mismatch == nil {
				mismatch = fmt.Errorf("%s on %s: cached growth %v, from scratch %v", in.Pod.Name, in.Node.Name, got, want)
			}
			return got, nil
		}
		prefer := func(in pods.CostInput) ([]allocator.DeviceID, error) {
			got, err := cachedPrefer(in)
			if err != nil {
				return nil, err
			}
			fresh, _ := headroom.NewInventory(published)
			_, fp, _ := fresh.FGD(mix)
			want, _ := fp(in)
			if fmt.Sprint(got) != fmt.Sprint(want) && mismatch == nil {
				mismatch = fmt.Errorf("%s on %s: cached preference %v, from scratch %v", in.Pod.Name, in.Node.Name, got, want)
			}
			return got, nil
		}
		c := cluster(pods.Options{Cost: cost, Prefer: prefer}, specs...)
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

// drawSpecs draws the node specs of a small fleet (see cluster): 1–4 nodes of 2–8 CPUs and 1–3 GPUs,
// each with shares or without.
func drawSpecs(rt *rapid.T) []string {
	var specs []string
	for i := range rapid.IntRange(1, 4).Draw(rt, "nodes") {
		shares := rapid.SampledFrom([]int{0, 1000}).Draw(rt, fmt.Sprint("shares-", i))
		cpus := rapid.IntRange(2, 8).Draw(rt, fmt.Sprint("cpus-", i))
		specs = append(specs, fmt.Sprintf("n%d %d %d %d", i, cpus, rapid.IntRange(1, 3).Draw(rt, fmt.Sprint("gpus-", i)), shares))
	}
	return specs
}
