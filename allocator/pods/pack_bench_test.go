package pods_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// fillMix is the stream of the fill experiment: templates of dgxMIG with their weights, and the memory
// slices of each (of a GPU's seven).
var fillMix = []struct {
	template string
	weight   int
	slices   int
}{{"mig-1g", 4, 1}, {"mig-2g", 3, 2}, {"mig-3g", 2, 3}, {"mig-7g", 1, 7}}

// fillResult is what one run of the fill experiment measured.
type fillResult struct {
	placed    int // pods placed
	placed7g  int // of them, pods for a 7g partition (a whole GPU)
	refused7g int // 7g pods that fit nowhere
	slicesEnd int // memory slices in use at the end
	// wholeAtHalf (arrivals): GPUs no device was allocated from when half the memory slices were first
	// in use.
	wholeAtHalf int
	// wholeSum and samples (churn): GPUs no device was allocated from, summed over a sample every 16
	// steps.
	wholeSum, samples int
}

// fillExperiment places a seeded random stream of 1g/2g/3g/7g pods (fillMix) on a fleet of nodes DGX H100
// nodes in dynamic MIG with the choice, each pod assumed where it fits and passed over where it fits
// nowhere. Arrivals only (churn false), it stops when a 1g pod fits nowhere (then no pod fits: a free
// slice of a larger profile holds a 1g one), within a bound of steps. With churn, every third step
// instead removes a pod placed before, drawn at random, so the fleet turns over, for four steps per
// memory slice of the fleet.
func fillExperiment(tb testing.TB, choice pods.Choice, nodes int, seed uint64, churn bool) fillResult {
	tb.Helper()
	ctx := context.Background()
	c, _ := dgxMIG(tb, choice, nodes)
	total, weights := nodes*8*7, 0
	for _, m := range fillMix {
		weights += m.weight
	}
	steps := 20 * total
	if churn {
		steps = 4 * total
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	var res fillResult
	type live struct {
		pod    *v1.Pod
		slices int
	}
	var placed []live
	used := 0
	for step := range steps {
		if churn && step%16 == 0 {
			res.wholeSum += nodes*8 - usedSets(tb, c.Snapshot())
			res.samples++
		}
		if churn && step%3 == 2 && len(placed) > 0 {
			k := rng.IntN(len(placed))
			must(tb, c.Remove(placed[k].pod))
			used -= placed[k].slices
			placed[k] = placed[len(placed)-1]
			placed = placed[:len(placed)-1]
			continue
		}
		w := rng.IntN(weights)
		m := fillMix[0]
		for _, m = range fillMix {
			if w < m.weight {
				break
			}
			w -= m.weight
		}
		p := pod(fmt.Sprintf("pod-%05d", step), "gpu=template:"+m.template)
		pl, err := c.Place(ctx, p)
		if errors.Is(err, pods.ErrNoNode) {
			if m.slices == 7 {
				res.refused7g++
			}
			if m.slices == 1 && !churn {
				break
			}
			continue
		}
		must(tb, err)
		must(tb, c.Assume(pl))
		placed = append(placed, live{p, m.slices})
		res.placed++
		if m.slices == 7 {
			res.placed7g++
		}
		if !churn && used < total/2 && used+m.slices >= total/2 {
			res.wholeAtHalf = nodes*8 - usedSets(tb, c.Snapshot())
		}
		used += m.slices
	}
	res.slicesEnd = used
	return res
}

// BenchmarkFillDGX is the fill experiment on 8 DGX H100 nodes in dynamic MIG (64 GPUs, 448 memory
// slices), per choice, summed over five seeds, arrivals only and with churn: pods placed (placed), of
// them 7g pods (placed-7g), 7g pods that fit nowhere (refused-7g), memory slices in use at the end
// (slices-%-end, the mean), and the GPUs still whole when half the slices were first in use
// (arrivals: whole-gpus-at-half) or on average over the run (churn: whole-gpus-mean). One op is the
// five runs.
func BenchmarkFillDGX(b *testing.B) {
	const nodes, seeds = 8, 5
	for _, churn := range []bool{false, true} {
		for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit} {
			name := "arrivals/" + choice.String()
			if churn {
				name = "churn/" + choice.String()
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				var sum fillResult
				for b.Loop() {
					sum = fillResult{}
					for seed := range uint64(seeds) {
						r := fillExperiment(b, choice, nodes, seed, churn)
						sum.placed += r.placed
						sum.placed7g += r.placed7g
						sum.refused7g += r.refused7g
						sum.slicesEnd += r.slicesEnd
						sum.wholeAtHalf += r.wholeAtHalf
						sum.wholeSum += r.wholeSum
						sum.samples += r.samples
					}
				}
				b.ReportMetric(float64(sum.placed), "placed")
				b.ReportMetric(float64(sum.placed7g), "placed-7g")
				b.ReportMetric(float64(sum.refused7g), "refused-7g")
				b.ReportMetric(100*float64(sum.slicesEnd)/float64(seeds*nodes*8*7), "slices-%-end")
				if churn {
					b.ReportMetric(float64(sum.wholeSum)/float64(sum.samples), "whole-gpus-mean")
				} else {
					b.ReportMetric(float64(sum.wholeAtHalf), "whole-gpus-at-half")
				}
			})
		}
	}
}

// BenchmarkAllocateDGXNode allocates one 1g.10gb partition on a DGX H100 in dynamic MIG whose GPUs 0–3 each
// hold a 3g partition, in FirstFit's order (Allocate on the FirstFit snapshot) and in BestFit's
// (AllocateWith, as pods' BestFit allocates on every node): the cost of ranking the 232 candidates
// against FirstFit's scan, per node.
func BenchmarkAllocateDGXNode(b *testing.B) {
	c, _ := dgxMIG(b, pods.FirstFit, 1)
	snap := c.Snapshot()
	ctx := context.Background()
	hold(b, snap, "node-0000", "gpu-0-mig-3g40gb-2-0", "gpu-1-mig-3g40gb-2-0", "gpu-2-mig-3g40gb-2-0", "gpu-3-mig-3g40gb-2-0")
	claims := []*resourceapi.ResourceClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe"},
		Spec: nvidiaTemplate("probe", "mig", `device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`).Spec.Spec}}
	n := snap.Nodes()[0]
	for _, st := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit} {
		b.Run(st.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := snap.AllocateWith(ctx, st, n, claims); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
