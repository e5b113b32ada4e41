// Command packing replays a GPU cluster trace in the format of Alibaba's GPU cluster trace v2023 with
// several placement strategies (allocator/headroom/trace) and draws, per strategy, the GPUs left
// unallocated and the fragmentation measure against the arrived workload, as the FGD paper's figures
// do (Weng et al., "Beware of Fragmentation", USENIX ATC '23). It writes the picture as a PNG and the
// data behind it as a CSV file next to it (same name, .csv).
//
// From this directory, the picture of docs/packing.png:
//
//	go run . -order shuffled -seed 1 -repetitions 1 -o ../../docs/packing.png
//
// The table over every pod list of the trace, next to the numbers the FGD paper's simulator publishes,
// is cut into units of one replay each that run anywhere and merge (units.go, merge.go; k8s/job.yaml
// runs them as an Indexed Job):
//
//	go run . units -data <simulator>/data/csv -out results -shard 0/2   # and -shard 1/2 beside it
//	go run . merge -published <simulator>/experiments/analysis/expected_results/analysis_allo_discrete.csv results
//
// It is a module of its own so that the library's go.mod does not require the plotting library.
//
// Imports: of dralloc only allocator/headroom/trace (and through it the library), and gonum/plot.
package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

func main() {
	args, do := os.Args[1:], run
	if len(args) > 0 {
		switch args[0] {
		case "units":
			args, do = args[1:], runUnits
		case "merge":
			args, do = args[1:], runMerge
		}
	}
	if err := do(context.Background(), args, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "packing:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	nodes, pods string
	strategies  []string
	order       string
	seed        uint64
	repetitions int
	until       float64
	samples     int
	out         string
}

func parse(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("packing", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	fs.StringVar(&c.nodes, "nodes", "../../allocator/headroom/trace/testdata/openb_node_list_gpu_node.csv", "node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
	fs.StringVar(&c.pods, "pods", "../../allocator/headroom/trace/testdata/openb_pod_list_default.csv", "pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec])")
	strategies := fs.String("strategies", "FirstFit,BestFit,Spread,FGD", "comma-separated strategies to replay")
	fs.StringVar(&c.order, "order", "shuffled", `"trace": every task once in trace order; "shuffled": tasks in random order, repeated, until -until`)
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the first shuffled replay; repetition i uses seed+i")
	fs.IntVar(&c.repetitions, "repetitions", 1, "shuffled replays per strategy, averaged")
	fs.Float64Var(&c.until, "until", 1, "shuffled: stop when the arrived GPU workload is this share of the cluster's GPUs")
	fs.IntVar(&c.samples, "samples", 50, "points per curve")
	fs.StringVar(&c.out, "o", "packing.png", "output PNG; the data goes to the same name with .csv")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.strategies = strings.Split(*strategies, ",")
	switch {
	case c.order != "trace" && c.order != "shuffled":
		return nil, fmt.Errorf("-order: %q is neither trace nor shuffled", c.order)
	case c.repetitions < 1 || c.repetitions > 100:
		return nil, fmt.Errorf("-repetitions: %d is outside [1, 100]", c.repetitions)
	case c.order == "trace" && c.repetitions != 1:
		return nil, errors.New("-repetitions: a replay in trace order is the same every time; use -order shuffled")
	case c.samples < 1 || c.samples > trace.MaxSamples:
		return nil, fmt.Errorf("-samples: %d is outside [1, %d]", c.samples, trace.MaxSamples)
	case c.until <= 0 || c.until > trace.MaxUntil:
		return nil, fmt.Errorf("-until: %v is outside (0, %v]", c.until, trace.MaxUntil)
	case filepath.Ext(c.out) != ".png":
		return nil, fmt.Errorf("-o: %q does not end in .png", c.out)
	}
	return c, nil
}

// series is one strategy's curve on the common grid of arrived workload.
type series struct {
	strategy string
	rows     []row
}

// row is one point of a series, in percent of the cluster's GPUs (GPUs for the absolute columns).
type row struct {
	arrivedPct, unallocatedPct, fragmentationPct float64
	unallocatedGPUs, fragmentationGPUs           float64
	failedTasks                                  float64
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	c, err := parse(args, stdout)
	if err != nil {
		return err
	}
	tr, err := trace.Open(c.nodes, c.pods, trace.ReadOptions{})
	if err != nil {
		return err
	}
	objs, err := tr.Objects()
	if err != nil {
		return err
	}
	all, err := objs.Strategies()
	if err != nil {
		return err
	}
	var chosen []trace.Strategy
	for _, name := range c.strategies {
		i := slices.IndexFunc(all, func(s trace.Strategy) bool { return strings.EqualFold(s.Name, strings.TrimSpace(name)) })
		if i < 0 {
			return fmt.Errorf("-strategies: unknown strategy %q", name)
		}
		chosen = append(chosen, all[i])
	}
	var out []series
	for _, st := range chosen {
		s, err := replay(ctx, objs, st, c)
		if err != nil {
			return fmt.Errorf("%s: %w", st.Name, err)
		}
		last := s.rows[len(s.rows)-1]
		fmt.Fprintf(stdout, "%-8s arrived %5.1f%%: %7.2f GPUs unallocated (%4.1f%%), F(M) %6.2f GPUs, %5.0f tasks failed\n",
			s.strategy, last.arrivedPct, last.unallocatedGPUs, last.unallocatedPct, last.fragmentationGPUs, last.failedTasks)
		out = append(out, s)
	}
	csvPath := strings.TrimSuffix(c.out, ".png") + ".csv"
	if err := writeCSV(csvPath, objs.GPUs, out); err != nil {
		return err
	}
	title := fmt.Sprintf("%s on %s (%d nodes, %d GPUs), %s order", filepath.Base(c.pods), filepath.Base(c.nodes), len(tr.Nodes), objs.GPUs, c.order)
	if c.order == "shuffled" && c.repetitions > 1 {
		title += fmt.Sprintf(", mean of %d", c.repetitions)
	}
	if err := drawPNG(c.out, title, out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", c.out, csvPath)
	return nil
}

// replay runs the strategy's replays and puts their mean on a grid of c.samples+1 arrived shares
// from 0 to the end: a curve's value at a grid point is interpolated linearly between its samples.
func replay(ctx context.Context, objs *trace.Objects, s trace.Strategy, c *config) (series, error) {
	var curves []*trace.Curve
	for i := range c.repetitions {
		opts := trace.ReplayOptions{Strategy: s, Samples: c.samples}
		if c.order == "shuffled" {
			opts.Shuffle, opts.Seed, opts.Until = true, c.seed+uint64(i), c.until
		}
		curve, err := trace.Replay(ctx, objs, opts)
		if err != nil {
			return series{}, err
		}
		curves = append(curves, curve)
	}
	// The grid ends where the shortest replay ends (they end within one task of each other).
	end := curves[0].Points[len(curves[0].Points)-1].Arrived
	for _, cv := range curves[1:] {
		end = min(end, cv.Points[len(cv.Points)-1].Arrived)
	}
	out := series{strategy: s.Name}
	gpus := float64(objs.GPUs)
	for k := range c.samples + 1 {
		x := end * float64(k) / float64(c.samples)
		var r row
		for _, cv := range curves {
			p := at(cv.Points, x)
			r.unallocatedGPUs += p.Unallocated
			r.fragmentationGPUs += p.Fragmentation
			r.failedTasks += float64(p.Failed)
		}
		n := float64(len(curves))
		r.unallocatedGPUs /= n
		r.fragmentationGPUs /= n
		r.failedTasks /= n
		r.arrivedPct = 100 * x
		r.unallocatedPct = 100 * r.unallocatedGPUs / gpus
		r.fragmentationPct = 100 * r.fragmentationGPUs / gpus
		out.rows = append(out.rows, r)
	}
	return out, nil
}

// at is the curve at arrived share x, interpolated between the samples around it.
func at(ps []trace.Point, x float64) trace.Point {
	i, _ := slices.BinarySearchFunc(ps, x, func(p trace.Point, x float64) int {
		switch {
		case p.Arrived < x:
			return -1
		case p.Arrived > x:
			return 1
		}
		return 0
	})
	if i == 0 {
		return ps[0]
	}
	if i == len(ps) {
		return ps[len(ps)-1]
	}
	a, b := ps[i-1], ps[i]
	f := (x - a.Arrived) / (b.Arrived - a.Arrived)
	lerp := func(u, v float64) float64 { return u + f*(v-u) }
	return trace.Point{
		Arrived:       x,
		Unallocated:   lerp(a.Unallocated, b.Unallocated),
		Fragmentation: lerp(a.Fragmentation, b.Fragmentation),
		Failed:        int(lerp(float64(a.Failed), float64(b.Failed)) + 0.5),
	}
}

// csvHeader are the columns of the CSV file: one row per strategy and point.
var csvHeader = []string{"strategy", "arrived_pct", "unallocated_pct", "unallocated_gpus", "fragmentation_pct", "fragmentation_gpus", "failed_tasks", "cluster_gpus"}

func writeCSV(path string, gpus int, ss []series) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(csvHeader)
	ff := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, s := range ss {
		for _, r := range s.rows {
			_ = w.Write([]string{s.strategy, ff(r.arrivedPct), ff(r.unallocatedPct), ff(r.unallocatedGPUs), ff(r.fragmentationPct), ff(r.fragmentationGPUs), ff(r.failedTasks), strconv.Itoa(gpus)})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
