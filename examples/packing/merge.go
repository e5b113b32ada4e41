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
	published := fs.String("published", "", "the simulator's experiments/analysis/expected_results/analysis_allo_discrete.csv (optional)")
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
	var pub map[string]stat
	if *published != "" {
		f, err := os.Open(*published)
		if err != nil {
			return err
		}
		pub, err = readPublished(f, *published)
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

// readPublished reads the simulator's analysis_allo_discrete.csv: per pod list, the stat over its
// seeds of the GPUs unallocated at 100 % arrived by its FGD (total_gpus · (100 − column "100") / 100).
func readPublished(r io.Reader, name string) (map[string]stat, error) {
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
	type key struct {
		list string
		seed int64
	}
	vals := map[string][]float64{}
	seen := map[key]bool{}
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
		if seen[key{list, s}] {
			return nil, fmt.Errorf("%s: row %d: %s seed %d appears twice", name, n, list, s)
		}
		seen[key{list, s}] = true
		vals[list] = append(vals[list], g*(100-a)/100)
	}
	out := map[string]stat{}
	for l, vs := range vals {
		out[l] = statOf(vs)
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
	seeds []int64
	// sim is the simulator's FGD, N 0 when it publishes none for the list.
	sim stat
}

// strategyOrder is the order of the known strategies in the table; others follow by name.
var strategyOrder = []string{"FirstFit", "BestFit", "Spread", "FGD"}

// makeTable merges results. The order of rs does not matter: results are keyed by unit, and each
// mean is summed over the seeds in increasing order. A unit given twice must have the same result.
func makeTable(rs []result, pub map[string]stat) (*table, error) {
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
		row := tableRow{list: keys[i].List, cells: make([]stat, len(t.strategies)), sim: pub[keys[i].List]}
		for i < len(keys) && keys[i].List == row.list {
			st := keys[i].Strategy
			var vs []float64
			for ; i < len(keys) && keys[i].List == row.list && keys[i].Strategy == st; i++ {
				vs = append(vs, byUnit[keys[i]].Unallocated)
				if !slices.Contains(row.seeds, keys[i].Seed) {
					row.seeds = append(row.seeds, keys[i].Seed)
				}
			}
			row.cells[slices.Index(t.strategies, st)] = statOf(vs)
		}
		slices.Sort(row.seeds)
		t.rows = append(t.rows, row)
	}
	return t, nil
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

// markdown writes the table and, after it, the counts a headline may be drawn from: on how many rows
// FGD leaves at most as many GPUs unallocated as the simulator's FGD and as FirstFit (means).
func (t *table) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GPUs left unallocated at 100 %% arrived (measure %q; mean ± sd over the seeds of each row)\n\n", t.measure)
	b.WriteString("| pod list | seeds |")
	for _, s := range t.strategies {
		fmt.Fprintf(&b, " %s |", s)
	}
	b.WriteString(" simulator's FGD | FGD − simulator's |\n|---|---|")
	for range t.strategies {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|\n")
	fgd, ff := slices.Index(t.strategies, "FGD"), slices.Index(t.strategies, "FirstFit")
	var withSim, fgdLESim, withFF, fgdLEFF int
	for _, r := range t.rows {
		fmt.Fprintf(&b, "| %s | %s |", r.list, seedsString(r.seeds))
		for _, c := range r.cells {
			fmt.Fprintf(&b, " %s |", c)
		}
		diff := "—"
		if fgd >= 0 && r.cells[fgd].N > 0 && r.sim.N > 0 {
			d := r.cells[fgd].Mean - r.sim.Mean
			diff = fmt.Sprintf("%+.1f (%+.1f %%)", d, 100*d/r.sim.Mean)
			withSim++
			if d <= 0 {
				fgdLESim++
			}
		}
		if fgd >= 0 && ff >= 0 && r.cells[fgd].N > 0 && r.cells[ff].N > 0 {
			withFF++
			if r.cells[fgd].Mean <= r.cells[ff].Mean {
				fgdLEFF++
			}
		}
		fmt.Fprintf(&b, " %s | %s |\n", r.sim, diff)
	}
	fmt.Fprintf(&b, "\nSeeds: %s. FGD leaves at most as many GPUs unallocated as the simulator's FGD on %d of the %d lists it publishes, and at most as many as FirstFit on %d of %d lists.\n",
		seedsString(t.seeds), fgdLESim, withSim, fgdLEFF, withFF)
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
