package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// runMerge is `packing merge`: it reads unit results (files or directories of them, or the logs of an
// Indexed Job's pods: every line that starts with "{" is a result) and writes the table: per pod list
// and strategy the mean ± sd of the GPUs unallocated at 100 % arrived over the seeds measured, next to
// the simulator's published FGD on the same list.
func runMerge(_ context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("packing merge", flag.ContinueOnError)
	fs.SetOutput(stdout)
	pubFile := fs.String("published", "", "the simulator's experiments/analysis/expected_results/analysis_allo_discrete.csv (optional)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("merge: no result files or directories given")
	}
	var rs []result
	for _, p := range fs.Args() {
		more, err := readResults(p)
		if err != nil {
			return err
		}
		rs = append(rs, more...)
	}
	var pub map[string]published
	if *pubFile != "" {
		f, err := os.Open(*pubFile)
		if err != nil {
			return err
		}
		pub, err = readPublished(f, *pubFile)
		f.Close()
		if err != nil {
			return err
		}
	}
	t, err := makeTable(rs, pub)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, t.markdown())
	return err
}

// readResults reads the results of a file, or of the files of a directory (not below it).
func readResults(path string) ([]result, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		files = files[:0]
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".jsonl") || strings.HasSuffix(e.Name(), ".log")) {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	var out []result
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		more, err := parseResults(f, name)
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// maxResultLine bounds a line of a result file.
const maxResultLine = 1 << 16

// parseResults reads the lines of r that start with "{" as results; other lines are skipped.
func parseResults(r io.Reader, name string) ([]result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxResultLine)
	var out []result
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var res result
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&res); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		switch {
		case res.List == "" || res.Strategy == "":
			return nil, fmt.Errorf("%s:%d: result without list or strategy", name, n)
		case res.GPUs <= 0:
			return nil, fmt.Errorf("%s:%d: %s: gpus %d is not positive", name, n, res.unit, res.GPUs)
		case res.Unallocated < 0 || res.Unallocated > float64(res.GPUs) || math.IsNaN(res.Unallocated):
			return nil, fmt.Errorf("%s:%d: %s: unallocated %v is outside [0, %d]", name, n, res.unit, res.Unallocated, res.GPUs)
		}
		out = append(out, res)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// stat is a mean and sample standard deviation over N values (SD 0 when N is 1).
type stat struct {
	Mean, SD float64
	N        int
}

// statOf is the stat of vs, summed in the order given.
func statOf(vs []float64) stat {
	s := stat{N: len(vs)}
	if s.N == 0 {
		return s
	}
	for _, v := range vs {
		s.Mean += v
	}
	s.Mean /= float64(s.N)
	if s.N > 1 {
		var ss float64
		for _, v := range vs {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(s.N-1))
	}
	return s
}

// simFGD is the simulator's policy set next to our FGD; its other policies (BestFit among them) are
// not the algorithms of ours with similar names and are not shown.
const simFGD = "06-FGD"

// published is what the simulator's FGD leaves on one pod list: the GPUs unallocated at 100 % arrived,
// per seed.
type published map[int64]float64

// stat is the stat over the seeds, summed in increasing order of seed.
func (p published) stat() stat {
	seeds := slices.Sorted(maps.Keys(p))
	vs := make([]float64, len(seeds))
	for i, s := range seeds {
		vs[i] = p[s]
	}
	return statOf(vs)
}

// readPublished reads the simulator's analysis_allo_discrete.csv: per pod list, the GPUs unallocated
// at 100 % arrived by its FGD per seed (total_gpus · (100 − column "100") / 100).
func readPublished(r io.Reader, name string) (map[string]published, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	col := func(c string) int { return slices.Index(head, c) }
	wl, pol, seed, gpus, at100 := col("workload"), col("sc_policy"), col("seed"), col("total_gpus"), col("100")
	if wl < 0 || pol < 0 || seed < 0 || gpus < 0 || at100 < 0 {
		return nil, fmt.Errorf("%s: the header lacks one of workload, sc_policy, seed, total_gpus, 100", name)
	}
	out := map[string]published{}
	for n := 2; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if rec[pol] != simFGD {
			continue
		}
		list, ok := strings.CutPrefix(rec[wl], "openb_pod_list_")
		if !ok {
			return nil, fmt.Errorf("%s: row %d: workload %q is not openb_pod_list_<list>", name, n, rec[wl])
		}
		s, err1 := strconv.ParseInt(rec[seed], 10, 64)
		g, err2 := strconv.ParseFloat(rec[gpus], 64)
		a, err3 := strconv.ParseFloat(rec[at100], 64)
		if err1 != nil || err2 != nil || err3 != nil || a < 0 || a > 100 {
			return nil, fmt.Errorf("%s: row %d: seed %q, total_gpus %q or column 100 %q is not a number in range", name, n, rec[seed], rec[gpus], rec[at100])
		}
		if _, ok := out[list][s]; ok {
			return nil, fmt.Errorf("%s: row %d: %s seed %d appears twice", name, n, list, s)
		}
		if out[list] == nil {
			out[list] = published{}
		}
		out[list][s] = g * (100 - a) / 100
	}
	return out, nil
}

