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

// BenchmarkChurn fills a whole-GPU fleet (scaleFleet "gpu": 8 GPUs a node, one pod a GPU) to full, not
// timed, then times cycles of one Remove of a random pod and the Place and Assume of a new pod of the
// same shape, which lands where the removed pod was (the only free GPU): a workload that keeps a full
// fleet full. It reports the time and allocations per cycle. Run with -benchtime 1x.
func BenchmarkChurn(b *testing.B) {
	const cycles = 500
	for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit, pods.Spread} {
		for _, n := range []int{500, 1000, 5000} {
			b.Run(fmt.Sprintf("gpu/%s/nodes=%d", choice, n), func(b *testing.B) {
				ctx := context.Background()
				var total time.Duration
				var mallocs uint64
				for range b.N {
					b.StopTimer()
					c, ps := scaleFleet(b, "gpu", choice, n)
					fillRun(b, c, ps)
					rng := rand.New(rand.NewPCG(1, uint64(n)))
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					b.StartTimer()
					start := time.Now()
					for k := range cycles {
						i := rng.IntN(len(ps))
						must(b, c.Remove(ps[i]))
						p := pod(fmt.Sprintf("churn-%06d", k), "gpu=template:one-gpu")
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
