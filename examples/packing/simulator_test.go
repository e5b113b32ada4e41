//go:debug randseednop=0

package main

import (
	"math"
	"math/rand"
	"slices"
	"sort"
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

// TestSimulatorOrderIsTheSimulators: simulatorOrder, on its own generator, gives the order of the
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
			got, want := simulatorOrder(tr.Tasks, gpus, seed), simulatorAsWritten(tr.Tasks, gpus, seed)
			if !slices.Equal(got, want) {
				t.Errorf("%d GPUs, seed %d: %d arrivals %v…, the simulator's steps give %d %v…", gpus, seed, len(got), got[:5], len(want), want[:5])
			}
		}
	}
}