// table is the merged results.
type table struct {
	measure    string
	strategies []string
	seeds      []int64
	rows       []tableRow
	// cpu and wall are, per strategy of the table, the stat of a replay's CPU and wall seconds.
	cpu, wall []stat
}

type tableRow struct {
	list string
	// cells are per strategy of the table, in its order; a zero N is a strategy not measured on the
	// list.
	cells []stat
	// bySeed are, per strategy of the table, its results by seed.
	bySeed []map[int64]float64
	seeds  []int64
	// sim is the simulator's FGD, N 0 when it publishes none for the list; simSeeds its results by
	// seed.
	sim      stat
	simSeeds published
}

// strategyOrder is the order of the known strategies in the table; others follow by name.
var strategyOrder = []string{"FirstFit", "BestFit", "Spread", "FGD", strategyTypical}

// makeTable merges results. The order of rs does not matter: results are keyed by unit, and each
// mean is summed over the seeds in increasing order. A unit given twice must have the same result.
func makeTable(rs []result, pub map[string]published) (*table, error) {
	if len(rs) == 0 {
		return nil, errors.New("merge: no results")
	}
	byUnit := map[unit]result{}
	t := &table{measure: rs[0].Measure}
	for _, r := range rs {
		if r.Measure != t.measure {
			return nil, fmt.Errorf("merge: %s is measured %q, %s %q: one table takes one measure", r.unit, r.Measure, rs[0].unit, t.measure)
		}
		if old, ok := byUnit[r.unit]; ok && (old.Unallocated != r.Unallocated || old.GPUs != r.GPUs) {
			return nil, fmt.Errorf("merge: %s appears twice with different results (%v and %v GPUs unallocated)", r.unit, old.Unallocated, r.Unallocated)
		}
		byUnit[r.unit] = r
	}
	keys := make([]unit, 0, len(byUnit))
	for u := range byUnit {
		keys = append(keys, u)
		if !slices.Contains(t.strategies, u.Strategy) {
			t.strategies = append(t.strategies, u.Strategy)
		}
		if !slices.Contains(t.seeds, u.Seed) {
			t.seeds = append(t.seeds, u.Seed)
		}
	}
	rank := func(s string) int {
		if i := slices.Index(strategyOrder, s); i >= 0 {
			return i
		}
		return len(strategyOrder)
	}
	slices.SortFunc(t.strategies, func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
	slices.Sort(t.seeds)
	listRank := func(l string) int {
		if i := slices.Index(podLists, l); i >= 0 {
			return i
		}
		return len(podLists)
	}
	slices.SortFunc(keys, func(a, b unit) int {
		return cmp.Or(cmp.Compare(listRank(a.List), listRank(b.List)), cmp.Compare(a.List, b.List), cmp.Compare(a.Strategy, b.Strategy), cmp.Compare(a.Seed, b.Seed))
	})
	for _, st := range t.strategies {
		var cpu, wall []float64
		for _, u := range keys {
			if u.Strategy == st {
				cpu, wall = append(cpu, byUnit[u].CPUSeconds), append(wall, byUnit[u].WallSeconds)
			}
		}
		t.cpu, t.wall = append(t.cpu, statOf(cpu)), append(t.wall, statOf(wall))
	}
	for i := 0; i < len(keys); {
		p := pub[keys[i].List]
		row := tableRow{list: keys[i].List, cells: make([]stat, len(t.strategies)), bySeed: make([]map[int64]float64, len(t.strategies)), sim: p.stat(), simSeeds: p}
		for i < len(keys) && keys[i].List == row.list {
			st := keys[i].Strategy
			var vs []float64
			bySeed := map[int64]float64{}
			for ; i < len(keys) && keys[i].List == row.list && keys[i].Strategy == st; i++ {
				vs = append(vs, byUnit[keys[i]].Unallocated)
				bySeed[keys[i].Seed] = byUnit[keys[i]].Unallocated
				if !slices.Contains(row.seeds, keys[i].Seed) {
					row.seeds = append(row.seeds, keys[i].Seed)
				}
			}
			row.cells[slices.Index(t.strategies, st)] = statOf(vs)
			row.bySeed[slices.Index(t.strategies, st)] = bySeed
		}
		slices.Sort(row.seeds)
		t.rows = append(t.rows, row)
	}
	return t, nil
}

// meanOver is the mean of a strategy's results over the seeds of another's (in increasing order of
// seed) where it has a result for each, else all.
func meanOver(results, seeds map[int64]float64, all float64) float64 {
	vs := make([]float64, 0, len(seeds))
	for _, seed := range slices.Sorted(maps.Keys(seeds)) {
		v, ok := results[seed]
		if !ok {
			return all
		}
		vs = append(vs, v)
	}
	return statOf(vs).Mean
}

// simOver is the simulator's mean over the seeds of a cell where it has a run of each, else over all
// of its seeds: a strategy measured on some seeds is compared with the simulator's runs of those.
func (r tableRow) simOver(cell map[int64]float64) float64 {
	return meanOver(r.simSeeds, cell, r.sim.Mean)
}

func (s stat) String() string {
	switch s.N {
	case 0:
		return "—"
	case 1:
		return fmt.Sprintf("%.1f", s.Mean)
	}
	return fmt.Sprintf("%.1f ± %.1f", s.Mean, s.SD)
}

// seedsString writes seeds as ranges: "42-45, 47".
func seedsString(seeds []int64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.FormatInt(seeds[i], 10))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", seeds[i], seeds[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// markdown writes the table and, after it, the counts a headline may be drawn from: for each FGD (the
// strategies named FGD…), on how many rows it leaves at most as many GPUs unallocated as the
// simulator's FGD (its runs of the same seeds where it has them: simOver) and as FirstFit (the same
// seeds where it has them: meanOver), and
// on how many runs of one list and seed it leaves what the
// simulator's run of that seed leaves (within 0.01 GPUs: both are read from a share rounded to two
// decimals).
func (t *table) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GPUs left unallocated at 100 %% arrived (measure %q; mean ± sd over the seeds of each row; each difference is against the simulator's runs of the same seeds where it has them)\n\n", t.measure)
	b.WriteString("| pod list | seeds |")
	for _, s := range t.strategies {
		fmt.Fprintf(&b, " %s |", s)
	}
	b.WriteString(" simulator's FGD |")
	var fgds []int
	for i, s := range t.strategies {
		if strings.HasPrefix(s, "FGD") {
			fgds = append(fgds, i)
			fmt.Fprintf(&b, " %s − simulator's |", s)
		}
	}
	b.WriteString("\n|---|---|")
	for range len(t.strategies) + 1 + len(fgds) {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	ff := slices.Index(t.strategies, "FirstFit")
	type counts struct{ withSim, leSim, withFF, leFF, runs, sameRuns int }
	c := make([]counts, len(fgds))
	for _, r := range t.rows {
		fmt.Fprintf(&b, "| %s | %s |", r.list, seedsString(r.seeds))
		for i, cell := range r.cells {
			if cell.N > 0 && cell.N < len(r.seeds) {
				// Measured on fewer seeds than the row: say which.
				word := "seeds"
				if cell.N == 1 {
					word = "seed"
				}
				fmt.Fprintf(&b, " %s (%s %s) |", cell, word, seedsString(slices.Sorted(maps.Keys(r.bySeed[i]))))
				continue
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		fmt.Fprintf(&b, " %s |", r.sim)
		for k, f := range fgds {
			diff := "—"
			if r.cells[f].N > 0 && r.sim.N > 0 {
				sim := r.simOver(r.bySeed[f])
				d := r.cells[f].Mean - sim
				diff = fmt.Sprintf("%+.1f (%+.1f %%)", d, 100*d/sim)
				c[k].withSim++
				if d <= 0 {
					c[k].leSim++
				}
				for seed, v := range r.bySeed[f] {
					if sv, ok := r.simSeeds[seed]; ok {
						c[k].runs++
						if math.Abs(v-sv) < 0.01 {
							c[k].sameRuns++
						}
					}
				}
			}
			if ff >= 0 && r.cells[f].N > 0 && r.cells[ff].N > 0 {
				c[k].withFF++
				if r.cells[f].Mean <= meanOver(r.bySeed[ff], r.bySeed[f], r.cells[ff].Mean) {
					c[k].leFF++
				}
			}
			fmt.Fprintf(&b, " %s |", diff)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nSeeds: %s.", seedsString(t.seeds))
	for k, f := range fgds {
		fmt.Fprintf(&b, " %s leaves at most as many GPUs unallocated as the simulator's FGD on %d of the %d lists it publishes", t.strategies[f], c[k].leSim, c[k].withSim)
		if c[k].runs > 0 {
			fmt.Fprintf(&b, " (as many as the simulator's run of the same seed on %d of %d runs)", c[k].sameRuns, c[k].runs)
		}
		fmt.Fprintf(&b, ", and at most as many as FirstFit on %d of %d lists.", c[k].leFF, c[k].withFF)
	}
	b.WriteString("\n")
	b.WriteString("\nCost of one replay (CPU seconds of the process, then wall seconds; mean ± sd over the replays):")
	for i, s := range t.strategies {
		sep := ";"
		if i == len(t.strategies)-1 {
			sep = "."
		}
		fmt.Fprintf(&b, " %s %s CPU, %s wall (%d replays)%s", s, t.cpu[i], t.wall[i], t.cpu[i].N, sep)
	}
	b.WriteString("\n")
	return b.String()
}
