package trace_test

import (
	"context"
	"testing"
	"time"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

// BenchmarkReplay replays the whole default trace of Alibaba's GPU trace v2023 (openb_pod_list_default:
// 8,152 tasks in trace order, none leaving, on the 1,213 nodes and 6,212 GPUs of
// openb_node_list_gpu_node, in ../testdata) with every strategy of [trace.Objects.Strategies] and
// reports per strategy the seconds of one replay, the GPUs left unallocated and the tasks that fit
// nowhere. It does not run with the tests:
//
//	go test -run '^$' -bench Replay -benchtime 1x ./allocator/headroom/trace/
//
// At commit time, on 2 cores shared with other work (load average about 16), seconds per replay,
// GPUs unallocated of 6,212 and tasks that fit nowhere: FirstFit 37.7 s, 453.2 GPUs, 375 tasks;
// BestFit 18.8 s, 581.2, 509; Spread 33.7 s, 724.7, 306 (the CPU profile counts about 30 s of CPU for
// the three). FGD is far slower: its cost measures each candidate node before and after (the same
// replay in allocator/headroom's BenchmarkReplayAlibabaTrace took 458 s); the whole benchmark is
// therefore well over the minute it should take until FGD's cost is cheaper.
func BenchmarkReplay(b *testing.B) {
	tr, err := trace.Open("../testdata/openb_node_list_gpu_node.csv", "../testdata/openb_pod_list_default.csv", trace.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	objs, err := tr.Objects()
	if err != nil {
		b.Fatal(err)
	}
	strategies, err := objs.Strategies()
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range strategies {
		b.Run(s.Name, func(b *testing.B) {
			b.ReportAllocs()
			var curve *trace.Curve
			start := time.Now()
			for range b.N {
				if curve, err = trace.Replay(context.Background(), objs, trace.ReplayOptions{Strategy: s, Samples: 10}); err != nil {
					b.Fatal(err)
				}
			}
			end := curve.Points[len(curve.Points)-1]
			b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/replay")
			b.ReportMetric(end.Unallocated, "GPUs-unallocated")
			b.ReportMetric(float64(end.Failed), "tasks-failed")
			b.ReportMetric(end.Fragmentation, "F(M)")
		})
	}
}
