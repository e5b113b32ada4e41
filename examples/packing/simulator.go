package main

import (
	"cmp"
	"fmt"
	"math"
	mrand "math/rand" // the simulator's generator: its order is reproduced draw by draw
	"slices"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

// This file reproduces how the FGD paper's simulator (github.com/hkust-adsl/kubernetes-scheduler-simulator,
// commit 8f3d6417353c5083c6d56617f255fadd8dc306bc) orders the tasks of a pod list and reads the GPUs
// left unallocated at 100 % arrived, so that a replay here can be set next to the numbers it publishes
// (experiments/analysis/expected_results/analysis_allo_discrete.csv).

// simTune is the simulator's -tune of the published experiments (experiments/run_scripts): the
// workload is filled or cut to 130 % of the cluster's GPUs.
const simTune = 1.3

// simulatorRun is how the simulator sets up a run for seed (its -tuneseed; the published runs use 42 to
// 51): the order in which the tasks arrive, as indexes into tasks, and the names it gives the nodes,
// by the trace's name. As pkg/simulator/core.go and simulator.go do:
//
//   - the global math/rand is seeded and drawn once (core.go logs rand.Int());
//   - the pods are sorted by name and shuffled (SortClusterPods); then, when they ask for less than
//     130 % of the cluster's GPUs, copies of pods drawn uniformly from the name-sorted list are
//     appended until the next one would pass it (tuneUpPods, which compares with the drawn pod's GPU
//     share per GPU, not its total), and when they ask for more, pods drawn uniformly are removed
//     until they do not (tuneDownPods);
//   - its scheduler starts, and each of its ten informers' reflectors draws once from the same
//     generator after its first list (client-go's reflector.go: the watch's timeout jitter,
//     rand.Float64);
//   - the nodes, sorted by name, are renamed with a random permutation: the i-th gets the prefix
//     "%04d-" of rand.Perm's i-th number (syncClusterResourceList). Its scheduler takes, among the
//     nodes of the best score, the smallest name (selectHost), so this permutation, not the trace's
//     names, breaks ties.
//
// Both the order and the names were checked against two runs of the simulator built from that
// commit (seed 42 on the default and cpu200 lists: every pod it logged arrived in this order, every
// node it logged had this name; TestSimulatorRunIsTheSimulators).
func simulatorRun(tasks []trace.Task, nodes []trace.Node, clusterGPUs int, seed int64) (order []int, names map[string]string) {
	r := mrand.New(mrand.NewSource(seed))
	_ = r.Int()
	byName := make([]int, len(tasks))
	for i := range byName {
		byName[i] = i
	}
	slices.SortStableFunc(byName, func(a, b int) int { return cmp.Compare(tasks[a].Name, tasks[b].Name) })
	order = slices.Clone(byName)
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })

	target := simTune * float64(int64(clusterGPUs)*1000)
	var total int64
	for _, i := range order {
		total += totalMilli(tasks[i])
	}
	switch {
	case float64(total) > target:
		for float64(total) > target && len(order) > 0 {
			k := r.Intn(len(order))
			total -= totalMilli(tasks[order[k]])
			order = slices.Delete(order, k, k+1)
		}
	case float64(total) < target:
		// Bounded: every copy that is appended adds a task; a list without GPUs would never reach the
		// target, so the copies stop at ten times the list.
		for range 10 * len(tasks) {
			i := byName[r.Intn(len(byName))]
			if float64(total+perGPUMilli(tasks[i])) > target {
				break
			}
			total += totalMilli(tasks[i])
			order = append(order, i)
		}
	}

	for range simInformers {
		_ = r.Float64()
	}
	sorted := make([]string, len(nodes))
	for i, n := range nodes {
		sorted[i] = n.Name
	}
	slices.Sort(sorted)
	perm := r.Perm(len(sorted))
	names = make(map[string]string, len(sorted))
	for i, n := range sorted {
		names[n] = fmt.Sprintf("%04d-%s", perm[i], n)
	}
	return order, names
}

// simInformers is the number of informers the simulator's scheduler starts before it names the nodes,
// each drawing once (simulatorRun).
const simInformers = 10

// totalMilli is the simulator's TotalMilliGpu of a task: its GPUs times its share of each, in
// thousandths of a GPU.
func totalMilli(t trace.Task) int64 { return int64(math.Round(t.GPU() * 1000)) }

// perGPUMilli is the simulator's MilliGpu of a task: the share of each GPU it asks for (1000 for whole
// GPUs), 0 without GPUs.
func perGPUMilli(t trace.Task) int64 {
	if t.GPUs == 0 {
		return 0
	}
	if t.Shared() {
		return t.GPUMilli
	}
	return 1000
}

// simWindow reads the GPUs left unallocated at 100 % arrived from a replay's arrivals as the
// simulator's analysis does (experiments/analysis/merge_alloc_discrete.py over the "[Alloc]" line it
// logs after every arrival): each arrival gives the arrived and the allocated GPUs as percentages of the
// cluster's, the first rounded to an integer and the second to two decimals (Python's round, half to
// even); the value at 100 is the mean of the allocated share over the arrivals whose arrived share
// rounds to 100, or, when none does, of those within [99, 101]. It returns the GPUs unallocated at that
// mean and the arrivals it averages; false when the replay reached neither window.
func simWindow(tasks []trace.Task, clusterGPUs int, arrivals []trace.Arrival) (float64, int, bool) {
	type rec struct{ arrived, alloc float64 }
	recs := make([]rec, 0, len(arrivals))
	var arrivedMilli, usedMilli int64
	total := float64(clusterGPUs)
	for _, a := range arrivals {
		m := totalMilli(tasks[a.Task])
		arrivedMilli += m
		if a.Node != "" {
			usedMilli += m
		}
		recs = append(recs, rec{
			arrived: math.RoundToEven(float64(arrivedMilli) / total / 10),
			alloc:   math.RoundToEven(float64(usedMilli)/total/10*100) / 100,
		})
	}
	mean := func(in func(r rec) bool) (float64, int) {
		sum, n := 0.0, 0
		for _, r := range recs {
			if in(r) {
				sum += r.alloc
				n++
			}
		}
		if n == 0 {
			return 0, 0
		}
		return sum / float64(n), n
	}
	alloc, n := mean(func(r rec) bool { return r.arrived == 100 })
	if n == 0 {
		alloc, n = mean(func(r rec) bool { return r.arrived >= 99 && r.arrived <= 101 })
	}
	if n == 0 {
		return 0, 0, false
	}
	// The published table rounds the mean to two decimals too.
	alloc = math.RoundToEven(alloc*100) / 100
	return total * (100 - alloc) / 100, n, true
}

// simUntil is where a replay in the simulator's order may stop: past the widest window around 100 %
// (arrived shares that round to 101), nothing later changes the value at 100.
const simUntil = 1.02

// checkSimOrder is a sanity check of an order against the cluster: it must reach the window.
func checkSimOrder(tasks []trace.Task, clusterGPUs int, order []int) error {
	var milli int64
	for _, i := range order {
		milli += totalMilli(tasks[i])
	}
	if float64(milli) < 1.005*float64(clusterGPUs)*1000 {
		return fmt.Errorf("the simulator's order asks for %.1f GPUs, less than 100.5 %% of the cluster's %d", float64(milli)/1000, clusterGPUs)
	}
	return nil
}
