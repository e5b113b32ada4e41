package main

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

// TestShardsCoverEveryUnitOnce: for every shard count, the shards together are every unit exactly
// once, and n equal to the number of units gives unit i to shard i (an Indexed Job's index).
func TestShardsCoverEveryUnitOnce(t *testing.T) {
	all := units([]int64{42, 43, 44}, podLists, []string{"FirstFit", "FGD"})
	if len(all) != 3*23*2 {
		t.Fatalf("%d units, want %d", len(all), 3*23*2)
	}
	if all[0] != (unit{42, "default", "FirstFit"}) || all[1] != (unit{42, "default", "FGD"}) || all[46] != (unit{43, "default", "FirstFit"}) {
		t.Errorf("units are not numbered seed, list, strategy: %v %v %v", all[0], all[1], all[46])
	}
	for _, n := range []int{1, 2, 3, 7, 45, 137, len(all), len(all) + 5} {
		count := map[unit]int{}
		for i := range n {
			for _, u := range shard(all, i, n) {
				count[u]++
			}
		}
		for _, u := range all {
			if count[u] != 1 {
				t.Errorf("n=%d: %s in %d shards", n, u, count[u])
			}
		}
		if len(count) != len(all) {
			t.Errorf("n=%d: %d distinct units, want %d", n, len(count), len(all))
		}
	}
	for i, u := range all {
		if got := shard(all, i, len(all)); len(got) != 1 || got[0] != u {
			t.Errorf("index %d: %v, want %v", i, got, u)
		}
	}
}

func TestParseFlags(t *testing.T) {
	for _, s := range []string{"", "1", "2/2", "-1/3", "a/3", "0/0"} {
		if _, _, err := parseShard(s); err == nil {
			t.Errorf("shard %q accepted", s)
		}
	}
	if i, n, err := parseShard("3/8"); err != nil || i != 3 || n != 8 {
		t.Errorf("3/8: %d %d %v", i, n, err)
	}
	got, err := parseSeeds("42-45,1,43")
	if err != nil || !slices.Equal(got, []int64{42, 43, 44, 45, 1}) {
		t.Errorf("42-45,1,43: %v %v", got, err)
	}
	for _, s := range []string{"x", "5-3", "1-5000", "1,,2"} {
		if _, err := parseSeeds(s); err == nil {
			t.Errorf("seeds %q accepted", s)
		}
	}
	var out bytes.Buffer
	if err := runUnits(context.Background(), []string{"-lists", "default,nosuch"}, &out); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("unknown list: %v", err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "460")
	if err := runUnits(context.Background(), []string{"-data", "x"}, &out); err == nil || !strings.Contains(err.Error(), "JOB_COMPLETION_INDEX") {
		t.Errorf("index past the units: %v", err)
	}
}

// handResults are results made by hand: on default FGD 10, 12, 14 (mean 12, sd 2) and FirstFit 20
// (one seed); on gpushare40 FGD 30 and FirstFit 25, 27 (26 ± 1.4142).
func handResults() []result {
	r := func(list, st string, seed int64, v float64) result {
		return result{unit: unit{seed, list, st}, Measure: measureSimulator, GPUs: 100, Unallocated: v, CPUSeconds: v / 2, WallSeconds: v}
	}
	return []result{
		r("default", "FGD", 1, 10), r("default", "FGD", 2, 12), r("default", "FGD", 3, 14),
		r("default", "FirstFit", 1, 20),
		r("gpushare40", "FGD", 1, 30), r("gpushare40", "FirstFit", 1, 25), r("gpushare40", "FirstFit", 2, 27),
	}
}

// handPublished is a published CSV: the simulator's FGD leaves 10 and 12 of 100 on default (11 ±
// 1.4142); its BestFit row is not ours and is left out; gpushare40 has no FGD row.
const handPublished = `workload,sc_policy,tune,seed,total_gpus,99,100,101
openb_pod_list_default,06-FGD,1.3,42,100,89.0,90.0,91.0
openb_pod_list_default,06-FGD,1.3,43,100,87.0,88.0,89.0
openb_pod_list_default,05-BestFit,1.3,42,100,1.0,1.0,1.0
openb_pod_list_gpushare40,05-BestFit,1.3,42,100,50.0,50.0,50.0
`

