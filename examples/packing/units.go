package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

// The table over every pod list is too much work for one small machine (23 lists × strategies × 10
// seeds, about 20 CPU seconds a replay), so it is cut into units, one replay each, whose results are
// files that merge: `packing units` runs a shard of them, `packing merge` makes the table. A unit is
// (seed, list, strategy), numbered seed first, then list, then strategy, so that running the units in
// order measures one seed on every list before the next seed.

// podLists are the 23 pod lists of cluster-trace-gpu-v2023 (openb_pod_list_<name>.csv), in the order
// of the table.
var podLists = []string{
	"default",
	"cpu037", "cpu050", "cpu072", "cpu100", "cpu200", "cpu235", "cpu250", "cpu300",
	"gpushare20", "gpushare40", "gpushare60", "gpushare80", "gpushare100",
	"gpuspec05", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33",
	"multigpu20", "multigpu30", "multigpu40", "multigpu50",
}

// Measures: how a unit lets the tasks arrive and reads its result.
const (
	// measureSimulator is the simulator's order for the seed and its mean over the window around 100 %
	// arrived (simulator.go).
	measureSimulator = "simulator"
	// measureShuffled is this example's replay: repeated permutations drawn from the seed, read at the
	// first arrival that reaches 100 %.
	measureShuffled = "shuffled"
)

// strategyTypical is FGD with the simulator's workload mix (trace.Trace.TypicalMix: the popular task
// shapes without memory) in place of the trace's (trace.Objects.Mix: every shape, memory included).
const strategyTypical = "FGD-typical"

// unit is one replay of the table.
type unit struct {
	Seed     int64  `json:"seed"`
	List     string `json:"list"`
	Strategy string `json:"strategy"`
}

func (u unit) String() string { return fmt.Sprintf("%s/%s/seed%d", u.List, u.Strategy, u.Seed) }

// units enumerates the units: index k is seeds[k/(L·S)], lists[k/S mod L], strategies[k mod S].
func units(seeds []int64, lists, strategies []string) []unit {
	out := make([]unit, 0, len(seeds)*len(lists)*len(strategies))
	for _, s := range seeds {
		for _, l := range lists {
			for _, st := range strategies {
				out = append(out, unit{Seed: s, List: l, Strategy: st})
			}
		}
	}
	return out
}

// shard is the units of shard i of n: those whose index is i modulo n (every n-th, so that each shard
// gets a share of every seed). With n equal to the number of units, shard i is unit i alone, as an
// Indexed Job's completion index selects it.
func shard(us []unit, i, n int) []unit {
	var out []unit
	for k := i; k < len(us); k += n {
		out = append(out, us[k])
	}
	return out
}

// parseShard reads "i/n" with 0 ≤ i < n.
func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("-shard: %q is not i/n with 0 <= i < n", s)
	}
	return i, n, nil
}

// parseSeeds reads a comma-separated list of seeds and ranges ("42-51,60").
func parseSeeds(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(strings.TrimSpace(f), "-")
		lo, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("-seeds: %q is not a seed or a range of seeds", f)
		}
		hi := lo
		if isRange {
			if hi, err = strconv.ParseInt(b, 10, 64); err != nil || hi < lo || hi-lo >= 1000 {
				return nil, fmt.Errorf("-seeds: %q is not a range lo-hi of at most 1000 seeds", f)
			}
		}
		for v := lo; v <= hi; v++ {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out, nil
}

// result is what a unit found: one JSON object, on one line, in the unit's file and on stdout.
type result struct {
	unit
	Measure string `json:"measure"`
	// GPUs is the cluster's GPUs; Unallocated the GPUs left unallocated at 100 % arrived, as Measure
	// reads them.
	GPUs        int     `json:"gpus"`
	Unallocated float64 `json:"unallocated"`
	// Arrivals are the tasks that arrived in the replay, Failed those that fit nowhere; Window the
	// arrivals averaged (1 for measureShuffled).
	Arrivals int `json:"arrivals"`
	Failed   int `json:"failed"`
	Window   int `json:"window"`
	// CPUSeconds and WallSeconds are what the replay cost (CPU: this process, user and system).
	CPUSeconds  float64 `json:"cpu_seconds"`
	WallSeconds float64 `json:"wall_seconds"`
	// Models is, on lists whose tasks name GPU models, how the end of the replay left each model's
	// GPUs (models.go).
	Models []modelUse `json:"models,omitempty"`
}

// fileName is the unit's result file in a results directory.
func (u unit) fileName() string { return fmt.Sprintf("%s_%s_seed%d.json", u.List, u.Strategy, u.Seed) }

