//go:debug randseednop=0

package main

import (
	"context"
	"math"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

// simulatorAsWritten transcribes the simulator's own steps with the global math/rand it uses
// (pkg/simulator/core.go: rand.Seed, rand.Int in a log call; simulator.go: SortClusterPods,
// TunePodsByNodeTotalResource), on pods named by the tasks. randseednop=0 lets rand.Seed seed the global
// generator, as it did in the Go the simulator was built with.
func simulatorAsWritten(tasks []trace.Task, clusterGPUs int, seed int64) []int {
	//lint:ignore SA1019 the simulator seeds the global generator; this reproduces it
	rand.Seed(seed)
	_ = rand.Int()
	pods := make([]int, len(tasks))
	for i := range pods {
		pods[i] = i
	}
	workload := slices.Clone(pods)
	sort.Slice(workload, func(i, j int) bool { return tasks[workload[i]].Name < tasks[workload[j]].Name })
	sort.Slice(pods, func(i, j int) bool { return tasks[pods[i]].Name < tasks[pods[j]].Name })
	rand.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	milli := func(t trace.Task) (total, perGPU int64) {
		if t.GPUs == 0 {
			return 0, 0
		}
		per := int64(1000)
		if t.GPUs == 1 && t.GPUMilli < 1000 {
			per = t.GPUMilli
		}
		return per * t.GPUs, per
	}
	var req int64
	for _, p := range pods {
		tot, _ := milli(tasks[p])
		req += tot
	}
	target := 1.3 * float64(int64(clusterGPUs)*1000)
	if float64(req) > target {
		for float64(req) > target {
			idx := rand.Intn(len(pods))
			tot, _ := milli(tasks[pods[idx]])
			pods = append(pods[:idx], pods[idx+1:]...)
			req -= tot
		}
		return pods
	}
	for i := 0; i < 100*len(tasks)+100; i++ {
		p := workload[rand.Intn(len(workload))]
		tot, per := milli(tasks[p])
		if float64(req+per) > target {
			break
		}
		req += tot
		pods = append(pods, p)
	}
	return pods
}

// TestSimulatorOrderIsTheSimulators: simulatorRun's order, on its own generator, gives the order of the
// simulator's steps on the global one, for lists filled up and cut down, on a slice of the trace.
func TestSimulatorOrderIsTheSimulators(t *testing.T) {
	tr, err := trace.Open("../../allocator/headroom/trace/testdata/nodes_slice.csv", "../../allocator/headroom/trace/testdata/pods_multigpu50_slice.csv", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var demand float64
	for _, task := range tr.Tasks {
		demand += task.GPU()
	}
	up, down := int(math.Ceil(demand)), int(demand/2) // 130 % of these is more, and less, than asked
	for _, gpus := range []int{up, down} {
		for seed := int64(42); seed <= 51; seed++ {
			got, want := simOrder(tr.Tasks, gpus, seed), simulatorAsWritten(tr.Tasks, gpus, seed)
			if !slices.Equal(got, want) {
				t.Errorf("%d GPUs, seed %d: %d arrivals %v…, the simulator's steps give %d %v…", gpus, seed, len(got), got[:5], len(want), want[:5])
			}
		}
	}
}

// simOrder is simulatorRun's order alone.
func simOrder(tasks []trace.Task, clusterGPUs int, seed int64) []int {
	order, _ := simulatorRun(tasks, nil, clusterGPUs, seed)
	return order
}

// simulatorLog reads testdata/simulator_default_seed42.txt: the arrivals a run of the simulator logged,
// pod and node, in order.
func simulatorLog(t *testing.T) [][2]string {
	t.Helper()
	b, err := os.ReadFile("testdata/simulator_default_seed42.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("testdata line %q: want pod and node", line)
		}
		out = append(out, [2]string{f[0], f[1]})
	}
	return out
}

// TestSimulatorRunIsTheSimulators: the order and the node names simulatorRun gives for seed 42 on
// the default list are those of a run of the simulator: every pod it logged, in its order, and every
// node it scheduled one to, by the name it gave the node. The ten draws of its informers are what
// makes the names agree: without them no name would.
func TestSimulatorRunIsTheSimulators(t *testing.T) {
	tr, err := trace.Open("../../allocator/headroom/trace/testdata/openb_node_list_gpu_node.csv", "../../allocator/headroom/trace/testdata/openb_pod_list_default.csv", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	order, names := simulatorRun(tr.Tasks, tr.Nodes, tr.GPUs(), 42)
	if len(names) != len(tr.Nodes) {
		t.Fatalf("%d names for %d nodes", len(names), len(tr.Nodes))
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Fatalf("name %s given twice", n)
		}
		seen[n] = true
	}
	logged := simulatorLog(t)
	if len(order) < len(logged) {
		t.Fatalf("%d arrivals, the simulator logged %d", len(order), len(logged))
	}
	for k, a := range logged {
		if got := tr.Tasks[order[k]].Name; got != a[0] {
			t.Fatalf("arrival %d: %s, the simulator's %s", k, got, a[0])
		}
		if a[1] == "-" {
			continue
		}
		_, node, _ := strings.Cut(a[1], "-")
		if got := names[node]; got != a[1] {
			t.Fatalf("arrival %d: node %s is named %s here, %s by the simulator", k, node, got, a[1])
		}
	}
}

// TestFGDPlacesAsTheSimulator: with the simulator's order, node names and workload mix, this
// library's FGD places each of the first 2,500 pods of seed 42 on the default list on the node the
// simulator's FGD placed it on (one per line of the simulator's log). So the two FGDs, the measure,
// the score, the GPU chosen within a node and the tie-break, agree there; a replay without the
// simulator's names would not (the first pod would go elsewhere).
func TestFGDPlacesAsTheSimulator(t *testing.T) {
	tr, err := trace.Open("../../allocator/headroom/trace/testdata/openb_node_list_gpu_node.csv", "../../allocator/headroom/trace/testdata/openb_pod_list_default.csv", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	order, names := simulatorRun(tr.Tasks, tr.Nodes, tr.GPUs(), 42)
	for i := range tr.Nodes {
		tr.Nodes[i].Name = names[tr.Nodes[i].Name]
	}
	objs, err := tr.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if objs.Mix, err = tr.TypicalMix(trace.TypicalOptions{}); err != nil {
		t.Fatal(err)
	}
	all, err := objs.Strategies()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(all, func(s trace.Strategy) bool { return s.Name == "FGD" })
	logged := simulatorLog(t)
	curve, err := trace.Replay(context.Background(), objs, trace.ReplayOptions{Strategy: all[i], Samples: 1, Order: order[:len(logged)]})
	if err != nil {
		t.Fatal(err)
	}
	if len(curve.Arrivals) != len(logged) {
		t.Fatalf("%d arrivals, the simulator logged %d", len(curve.Arrivals), len(logged))
	}
	for k, a := range curve.Arrivals {
		node := a.Node
		if node == "" {
			node = "-"
		}
		if node != logged[k][1] {
			t.Fatalf("arrival %d (%s): node %q, the simulator's %q", k, tr.Tasks[a.Task].Name, node, logged[k][1])
		}
	}
}