// TestTableFigures checks the table's figures on hand-made result files, read back from a directory
// as `packing merge` reads them.
func TestTableFigures(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	for _, r := range handResults() {
		b.Reset()
		if err := writeResultLine(&b, r); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, r.fileName()), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A log with other lines and a repeated result, as kubectl logs of a retried index gives.
	logLines := "starting\n" + b.String() + b.String()
	if err := os.WriteFile(filepath.Join(dir, "pods.log"), []byte(logLines), 0o644); err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "published.csv")
	if err := os.WriteFile(pub, []byte(handPublished), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runMerge(context.Background(), []string{"-published", pub, dir}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| pod list | seeds | FirstFit | FGD | simulator's FGD | FGD − simulator's |",
		"| default | 1-3 | 20.0 (seed 1) | 12.0 ± 2.0 | 11.0 ± 1.4 | +1.0 (+9.1 %) |",
		"| gpushare40 | 1-2 | 26.0 ± 1.4 | 30.0 (seed 1) | — | — |",
		"FirstFit 12.0 ± 1.8 CPU, 24.0 ± 3.6 wall (3 replays); FGD 8.2 ± 4.6 CPU, 16.5 ± 9.1 wall (4 replays).",
		"Seeds: 1-3. FGD leaves at most as many GPUs unallocated as the simulator's FGD on 0 of the 1 lists it publishes, and at most as many as FirstFit on 1 of 2 lists.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	// default comes first, as in podLists.
	if strings.Index(got, "| default |") > strings.Index(got, "| gpushare40 |") {
		t.Errorf("rows out of the lists' order:\n%s", got)
	}
}

// TestMergeOrderIndependent: the table does not depend on the order of the results.
func TestMergeOrderIndependent(t *testing.T) {
	rs := handResults()
	// Values whose float sum depends on the order of the additions.
	for s := range int64(10) {
		rs = append(rs, result{unit: unit{100 + s, "multigpu50", "FGD"}, Measure: measureSimulator, GPUs: 6212, Unallocated: 0.1 * float64(s*s+1) / 3})
	}
	first, err := makeTable(rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := first.markdown()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		tb, err := makeTable(rs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := tb.markdown(); got != want {
			t.Fatalf("another order gives another table:\n%s\nwant\n%s", got, want)
		}
	}
}

func TestMergeRefuses(t *testing.T) {
	rs := handResults()
	other := rs[0]
	other.Unallocated++
	if _, err := makeTable(append(rs, other), nil); err == nil || !strings.Contains(err.Error(), "default/FGD/seed1 appears twice") {
		t.Errorf("conflicting duplicate: %v", err)
	}
	other = rs[0]
	other.Seed, other.Measure = 9, measureShuffled
	if _, err := makeTable(append(rs, other), nil); err == nil || !strings.Contains(err.Error(), "one table takes one measure") {
		t.Errorf("two measures: %v", err)
	}
	for _, line := range []string{`{"list":"default","strategy":"FGD","gpus":100,"unallocated":101}`, `{"list":"default","strategy":"FGD","gpus":100,"unallocated":1,"extra":1}`, `{"list":"default"`} {
		if _, err := parseResults(strings.NewReader(line), "r.json"); err == nil || !strings.HasPrefix(err.Error(), "r.json:1: ") {
			t.Errorf("%s: %v", line, err)
		}
	}
}

func TestStat(t *testing.T) {
	s := statOf([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if s.N != 8 || s.Mean != 5 || math.Abs(s.SD-math.Sqrt(32.0/7)) > 1e-12 {
		t.Errorf("%+v", s)
	}
	if s := statOf([]float64{3}); s.N != 1 || s.Mean != 3 || s.SD != 0 || s.String() != "3.0" {
		t.Errorf("%+v %s", s, s)
	}
}

// TestSimulatorOrder: the simulator's order is the whole list shuffled, then copies drawn from it until
// the next would pass 130 % of the cluster's GPUs; a list asking for more loses pods until it does not.
func TestSimulatorOrder(t *testing.T) {
	tasks := []trace.Task{
		{Name: "p-3", GPUs: 1, GPUMilli: 500}, {Name: "p-1", GPUs: 2, GPUMilli: 1000}, {Name: "p-2", CPUMilli: 100},
		{Name: "p-0", GPUs: 1, GPUMilli: 1000}, {Name: "p-4", GPUs: 1, GPUMilli: 250},
	}
	const gpus = 10 // the five ask for 3.75 GPUs; 130 % is 13
	a, b := simOrder(tasks, gpus, 42), simOrder(tasks, gpus, 43)
	if !slices.Equal(a, simOrder(tasks, gpus, 42)) || slices.Equal(a, b) {
		t.Errorf("seed 42 twice or seeds 42 and 43: %v %v", a, b)
	}
	first := slices.Sorted(slices.Values(a[:len(tasks)]))
	if !slices.Equal(first, []int{0, 1, 2, 3, 4}) {
		t.Errorf("the first %d arrivals %v are not the list", len(tasks), a[:len(tasks)])
	}
	var milli int64
	for _, i := range a {
		milli += totalMilli(tasks[i])
	}
	if milli > 13000 || milli < 13000-2000 {
		t.Errorf("%v asks for %d milli-GPUs, want at most 13000 and within one task of it", a, milli)
	}
	// Cut down: at 2 GPUs the list asks for more than 2.6.
	c := simOrder(tasks, 2, 42)
	milli = 0
	seen := map[int]bool{}
	for _, i := range c {
		if seen[i] {
			t.Errorf("cut down, task %d arrives twice: %v", i, c)
		}
		seen[i] = true
		milli += totalMilli(tasks[i])
	}
	if milli > 2600 || len(c) >= len(tasks) {
		t.Errorf("cut down to %v asking for %d milli-GPUs", c, milli)
	}
}

// TestSimWindow: the value at 100 is the mean allocated share over the arrivals whose arrived share
// rounds to 100, or else within [99, 101].
func TestSimWindow(t *testing.T) {
	// A cluster of 10 GPUs; tasks of 0.5, 9.5 and 0.04 GPUs.
	tasks := []trace.Task{{Name: "a", GPUs: 1, GPUMilli: 500}, {Name: "b", GPUs: 1, GPUMilli: 950}, {Name: "c", GPUs: 1, GPUMilli: 40}}
	arr := []trace.Arrival{{Task: 0, Node: "n"}}
	for range 10 {
		arr = append(arr, trace.Arrival{Task: 1, Node: "n"}) // 0.5 + 9.5 = 10 → 100 %
	}
	// Arrivals after 100 %: +0.04 GPU each (0.4 %), the first failing: 100.4 % rounds to 100, 100.8 to 101.
	arr = append(arr, trace.Arrival{Task: 2}, trace.Arrival{Task: 2, Node: "n"})
	// On a cluster of 100 GPUs the arrivals ask for 95.58 (96 %): neither window is reached.
	v, n, ok := simWindow(tasks, 100, arr)
	if ok {
		t.Errorf("cluster of 100 GPUs, 95.6 %% arrived: window found (%v, %d)", v, n)
	}
	v, n, ok = simWindow(tasks, 10, arr)
	// Arrival 11 reaches 9.5·… : arrived after arrival k (1-based): 0.5 + 0.95·(k−1) GPUs of 10.
	// k = 11: 10.0 GPUs = 100 % (alloc 100 %); k = 12: 10.04 = 100.4 % → 100, alloc 100 %; k = 13:
	// 10.08 = 100.8 % → 101. k = 10: 9.05 = 90.5 %. So the window is {11, 12}: mean 100 % allocated.
	if !ok || n != 2 || v != 0 {
		t.Errorf("window at 100: %v GPUs unallocated over %d arrivals, want 0 over 2", v, n)
	}
	// Without the failed 12th the window is arrival 11 alone.
	arr2 := append(slices.Clone(arr[:11]), trace.Arrival{Task: 2, Node: "n"}, trace.Arrival{Task: 2})
	v, n, ok = simWindow(tasks, 10, arr2)
	// k = 12 placed: alloc 10.04/10 = 100.4 %; k=11 alloc 100 %: mean 100.2 → −0.02 GPUs unallocated.
	if !ok || n != 2 || math.Abs(v-(-0.02)) > 1e-9 {
		t.Errorf("window at 100 with the 12th placed: %v over %d", v, n)
	}
}

// TestJobManifest: k8s/job.yaml is an Indexed Job whose completions are the units its args give.
func TestJobManifest(t *testing.T) {
	raw, err := os.ReadFile("k8s/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(raw, &job); err != nil {
		t.Fatal(err)
	}
	if job.Kind != "Job" || job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion || job.Spec.Completions == nil {
		t.Fatalf("not an Indexed Job with completions: %+v", job.Spec)
	}
	cs := job.Spec.Template.Spec.Containers
	if len(cs) != 1 || len(cs[0].Args) == 0 || cs[0].Args[0] != "units" {
		t.Fatalf("the container does not run packing units: %+v", cs)
	}
	var out bytes.Buffer
	if err := runUnits(context.Background(), append(slices.Clone(cs[0].Args[1:]), "-list"), &out); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); int32(n) != *job.Spec.Completions {
		t.Errorf("completions %d, the args give %d units", *job.Spec.Completions, n)
	}
}

// TestModelUses: per model, the GPUs held, those held by tasks that accept other models too, and the
// GPUs of failed tasks that accept that model alone.
func TestModelUses(t *testing.T) {
	tr := &trace.Trace{
		Nodes: []trace.Node{{Name: "t4", GPUs: 2, Model: "T4"}, {Name: "g2", GPUs: 4, Model: "G2"}, {Name: "cpu"}},
		Tasks: []trace.Task{
			{Name: "any", GPUs: 1, GPUMilli: 1000},
			{Name: "t4-only", GPUs: 1, GPUMilli: 500, Models: []string{"T4", "T4"}},
			{Name: "either", GPUs: 2, GPUMilli: 1000, Models: []string{"G2", "T4"}},
			{Name: "no-gpu", CPUMilli: 1},
		},
	}
	got := modelUses(tr, []trace.Arrival{{Task: 0, Node: "t4"}, {Task: 1, Node: "t4"}, {Task: 1}, {Task: 2, Node: "g2"}, {Task: 3, Node: "cpu"}, {Task: 2}})
	want := []modelUse{{Model: "G2", GPUs: 4, Held: 2, HeldByFlexible: 2}, {Model: "T4", GPUs: 2, Held: 1.5, HeldByFlexible: 1, FailedOnly: 0.5}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	tr.Tasks[1].Models, tr.Tasks[2].Models = nil, nil
	if got := modelUses(tr, nil); got != nil {
		t.Errorf("no task names models: %+v", got)
	}
}

// TestTableComparesEachFGDRunWithTheSimulators: a second FGD gets its own difference column and
// counts, and a run is counted as the simulator's when its seed's published result is the same. By
// hand: the simulator leaves 10 (seed 42) and 12 (seed 43) on default, mean 11; FGD-typical leaves 10
// and 12.004 on those seeds (both the same within 0.01) and 13 on seed 44 (no published run): mean
// 11.668, sd 1.528, more than 11 (seed 44 has no published run, so the mean over all is compared), so
// 0 of 1 lists; FGD leaves 9 on seed 42 (not the same), compared with the simulator's 10 on seed 42.
func TestTableComparesEachFGDRunWithTheSimulators(t *testing.T) {
	r := func(st string, seed int64, v float64) result {
		return result{unit: unit{seed, "default", st}, Measure: measureSimulator, GPUs: 100, Unallocated: v, CPUSeconds: 1, WallSeconds: 1}
	}
	rs := []result{
		r(strategyTypical, 42, 10), r(strategyTypical, 43, 12.004), r(strategyTypical, 44, 13),
		r("FGD", 42, 9), r("FirstFit", 42, 20),
	}
	pub, err := readPublished(strings.NewReader(handPublished), "hand")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := makeTable(rs, pub)
	if err != nil {
		t.Fatal(err)
	}
	got := tb.markdown()
	for _, want := range []string{
		"| pod list | seeds | FirstFit | FGD | FGD-typical | simulator's FGD | FGD − simulator's | FGD-typical − simulator's |",
		"| default | 42-44 | 20.0 (seed 42) | 9.0 (seed 42) | 11.7 ± 1.5 | 11.0 ± 1.4 | -1.0 (-10.0 %) | +0.7 (+6.1 %) |",
		"FGD leaves at most as many GPUs unallocated as the simulator's FGD on 1 of the 1 lists it publishes (as many as the simulator's run of the same seed on 0 of 1 runs), and at most as many as FirstFit on 1 of 1 lists.",
		"FGD-typical leaves at most as many GPUs unallocated as the simulator's FGD on 0 of the 1 lists it publishes (as many as the simulator's run of the same seed on 2 of 2 runs), and at most as many as FirstFit on 1 of 1 lists.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
