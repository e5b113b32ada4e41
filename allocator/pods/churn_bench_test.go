package pods_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/dralloc/dralloc/allocator/pods"
)

// BenchmarkChurn fills a fleet (scaleFleet: "gpu", 8 whole GPUs a node, one pod a GPU; "mig", DGX H100 in
// dynamic MIG, one pod a 3g.40gb partition) to full, not timed, then times cycles of one Remove of a
// random pod and the Place and Assume of a new pod of the same shape, which lands where the removed pod
// was (the only room left): a workload that keeps a full fleet full. It reports the time and
// allocations per cycle. Run with -benchtime 1x.
//
// Measured (one run each, on a 2-core machine under a load average of about 10: times vary several-fold
// from run to run; allocations are exact). µs per cycle / allocations per cycle, gpu at 500, 1,000 and
// 5,000 nodes (1,000 cycles), mig at 500 nodes (200 cycles):
//
//	FirstFit   146 / 224     79 / 224    217 / 224    mig  289 / 430
//	BestFit    357 / 220    115 / 220    101 / 220    mig  712 / 578
//	Spread     156 / 210    113 / 210    163 / 210    mig  166 / 406
//
// Before removals kept the indexes (nodeindex.go), every Remove emptied them, and the placement after
// it filtered the fleet again (FirstFit every full node before the freed one, BestFit and Spread every
// node, to rebuild the rank index; mig BestFit allocated and scored every node too), at the same load:
// gpu FirstFit 1,331, 984 and 5,366 µs; BestFit 5,266, 9,949 and 98,397 µs; Spread 4,032, 16,189 and
// 129,590 µs, with 236 to 356 allocations a cycle, growing with the fleet; mig FirstFit 1,047 µs / 439,
// BestFit 173,626 µs / 201,274, Spread 30,630 µs / 462.
func BenchmarkChurn(b *testing.B) {
	fleets := []struct {
		kind   string
		n      int
		cycles int
		claim  string // the new pods' claim
	}{
		{"gpu", 500, 1000, "gpu=template:one-gpu"},
		{"gpu", 1000, 1000, "gpu=template:one-gpu"},
		{"gpu", 5000, 1000, "gpu=template:one-gpu"},
		// DGX H100 in dynamic MIG (counter sets: BestFit scores the fill): 1 GB resident at 500 nodes.
		{"mig", 500, 200, "mig=template:one-mig"},
	}
	for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit, pods.Spread} {
		for _, f := range fleets {
			kind, n, cycles := f.kind, f.n, f.cycles
			b.Run(fmt.Sprintf("%s/%s/nodes=%d", kind, choice, n), func(b *testing.B) {
				ctx := context.Background()
				var total time.Duration
				var mallocs uint64
				for range b.N {
					b.StopTimer()
					c, ps := scaleFleet(b, kind, choice, n)
					fillRun(b, c, ps)
					rng := rand.New(rand.NewPCG(1, uint64(n)))
					runtime.GC() // the fill's garbage is not the cycles'
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					b.StartTimer()
					start := time.Now()
					for k := range cycles {
						i := rng.IntN(len(ps))
						must(b, c.Remove(ps[i]))
						p := pod(fmt.Sprintf("churn-%06d", k), f.claim)
						pl, err := c.Place(ctx, p)
						if err != nil {
							b.Fatal(err)
						}
						must(b, c.Assume(pl))
						ps[i] = p
					}
					total += time.Since(start)
					b.StopTimer()
					runtime.ReadMemStats(&after)
					mallocs += after.Mallocs - before.Mallocs
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*cycles), "ns/cycle")
				b.ReportMetric(float64(mallocs)/float64(b.N*cycles), "allocs/cycle")
			})
		}
	}
}