// runUnits is `packing units`: it runs the units of a shard one after the other, each written to its
// file in -out (units whose file is there already are skipped, so a stopped run resumes), and prints
// each result as a JSON line, which is how an Indexed Job's pods hand theirs back (kubectl logs).
func runUnits(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("packing units", flag.ContinueOnError)
	fs.SetOutput(stdout)
	data := fs.String("data", "", "directory with openb_node_list_gpu_node.csv and openb_pod_list_<list>.csv (the simulator's data/csv)")
	out := fs.String("out", "results", "directory for the result files, one per unit")
	listsFlag := fs.String("lists", strings.Join(podLists, ","), "comma-separated pod lists")
	strategiesFlag := fs.String("strategies", "FirstFit,FGD", "comma-separated strategies: FirstFit, BestFit, Spread, FGD, and "+strategyTypical+" (FGD with the simulator's mix)")
	seedsFlag := fs.String("seeds", "42-51", "seeds and ranges of seeds (the simulator's published runs use 42-51)")
	measure := fs.String("measure", measureSimulator, `"simulator": its order and window (simulator.go); "shuffled": this example's replay`)
	shardFlag := fs.String("shard", "", `"i/n": run units i, i+n, …; empty: unit $JOB_COMPLETION_INDEX alone when set, else all`)
	list := fs.Bool("list", false, "print the units with their indexes and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("units: unexpected arguments %q", fs.Args())
	}
	seeds, err := parseSeeds(*seedsFlag)
	if err != nil {
		return err
	}
	lists := splitList(*listsFlag)
	for _, l := range lists {
		if !slices.Contains(podLists, l) {
			return fmt.Errorf("-lists: %q is none of the trace's pod lists %v", l, podLists)
		}
	}
	strategies := splitList(*strategiesFlag)
	if *measure != measureSimulator && *measure != measureShuffled {
		return fmt.Errorf("-measure: %q is neither %s nor %s", *measure, measureSimulator, measureShuffled)
	}
	all := units(seeds, lists, strategies)
	if *list {
		for k, u := range all {
			fmt.Fprintf(stdout, "%d\t%s\n", k, u)
		}
		return nil
	}
	todo := all
	switch idx := os.Getenv("JOB_COMPLETION_INDEX"); {
	case *shardFlag != "":
		i, n, err := parseShard(*shardFlag)
		if err != nil {
			return err
		}
		todo = shard(all, i, n)
	case idx != "":
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= len(all) {
			return fmt.Errorf("JOB_COMPLETION_INDEX: %q is not a unit index in [0, %d)", idx, len(all))
		}
		todo = shard(all, i, len(all))
	}
	if *data == "" {
		return errors.New("-data: the directory of the trace's CSV files is required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, u := range todo {
		path := filepath.Join(*out, u.fileName())
		if _, err := os.Stat(path); err == nil {
			continue
		}
		r, err := runUnit(ctx, *data, *measure, u)
		if err != nil {
			return fmt.Errorf("%s: %w", u, err)
		}
		var buf bytes.Buffer
		if err := writeResultLine(&buf, r); err != nil {
			return err
		}
		line := buf.Bytes()
		// Written whole under a temporary name and renamed, so that a stopped run leaves no half file.
		if err := os.WriteFile(path+".tmp", line, 0o644); err != nil {
			return err
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return err
		}
		if _, err := stdout.Write(line); err != nil {
			return err
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// runUnit replays one unit.
func runUnit(ctx context.Context, data, measure string, u unit) (result, error) {
	tr, err := trace.Open(filepath.Join(data, "openb_node_list_gpu_node.csv"), filepath.Join(data, "openb_pod_list_"+u.List+".csv"), trace.ReadOptions{})
	if err != nil {
		return result{}, err
	}
	var order []int
	if measure == measureSimulator {
		// The simulator's cluster: its order of the tasks and its names of the nodes, which break
		// ties between nodes of one score (simulatorRun).
		var names map[string]string
		order, names = simulatorRun(tr.Tasks, tr.Nodes, tr.GPUs(), u.Seed)
		for i := range tr.Nodes {
			tr.Nodes[i].Name = names[tr.Nodes[i].Name]
		}
	}
	objs, err := tr.Objects()
	if err != nil {
		return result{}, err
	}
	name := u.Strategy
	if name == strategyTypical {
		mix, err := tr.TypicalMix(trace.TypicalOptions{})
		if err != nil {
			return result{}, err
		}
		objs.Mix, name = mix, "FGD"
	}
	all, err := objs.Strategies()
	if err != nil {
		return result{}, err
	}
	i := slices.IndexFunc(all, func(s trace.Strategy) bool { return s.Name == name })
	if i < 0 {
		return result{}, fmt.Errorf("unknown strategy %q", u.Strategy)
	}
	opts := trace.ReplayOptions{Strategy: all[i], Samples: 1}
	switch measure {
	case measureSimulator:
		opts.Order = order
		if err := checkSimOrder(tr.Tasks, objs.GPUs, opts.Order); err != nil {
			return result{}, err
		}
		opts.Until = simUntil
	default:
		if u.Seed < 0 {
			return result{}, fmt.Errorf("seed %d: the shuffled replay takes seeds from 0", u.Seed)
		}
		opts.Shuffle, opts.Seed, opts.Until = true, uint64(u.Seed), 1
	}
	cpu0, wall0 := cpuSeconds(), time.Now()
	curve, err := trace.Replay(ctx, objs, opts)
	if err != nil {
		return result{}, err
	}
	r := result{unit: u, Measure: measure, GPUs: objs.GPUs, Arrivals: len(curve.Arrivals), Window: 1}
	r.CPUSeconds, r.WallSeconds = cpuSeconds()-cpu0, time.Since(wall0).Seconds()
	end := curve.Points[len(curve.Points)-1]
	r.Failed = end.Failed
	r.Models = modelUses(tr, curve.Arrivals)
	switch measure {
	case measureSimulator:
		v, n, ok := simWindow(tr.Tasks, objs.GPUs, curve.Arrivals)
		if !ok {
			return result{}, errors.New("the replay did not reach 99 % arrived")
		}
		r.Unallocated, r.Window = v, n
	default:
		p, ok := curve.At(1)
		if !ok {
			return result{}, errors.New("the replay did not reach 100 % arrived")
		}
		r.Unallocated = p.Unallocated
	}
	return r, nil
}

// writeResultLine writes r as one JSON line.
func writeResultLine(w io.Writer, r result) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	return err
}
