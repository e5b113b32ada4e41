package headroom_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

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
