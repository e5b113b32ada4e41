package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/examples/scheduler-plugin/replay"
)

// tieRule is how an offline variant of FGD decides among nodes that FGD's integer score rates alike,
// emulating what kube-scheduler adds to the plugin's score: its other score plugins, then a draw.
type tieRule struct {
	name string
	// fgdWeight multiplies FGD's score (0..100); the rest is added to it. 1000 makes FGD decide alone
	// wherever its scores differ.
	fgdWeight float64
	least     bool // NodeResourcesFit's LeastAllocated over cpu and memory (weight 1)
	most      bool // NodeResourcesFit's MostAllocated over cpu and memory (weight 1)
	balanced  bool // NodeResourcesBalancedAllocation over cpu and memory (weight 1)
	draw      bool // the rest at random (kube-scheduler's selectHost); else the first by name
}

// tieRules are the variants -offline-ties replays.
var tieRules = []tieRule{
	{name: "FGD, ties by name (offline FGD)", fgdWeight: 1000},
	{name: "FGD, ties drawn", fgdWeight: 1000, draw: true},
	{name: "FGD, ties to LeastAllocated+Balanced, drawn", fgdWeight: 1000, least: true, balanced: true, draw: true},
	{name: "FGD x10 + LeastAllocated + Balanced, drawn", fgdWeight: 10, least: true, balanced: true, draw: true},
	{name: "FGD x100 + LeastAllocated + Balanced, drawn", fgdWeight: 100, least: true, balanced: true, draw: true},
	{name: "FGD x300 + LeastAllocated + Balanced, drawn", fgdWeight: 300, least: true, balanced: true, draw: true},
	{name: "FGD, ties to MostAllocated, drawn", fgdWeight: 1000, most: true, draw: true},
	{name: "FGD, ties to MostAllocated+Balanced, drawn", fgdWeight: 1000, most: true, balanced: true, draw: true},
	{name: "FGD x10 + MostAllocated, drawn", fgdWeight: 10, most: true, draw: true},
}

// offlineTies replays each seed's slice offline with FGD and each tie rule, printing GPUs
// unallocated and tasks failed: which part of the live plugin's gap to the offline FGD the scheduler's
// way of deciding among equally rated nodes explains, without a control plane.
func offlineTies(nodesFile, podsFile string, step, nodes int, seedList string, until float64) error {
	ctx := context.Background()
	t, err := trace.Open(nodesFile, podsFile, trace.ReadOptions{})
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "seed\ttasks\tvariant\tGPUs unallocated\ttasks failed\t")
	for _, f := range strings.Split(seedList, ",") {
		seed, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return fmt.Errorf("-seeds: %w", err)
		}
		s, err := replay.NewSlice(t, step, nodes, seed, until, maxTasks)
		if err != nil {
			return err
		}
		inv, err := s.Objects.Inventory()
		if err != nil {
			return err
		}
		for _, rule := range tieRules {
			fgdCost, prefer, err := inv.FGD(s.Objects.Mix)
			if err != nil {
				return err
			}
			rng := rand.New(rand.NewPCG(seed, 0x7469)) // "ti"
			cost := func(in pods.CostInput) (float64, error) {
				c, err := fgdCost(in)
				if err != nil {
					return 0, err
				}
				score := -c * rule.fgdWeight
				score += rule.extra(in)
				if rule.draw {
					score += rng.Float64() * 0.5 // breaks exact ties only: the scores are integers
				}
				return -score, nil
			}
			st := trace.Strategy{Name: rule.name, Options: pods.Options{Cost: cost, Prefer: prefer, Workers: 1}}
			c, err := trace.Replay(ctx, s.Objects, trace.ReplayOptions{Strategy: st, Samples: 1})
			if err != nil {
				return err
			}
			last := c.Points[len(c.Points)-1]
			fmt.Fprintf(w, "%d\t%d\t%s\t%.1f\t%d\t\n", seed, last.Arrivals, rule.name, last.Unallocated, last.Failed)
		}
	}
	return w.Flush()
}

// extra is the default score plugins' part of the node's score, as kube-scheduler v1.37.2 computes
// them for cpu and memory (weights 1): LeastAllocated and MostAllocated
// (pkg/scheduler/framework/plugins/noderesources/{least,most}_allocated.go: the mean over the resources
// of the free, resp. requested, share ×100, integer), BalancedAllocation (balanced_allocation.go: (1 −
// the standard deviation of the requested shares) ×100, integer), with the pod's requests counted in.
func (r tieRule) extra(in pods.CostInput) float64 {
	if !r.least && !r.most && !r.balanced {
		return 0
	}
	var fr [2]float64
	var least, most float64
	for i, res := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		q := in.Node.Status.Allocatable[res]
		alloc := q.Value()
		if res == v1.ResourceCPU {
			alloc = q.MilliValue()
		}
		if alloc <= 0 {
			continue
		}
		req := in.Requested[res] + in.PodRequests[res]
		req = min(req, alloc)
		least += float64((alloc-req)*100/alloc) / 2
		most += float64(req*100/alloc) / 2
		fr[i] = float64(req) / float64(alloc)
	}
	var s float64
	if r.least {
		s += math.Floor(least)
	}
	if r.most {
		s += math.Floor(most)
	}
	if r.balanced {
		s += math.Floor((1 - math.Abs(fr[0]-fr[1])/2) * 100)
	}
	return s
}
