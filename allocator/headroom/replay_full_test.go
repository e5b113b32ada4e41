package headroom_test

import (
	"math/rand/v2"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// BenchmarkReplayAlibabaTrace replays Alibaba's GPU trace v2023 (openb_pod_list_default: 8,152 tasks
// in arrival order, none leaving, on the 1,213 nodes and 6,212 GPUs of openb_node_list_gpu_node; see
// testdata/README.md) until the tasks arrived ask for the cluster's 6,212 GPUs (toCapacity: the trace
// asks for 98% of them, 144 tasks drawn from it make up the rest, 8,296 in all), where the paper reads
// the GPUs left unallocated, with FirstFit, BestFit and FGD (the mix is the tasks' shapes, GPUs, CPU and
// memory, by frequency). It reports, per strategy, the GPUs left unallocated, the GPU tasks that fit
// nowhere and the wall time of one replay, and checks that the measure's free GPUs are the GPUs less
// what the placed tasks hold. It does not run with the tests:
//
//	go test -run '^$' -bench ReplayAlibabaTrace -benchtime 1x ./allocator/headroom/
//
// At commit time (2 cores shared with other work, load average 10–20), GPUs unallocated of 6,212 (GPU
// tasks that fit nowhere) and seconds per replay: FirstFit 452.6 (500) in 25 s, BestFit 580.7 (634) in
// 18 s, FGD 412.9 (433) in 183 s, when FGD rated nodes by the exact growth (with the simulator's
// integer score, see the package doc, trace order in allocator/headroom/trace gave 363.4 for 413.1). Before the measure counted CPU and memory (the whole trace, without
// the drawn tasks): FirstFit 453.2, BestFit 581.2, FGD 668.4, in 41, 44 and 458 s. Of FGD's CPU time
// the measure is now about 5%; the rest is the pod layer's, which with a Cost filters every node and
// allocates the pod on each node where it fits (pods.Options.Cost). The paper reports FGD leaving up to
// 49% fewer GPUs unallocated than the best of its baselines (about 290 GPUs); its simulator breaks ties
// between nodes at random among scores rounded to integers, where FGD here takes the first by name;
// breaking ties by a hash of pod and node instead left 411.1 GPUs unallocated, and a mix without memory
// (the simulator's fit test reads CPU only) 409.5, so neither explains the gap.
func BenchmarkReplayAlibabaTrace(b *testing.B) {
	specs, trace, mix := loadTrace(b, "openb_node_list_gpu_node.csv", "openb_pod_list_default.csv")
	inv, fgd, totalGPUs := traceInventory(b, specs, mix)
	tasks := toCapacity(trace, float64(totalGPUs))
	for _, run := range []struct {
		name string
		opts pods.Options
	}{{"FirstFit", pods.Options{}}, {"BestFit", pods.Options{Choice: pods.BestFit}}, {"FGD", fgd}} {
		b.Run(run.name, func(b *testing.B) {
			var r replayed
			start := time.Now()
			for range b.N {
				r = replayRun(b, specs, tasks, run.name, run.opts)
			}
			perReplay := time.Since(start).Seconds() / float64(b.N)
			rep, err := inv.Fragmentation(r.cluster, mix)
			if err != nil {
				b.Fatal(err)
			}
			// The measure agrees with the allocator on the whole trace: the free GPUs are the GPUs
			// less what the placed tasks hold.
			if !near(rep.Free, float64(totalGPUs)-r.asked) {
				b.Errorf("measured %v GPUs free, but %d GPUs less %v asked is %v", rep.Free, totalGPUs, r.asked, float64(totalGPUs)-r.asked)
			}
			b.ReportMetric(float64(totalGPUs)-r.asked, "GPUs-unallocated")
			b.ReportMetric(float64(r.failedGPU), "GPU-tasks-unplaced")
			b.ReportMetric(float64(len(tasks)), "tasks-arrived")
			b.ReportMetric(rep.F, "F(M)")
			b.ReportMetric(perReplay, "s/replay")
		})
	}
}

// TestAlibabaTraceFiles: the full trace in testdata is what testdata/README.md says it is (the
// replay itself is BenchmarkReplayAlibabaTrace).
func TestAlibabaTraceFiles(t *testing.T) {
	specs, tasks, mix := loadTrace(t, "openb_node_list_gpu_node.csv", "openb_pod_list_default.csv")
	gpus, gpuTasks := 0, 0
	for _, s := range specs {
		gpus += s.gpus
	}
	for _, task := range tasks {
		if task.tmpl != "" {
			gpuTasks++
		}
	}
	if len(specs) != 1213 || gpus != 6212 || len(tasks) != 8152 {
		t.Errorf("%d nodes, %d GPUs, %d tasks; README says 1213, 6212, 8152", len(specs), gpus, len(tasks))
	}
	if gpuTasks == 0 || len(mix) == 0 {
		t.Errorf("%d GPU tasks, %d shapes", gpuTasks, len(mix))
	}
	t.Logf("%d GPU tasks in %d shapes", gpuTasks, len(mix))
}

// toCapacity is the tasks that arrive until the GPUs they ask for reach the cluster's GPUs, the point
// at which the paper reads the GPUs left unallocated: the trace in arrival order and, where it asks for
// fewer (the default trace asks for 6,086.8 of 6,212 GPUs, 98%), then tasks drawn from it at random
// with a fixed seed, as the paper's simulator inflates a trace by copies of its tasks.
func toCapacity(trace []traceTask, gpus float64) []traceTask {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []traceTask
	arrived := 0.0
	for i := 0; arrived < gpus && i < 4*len(trace); i++ {
		t := trace[rng.IntN(len(trace))]
		if i < len(trace) {
			t = trace[i]
		}
		out = append(out, t)
		arrived += float64(t.n) + float64(t.milli)/1000
	}
	return out
}

// traceInventory is the measure's inventory of the trace's nodes, FGD's options for the mix (Cost and Prefer), and the
// number of GPUs.
func traceInventory(tb testing.TB, specs []nodeSpec, mix []headroom.Shape) (*headroom.Inventory, pods.Options, int) {
	tb.Helper()
	total := 0
	var published []*resourceapi.ResourceSlice
	for _, s := range specs {
		total += s.gpus
		published = append(published, modelGPUs(s))
	}
	inv, err := headroom.NewInventory(published)
	if err != nil {
		tb.Fatal(err)
	}
	cost, prefer, err := inv.FGD(mix)
	if err != nil {
		tb.Fatal(err)
	}
	return inv, pods.Options{Cost: cost, Prefer: prefer}, total
}
