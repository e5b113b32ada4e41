package trace_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

// Replay the first 500 tasks of the default trace on 61 of its nodes in trace order with every
// strategy, and read the GPUs each leaves unallocated once every task has arrived.
func ExampleReplay() {
	tr, err := trace.Open("testdata/nodes_slice.csv", "testdata/pods_default_slice.csv", trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	objs, err := tr.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	strategies, err := objs.Strategies()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d nodes, %d GPUs, %d tasks\n", len(tr.Nodes), objs.GPUs, len(tr.Tasks))
	for _, s := range strategies {
		curve, err := trace.Replay(context.Background(), objs, trace.ReplayOptions{Strategy: s, Samples: 4})
		if err != nil {
			fmt.Println(err)
			return
		}
		end := curve.Points[len(curve.Points)-1]
		fmt.Printf("%-8s arrived %.1f%% of the GPUs, %.2f GPUs unallocated, %d tasks failed\n", s.Name, 100*end.Arrived, end.Unallocated, end.Failed)
	}
	// Output:
	// 61 nodes, 314 GPUs, 500 tasks
	// FirstFit arrived 124.0% of the GPUs, 10.03 GPUs unallocated, 103 tasks failed
	// BestFit  arrived 124.0% of the GPUs, 9.80 GPUs unallocated, 103 tasks failed
	// Spread   arrived 124.0% of the GPUs, 9.07 GPUs unallocated, 72 tasks failed
	// FGD      arrived 124.0% of the GPUs, 6.10 GPUs unallocated, 98 tasks failed
}

// The paper's experiment: tasks drawn at random until the arrived GPU workload is the cluster's GPUs.
func ExampleReplay_shuffled() {
	tr, err := trace.Open("testdata/nodes_slice.csv", "testdata/pods_default_slice.csv", trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	objs, err := tr.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	curve, err := trace.Replay(context.Background(), objs, trace.ReplayOptions{Shuffle: true, Seed: 1, Until: 1, Samples: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range curve.Points {
		fmt.Printf("arrived %5.1f%%  unallocated %5.1f%%  F(M) %6.2f GPUs  failed %d\n", 100*p.Arrived, 100*p.UnallocatedShare, p.Fragmentation, p.Failed)
	}
	// Output:
	// arrived   0.0%  unallocated 100.0%  F(M)  25.81 GPUs  failed 0
	// arrived  25.0%  unallocated  75.0%  F(M)  21.73 GPUs  failed 0
	// arrived  50.1%  unallocated  49.9%  F(M)  22.21 GPUs  failed 0
	// arrived  75.1%  unallocated  24.9%  F(M)  17.84 GPUs  failed 0
	// arrived 100.3%  unallocated   4.2%  F(M)  13.02 GPUs  failed 7
}

// A bad value names the file, the row and the column.
func ExampleReadTasks() {
	in := "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" +
		"task-a,4000,8192,1,500\n" +
		"task-b,4000,8192,2,500\n"
	_, err := trace.ReadTasks("pods.csv", strings.NewReader(in), trace.ReadOptions{})
	fmt.Println(err)
	// Output:
	// pods.csv: invalid trace: row 3: column gpu_milli: 500 for a task with 2 GPUs: only one GPU can be shared
}

// A node list: the GPUs become devices of a ResourceSlice per node.
func ExampleReadNodes() {
	in := "sn,cpu_milli,memory_mib,gpu,model\n" +
		"node-a,64000,262144,2,V100M32\n" +
		"node-b,32000,131072,0,\n"
	nodes, err := trace.ReadNodes("nodes.csv", strings.NewReader(in), trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	objs, err := (&trace.Trace{Nodes: nodes}).Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range objs.Slices {
		for _, d := range s.Spec.Devices {
			shares, mem := d.Capacity[trace.Shares].Value, d.Capacity[trace.Memory].Value
			fmt.Println(*s.Spec.NodeName, d.Name, *d.Attributes[trace.ModelAttribute].StringValue, shares.String(), mem.String())
		}
	}
	// Output:
	// node-a gpu-0 V100M32 1k 32Gi
	// node-a gpu-1 V100M32 1k 32Gi
}

// Read a trace from its two files.
func ExampleOpen() {
	tr, err := trace.Open("testdata/nodes_slice.csv", "testdata/pods_default_slice.csv", trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(tr.Nodes), "nodes,", tr.GPUs(), "GPUs,", len(tr.Tasks), "tasks")
	_, err = trace.Open("testdata/nodes_slice.csv", "testdata/missing.csv", trace.ReadOptions{})
	fmt.Println(err)
	// Output:
	// 61 nodes, 314 GPUs, 500 tasks
	// open testdata/missing.csv: no such file or directory
}

// The workload mix as the FGD paper's simulator builds it: the most popular shapes of CPU and GPU
// request that make up 95 % of the tasks, without memory, weights renormalised; FGD then uses it in
// place of the trace's own Mix.
func ExampleTrace_TypicalMix() {
	tr, err := trace.Open("testdata/nodes_slice.csv", "testdata/pods_default_slice.csv", trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	mix, err := tr.TypicalMix(trace.TypicalOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	objs, err := tr.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d shapes of %d in the trace's Mix\n", len(mix), len(objs.Mix))
	for _, s := range mix[:3] {
		fmt.Printf("%-20s %.3f\n", s.Name, s.Weight)
	}
	objs.Mix = mix // Strategies' FGD measures this mix
	strategies, err := objs.Strategies()
	if err != nil {
		fmt.Println(err)
		return
	}
	fgd := strategies[len(strategies)-1]
	curve, err := trace.Replay(context.Background(), objs, trace.ReplayOptions{Strategy: fgd, Samples: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	end := curve.Points[len(curve.Points)-1]
	fmt.Printf("%s: %.2f GPUs unallocated, %d tasks failed\n", fgd.Name, end.Unallocated, end.Failed)
	// Output:
	// 26 shapes of 61 in the trace's Mix
	// gpu-1/cpu-3152       0.276
	// gpu-1/cpu-12000      0.072
	// gpu-1/cpu-16000      0.065
	// FGD: 6.10 GPUs unallocated, 98 tasks failed
}
