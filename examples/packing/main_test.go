package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

const (
	sliceNodes = "../../allocator/headroom/trace/testdata/nodes_slice.csv"
	slicePods  = "../../allocator/headroom/trace/testdata/pods_default_slice.csv"
)

// csvRow is a row of the CSV file.
type csvRow struct {
	strategy                                                  string
	arrived, unallocPct, unalloc, fragPct, frag, failed, gpus float64
}

func readCSV(t *testing.T, path string) map[string][]csvRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], csvHeader) {
		t.Fatalf("%s: header %q, want %q", path, recs[0], csvHeader)
	}
	out := map[string][]csvRow{}
	for i, r := range recs[1:] {
		var v [7]float64
		for j := range v {
			if v[j], err = strconv.ParseFloat(r[j+1], 64); err != nil {
				t.Fatalf("%s: row %d: %s: %v", path, i+2, csvHeader[j+1], err)
			}
		}
		out[r[0]] = append(out[r[0]], csvRow{r[0], v[0], v[1], v[2], v[3], v[4], v[5], v[6]})
	}
	return out
}

// checkRows checks a strategy's rows by reasoning: the arrived workload grows from 0; the unallocated
// GPUs are within [0, the cluster's GPUs] and at least the GPUs not yet asked for (no task holds
// more than it asked); the percentages are the GPUs over the cluster's; F(M) is part of what is
// unallocated; the failed tasks only grow.
func checkRows(t *testing.T, name string, rows []csvRow) {
	t.Helper()
	if len(rows) < 2 || rows[0].arrived != 0 || rows[0].unallocPct != 100 {
		t.Fatalf("%s: %d rows, the first %+v; want the empty cluster first", name, len(rows), rows[0])
	}
	const eps = 0.01 // the file's 3 decimals
	for i, r := range rows {
		if i > 0 && (r.arrived <= rows[i-1].arrived || r.failed < rows[i-1].failed) {
			t.Errorf("%s: row %d: arrived %v, failed %v after %v, %v", name, i, r.arrived, r.failed, rows[i-1].arrived, rows[i-1].failed)
		}
		if r.unalloc < 0 || r.unalloc > r.gpus || r.unallocPct < 100-r.arrived-eps {
			t.Errorf("%s: row %d: %v GPUs (%v%%) unallocated of %v with %v%% arrived", name, i, r.unalloc, r.unallocPct, r.gpus, r.arrived)
		}
		if math.Abs(r.unallocPct-100*r.unalloc/r.gpus) > eps || math.Abs(r.fragPct-100*r.frag/r.gpus) > eps {
			t.Errorf("%s: row %d: percentages %v, %v of %v, %v GPUs", name, i, r.unallocPct, r.fragPct, r.unalloc, r.frag)
		}
		if r.frag < 0 || r.frag > r.unalloc+eps {
			t.Errorf("%s: row %d: F(M) %v outside [0, unallocated %v]", name, i, r.frag, r.unalloc)
		}
	}
}

// TestCommittedPicture checks the data behind docs/packing.png (docs/packing.csv) and the picture.
func TestCommittedPicture(t *testing.T) {
	data := readCSV(t, "../../docs/packing.csv")
	for _, s := range []string{"FirstFit", "BestFit", "Spread", "FGD"} {
		rows := data[s]
		if len(rows) == 0 {
			t.Errorf("no rows for %s", s)
			continue
		}
		checkRows(t, s, rows)
		if end := rows[len(rows)-1]; end.arrived < 100 || end.gpus != 6212 {
			t.Errorf("%s: ends at %v%% arrived of %v GPUs; the picture is of 100%% of the default trace's 6212", s, end.arrived, end.gpus)
		}
	}
	b, err := os.ReadFile("../../docs/packing.png")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 200<<10 {
		t.Errorf("docs/packing.png is %d bytes; keep it under 200 KiB", len(b))
	}
	if _, err := png.DecodeConfig(bytes.NewReader(b)); err != nil {
		t.Errorf("docs/packing.png: %v", err)
	}
}

// TestPictureOfSlice draws the slice of the trace in testdata and checks that the CSV is the
// library's replay on the grid: the empty cluster first, the replay's end last.
func TestPictureOfSlice(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "slice.png")
	var stdout bytes.Buffer
	args := []string{"-nodes", sliceNodes, "-pods", slicePods, "-order", "trace", "-strategies", "FirstFit,FGD", "-samples", "10", "-o", out}
	if err := run(context.Background(), args, &stdout); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(f)
	f.Close()
	if err != nil || cfg.Width < 800 {
		t.Errorf("%s: %+v, %v", out, cfg, err)
	}
	data := readCSV(t, filepath.Join(dir, "slice.csv"))
	tr, err := trace.Open(sliceNodes, slicePods, trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := tr.Objects()
	if err != nil {
		t.Fatal(err)
	}
	strategies, err := objs.Strategies()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range strategies {
		if s.Name != "FirstFit" && s.Name != "FGD" {
			continue
		}
		rows := data[s.Name]
		if len(rows) != 11 {
			t.Fatalf("%s: %d rows, want 11", s.Name, len(rows))
		}
		checkRows(t, s.Name, rows)
		c, err := trace.Replay(context.Background(), objs, trace.ReplayOptions{Strategy: s, Samples: 10})
		if err != nil {
			t.Fatal(err)
		}
		end, last := c.Points[len(c.Points)-1], rows[len(rows)-1]
		if math.Abs(last.arrived-100*end.Arrived) > 0.001 || math.Abs(last.unalloc-end.Unallocated) > 0.001 || math.Abs(last.frag-end.Fragmentation) > 0.001 || last.failed != float64(end.Failed) {
			t.Errorf("%s: last row %+v, the replay ends at %+v", s.Name, last, end)
		}
		if !strings.Contains(stdout.String(), s.Name) {
			t.Errorf("output does not name %s:\n%s", s.Name, stdout.String())
		}
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"-order random", `-order: "random" is neither trace nor shuffled`},
		{"-repetitions 0", "-repetitions: 0 is outside [1, 100]"},
		{"-order trace -repetitions 2", "-repetitions: a replay in trace order is the same every time; use -order shuffled"},
		{"-until 0", "-until: 0 is outside (0, 10]"},
		{"-samples 0", "-samples: 0 is outside [1, 10000]"},
		{"-o out.svg", `-o: "out.svg" does not end in .png`},
		{"-nodes " + sliceNodes + " -pods " + slicePods + " -strategies FirstFit,Worst -o " + filepath.Join(t.TempDir(), "x.png"), `-strategies: unknown strategy "Worst"`},
	} {
		err := run(context.Background(), strings.Fields(tc.args), &bytes.Buffer{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.args, err, tc.want)
		}
	}
}
