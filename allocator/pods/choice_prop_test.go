package pods_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
)

// pinnedLoad counts the devices allocated to claims pinned to each node, from the snapshot's claims.
func pinnedLoad(c *pods.Cluster) map[string]int {
	load := map[string]int{}
	for _, claim := range c.Snapshot().Claims("") {
		a := claim.Status.Allocation
		if a == nil || a.NodeSelector == nil || len(a.NodeSelector.NodeSelectorTerms) != 1 {
			continue
		}
		t := a.NodeSelector.NodeSelectorTerms[0]
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 1 && t.MatchFields[0].Key == "metadata.name" && len(t.MatchFields[0].Values) == 1 {
			load[t.MatchFields[0].Values[0]] += len(a.Devices.Results)
		}
	}
	return load
}

// TestPropChoiceByScore: through a stream of placements, assumptions and removals on fleets of nodes of
// a few sizes (whole GPUs without counter sets, where every fill is 0: TestPropBestFitByFill covers
// partitionable ones), BestFit and Spread choose the node a comparison of every node would choose: among the nodes
// where the pod fits (Fits on each), the highest (BestFit) or lowest (Spread) count of devices pinned to
// it, counted afresh from the snapshot's claims, the first by name on ties. Every placement verifies.
func TestPropChoiceByScore(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		choice := rapid.SampledFrom([]pods.Choice{pods.BestFit, pods.Spread}).Draw(rt, "choice")
		var nodes []*v1.Node
		for i := range rapid.IntRange(2, 6).Draw(rt, "nodes") {
			nodes = append(nodes, node(fmt.Sprintf("n%d", i), nil))
		}
		c := pods.New(cluster(t, pods.Options{}, 0, nodes...).Snapshot(), pods.Options{Choice: choice, NameSuffix: fixedSuffixes()})
		snap := c.Snapshot()
		var published []*resourceapi.ResourceSlice
		for _, n := range nodes {
			s := gpus(n.Name, rapid.IntRange(1, 4).Draw(rt, n.Name+"-gpus"))
			published = append(published, s)
			must(t, snap.AddOrUpdateSlice(s))
		}
		for size := int64(1); size <= 3; size++ {
			must(t, c.AddOrUpdateTemplate(template(fmt.Sprintf("gpus-%d", size), size)))
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
			// What comparing every node chooses.
			load := pinnedLoad(c)
			want := ""
			for _, n := range snap.Nodes() {
				probe := claim("probe", int64(size))
				fits, err := snap.Fits(ctx, n, []*resourceapi.ResourceClaim{probe})
				must(t, err)
				if !fits {
					continue
				}
				if want == "" || choice == pods.BestFit && load[n.Name] > load[want] || choice == pods.Spread && load[n.Name] < load[want] {
					want = n.Name
				}
			}
			pl, err := c.Place(ctx, p)
			if want == "" {
				if err == nil {
					rt.Fatalf("%s placed on %s, but fits on no node", p.Name, pl.Node)
				}
				continue
			}
			if err != nil {
				rt.Fatalf("%s: %v, but fits on %s", p.Name, err, want)
			}
			if pl.Node != want {
				rt.Fatalf("%s placed on %s (load %v), want %s", p.Name, pl.Node, load, want)
			}
			verifyAndAssume(rt, c, published, nodes, p, pl)
			placed = append(placed, p)
		}
	})
}

// verifyAndAssume checks a placement's first claim with allocator/verify against the published slices
// and the snapshot's claims on the node chosen, and assumes the placement.
func verifyAndAssume(rt *rapid.T, c *pods.Cluster, published []*resourceapi.ResourceSlice, nodes []*v1.Node, p *v1.Pod, pl *pods.Placement) {
	snap := c.Snapshot()
	var n *v1.Node
	for _, nd := range nodes {
		if nd.Name == pl.Node {
			n = nd
		}
	}
	in := verify.Input{Slices: published, Classes: snap.Classes(), Claims: snap.Claims(""), Node: n}
	claims := []*resourceapi.ResourceClaim{pl.Claims[0].Claim}
	vs, err := verify.Check(context.Background(), in, claims, []resourceapi.AllocationResult{*pl.Claims[0].Claim.Status.Allocation})
	if err != nil {
		rt.Fatal(err)
	}
	if len(vs) > 0 {
		rt.Fatalf("%s on %s does not verify: %v", p.Name, pl.Node, vs)
	}
	if err := c.Assume(pl); err != nil {
		rt.Fatal(err)
	}
}
