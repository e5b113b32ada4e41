package trace_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
	"github.com/dralloc/dralloc/allocator/pods"
)

func objects(t testing.TB, nodesFile, podsFile string) *trace.Objects {
	t.Helper()
	tr, err := trace.Open(nodesFile, podsFile, trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := tr.Objects()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// checkCurve checks a curve against its arrivals: at every point the GPUs unallocated, as the measure
// reads them from the cluster's claims, are the cluster's GPUs less those the placed tasks asked for;
// the arrived workload is what the arrived tasks asked for and grows; the failed tasks are those
// without a node.
func checkCurve(t *testing.T, o *trace.Objects, c *trace.Curve) {
	t.Helper()
	if len(c.Points) < 2 || c.Points[0].Arrivals != 0 || c.Points[len(c.Points)-1].Arrivals != len(c.Arrivals) {
		t.Fatalf("%s: points %d, first at %d arrivals, last at %d of %d", c.Strategy, len(c.Points), c.Points[0].Arrivals, c.Points[len(c.Points)-1].Arrivals, len(c.Arrivals))
	}
	k := 0
	var arrived, placed, failedGPUs float64
	failed := 0
	for i, p := range c.Points {
		for ; k < p.Arrivals; k++ {
			a := c.Arrivals[k]
			g := o.Trace.Tasks[a.Task].GPU()
			arrived += g
			if a.Node == "" {
				failed++
				failedGPUs += g
			} else {
				placed += g
			}
		}
		if !near(p.Unallocated, float64(o.GPUs)-placed) || !near(p.UnallocatedShare, p.Unallocated/float64(o.GPUs)) {
			t.Errorf("%s: point %d (%d arrivals): %v GPUs unallocated, but %d GPUs less %v placed is %v", c.Strategy, i, p.Arrivals, p.Unallocated, o.GPUs, placed, float64(o.GPUs)-placed)
		}
		if !near(p.ArrivedGPUs, arrived) || !near(p.Arrived, arrived/float64(o.GPUs)) {
			t.Errorf("%s: point %d: arrived %v GPUs (%v), the arrivals asked for %v", c.Strategy, i, p.ArrivedGPUs, p.Arrived, arrived)
		}
		if p.Failed != failed || !near(p.FailedGPUs, failedGPUs) {
			t.Errorf("%s: point %d: %d failed (%v GPUs), the arrivals without a node are %d (%v GPUs)", c.Strategy, i, p.Failed, p.FailedGPUs, failed, failedGPUs)
		}
		if p.Fragmentation < 0 || p.Fragmentation > p.Unallocated+1e-9 {
			t.Errorf("%s: point %d: F(M) %v outside [0, unallocated %v]", c.Strategy, i, p.Fragmentation, p.Unallocated)
		}
		if i > 0 && (p.Arrivals <= c.Points[i-1].Arrivals || p.Arrived < c.Points[i-1].Arrived) {
			t.Errorf("%s: point %d: %d arrivals, %v arrived after %d, %v", c.Strategy, i, p.Arrivals, p.Arrived, c.Points[i-1].Arrivals, c.Points[i-1].Arrived)
		}
	}
}

// TestReplayCurve: in trace order, every task arrives once, in order, and the curve agrees with the
// arrivals (checkCurve), for every strategy and every variant of the trace in testdata.
func TestReplayCurve(t *testing.T) {
	for _, file := range []string{"pods_default_slice.csv", "pods_gpuspec10_slice.csv", "pods_gpushare40_slice.csv", "pods_multigpu50_slice.csv"} {
		o := objects(t, "testdata/nodes_slice.csv", "testdata/"+file)
		strategies, err := o.Strategies()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strategies {
			t.Run(file+"/"+s.Name, func(t *testing.T) {
				c, err := trace.Replay(context.Background(), o, trace.ReplayOptions{Strategy: s, Samples: 20})
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Arrivals) != len(o.Trace.Tasks) {
					t.Fatalf("%d arrivals of %d tasks", len(c.Arrivals), len(o.Trace.Tasks))
				}
				for i, a := range c.Arrivals {
					if a.Task != i {
						t.Fatalf("arrival %d is task %d", i, a.Task)
					}
				}
				checkCurve(t, o, c)
				end := c.Points[len(c.Points)-1]
				t.Logf("arrived %.1f%%: %.2f GPUs unallocated of %d, F(M) %.2f, %d of %d tasks failed", 100*end.Arrived, end.Unallocated, o.GPUs, end.Fragmentation, end.Failed, len(c.Arrivals))
			})
		}
	}
}

// TestReplaySkipsOnlyTasksThatCannotFit: the replay's shortcut for tasks that cannot fit once a smaller
// one failed gives the same placements as placing every task (the loop below, with the cluster's own
// Place and Assume).
func TestReplaySkipsOnlyTasksThatCannotFit(t *testing.T) {
	o := objects(t, "testdata/nodes_slice.csv", "testdata/pods_default_slice.csv")
	strategies, err := o.Strategies()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range strategies[:2] {
		t.Run(s.Name, func(t *testing.T) {
			c, err := trace.Replay(context.Background(), o, trace.ReplayOptions{Strategy: s, Samples: 1})
			if err != nil {
				t.Fatal(err)
			}
			if c.Points[len(c.Points)-1].Failed < 50 {
				t.Fatalf("only %d tasks failed: the shortcut is not exercised", c.Points[len(c.Points)-1].Failed)
			}
			cl, err := o.Cluster(s.Options)
			if err != nil {
				t.Fatal(err)
			}
			for i := range o.Trace.Tasks {
				want := ""
				pl, err := cl.Place(context.Background(), o.Pod(i, fmt.Sprint("ref-", i)))
				switch {
				case errors.Is(err, pods.ErrNoNode):
				case err != nil:
					t.Fatal(err)
				default:
					if err := cl.Assume(pl); err != nil {
						t.Fatal(err)
					}
					want = pl.Node
				}
				if got := c.Arrivals[i].Node; got != want {
					t.Fatalf("task %d (%s): replay placed it on %q, placing every task on %q", i, o.Trace.Tasks[i].Name, got, want)
				}
			}
		})
	}
}

// TestReplayShuffled: the paper's experiment draws the tasks at random until the arrived workload
// reaches Until: the same seed gives the same curve, another seed another order; every task arrives
// once before any arrives twice; the replay stops at the first arrival that reaches Until.
func TestReplayShuffled(t *testing.T) {
	o := objects(t, "testdata/nodes_slice.csv", "testdata/pods_default_slice.csv")
	run := func(seed uint64, until float64) *trace.Curve {
		c, err := trace.Replay(context.Background(), o, trace.ReplayOptions{Shuffle: true, Seed: seed, Until: until, Samples: 10})
		if err != nil {
			t.Fatal(err)
		}
		checkCurve(t, o, c)
		return c
	}
	a, b, other := run(7, 1.5), run(7, 1.5), run(8, 1.5)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two replays with seed 7 differ")
	}
	if reflect.DeepEqual(a.Arrivals, other.Arrivals) {
		t.Errorf("seeds 7 and 8 give the same arrivals")
	}
	n := len(o.Trace.Tasks)
	if len(a.Arrivals) <= n {
		t.Fatalf("%d arrivals: 150%% of the GPUs should take more than the %d tasks (124%%)", len(a.Arrivals), n)
	}
	seen := make([]bool, n)
	inOrder := true
	for i, arr := range a.Arrivals[:n] {
		if seen[arr.Task] {
			t.Fatalf("task %d arrives twice in the first %d arrivals", arr.Task, n)
		}
		seen[arr.Task] = true
		inOrder = inOrder && arr.Task == i
	}
	if inOrder {
		t.Errorf("shuffled arrivals are in trace order")
	}
	end := a.Points[len(a.Points)-1]
	last := o.Trace.Tasks[a.Arrivals[len(a.Arrivals)-1].Task].GPU()
	limit := 1.5 * float64(o.GPUs)
	if end.ArrivedGPUs < limit-1e-9 || end.ArrivedGPUs-last >= limit-1e-9 {
		t.Errorf("stopped at %v GPUs arrived, %v before the last arrival; Until is %v GPUs", end.ArrivedGPUs, end.ArrivedGPUs-last, limit)
	}
	if p, ok := a.At(1); !ok || p.Arrived < 1 {
		t.Errorf("At(1) = %+v, %v", p, ok)
	}
}

// TestReplayOrder: with Order the tasks arrive exactly in that order, repeats included, and the replay
// ends with the order (or at Until, whichever comes first).
func TestReplayOrder(t *testing.T) {
	o := objects(t, "testdata/nodes_slice.csv", "testdata/pods_default_slice.csv")
	n := len(o.Trace.Tasks)
	order := []int{n - 1, 3, 3, 0}
	for i := n - 1; i >= 0; i -= 2 {
		order = append(order, i)
	}
	c, err := trace.Replay(context.Background(), o, trace.ReplayOptions{Order: order, Samples: 5})
	if err != nil {
		t.Fatal(err)
	}
	checkCurve(t, o, c)
	got := make([]int, len(c.Arrivals))
	for i, a := range c.Arrivals {
		got[i] = a.Task
	}
	if !reflect.DeepEqual(got, order) {
		t.Errorf("arrivals %v, want the order %v", got, order)
	}
	c, err = trace.Replay(context.Background(), o, trace.ReplayOptions{Order: order, Until: 0.1, Samples: 5})
	if err != nil {
		t.Fatal(err)
	}
	checkCurve(t, o, c)
	if end := c.Points[len(c.Points)-1]; len(c.Arrivals) >= len(order) || end.Arrived < 0.1 || end.Arrived-o.Trace.Tasks[c.Arrivals[len(c.Arrivals)-1].Task].GPU()/float64(o.GPUs) >= 0.1 {
		t.Errorf("Until 0.1: %d of %d arrivals, %v arrived", len(c.Arrivals), len(order), end.Arrived)
	}
	for _, tc := range []struct {
		opts trace.ReplayOptions
		want string
	}{
		{trace.ReplayOptions{Order: []int{}}, "trace: ReplayOptions.Order is empty"},
		{trace.ReplayOptions{Order: []int{0}, Shuffle: true}, "trace: ReplayOptions.Order and Shuffle are both set"},
		{trace.ReplayOptions{Order: []int{0, n}}, fmt.Sprintf("trace: ReplayOptions.Order[1]: %d is not a task index (the trace has %d tasks)", n, n)},
	} {
		if _, err := trace.Replay(context.Background(), o, tc.opts); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: got %v, want %q", tc.opts.Order, err, tc.want)
		}
	}
}

// TestReplayResources: CPU and memory count, and gpu_spec keeps a task to the models it names.
func TestReplayResources(t *testing.T) {
	nodes := nodeHeader + "a,4000,8192,1,T4\nb,64000,262144,1,V100M32\n"
	for _, tc := range []struct {
		name, tasks string
		want        []string // the node of each task, "" for none
	}{
		{"CPU", "p0,3000,1024,1,500,\np1,3000,1024,1,500,\np2,3000,1024,1,500,\n", []string{"a", "b", "b"}},
		{"memory", "p0,1000,6144,1,500,\np1,1000,6144,1,500,\n", []string{"a", "b"}},
		{"whole and shares", "p0,1000,1024,1,1000,\np1,1000,1024,1,300,\np2,1000,1024,1,800,\np3,1000,1024,1,700,\n", []string{"a", "b", "", "b"}},
		{"model", "p0,1000,1024,1,200,V100M32\np1,1000,1024,1,1000,T4|V100M16\np2,1000,1024,1,1000,T4\n", []string{"b", "a", ""}},
		{"CPU-only", "p0,4000,1024,0,0,\np1,60000,1024,0,0,\np2,1000,1024,1,1000,\n", []string{"a", "b", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := trace.ReadNodes("nodes.csv", strings.NewReader(nodes), trace.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ts, err := trace.ReadTasks("pods.csv", strings.NewReader(taskHeader+tc.tasks), trace.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			o, err := (&trace.Trace{Nodes: ns, Tasks: ts}).Objects()
			if err != nil {
				t.Fatal(err)
			}
			c, err := trace.Replay(context.Background(), o, trace.ReplayOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range c.Arrivals {
				got = append(got, a.Node)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("nodes %q, want %q", got, tc.want)
			}
			checkCurve(t, o, c)
		})
	}
}

func TestReplayBounds(t *testing.T) {
	o := objects(t, "testdata/nodes_slice.csv", "testdata/pods_default_slice.csv")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := trace.Replay(ctx, o, trace.ReplayOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
	c, err := trace.Replay(context.Background(), o, trace.ReplayOptions{MaxArrivals: 30, Shuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Truncated || len(c.Arrivals) != 30 || c.Points[len(c.Points)-1].Arrivals != 30 {
		t.Errorf("MaxArrivals 30: truncated %v, %d arrivals", c.Truncated, len(c.Arrivals))
	}
	for _, tc := range []struct {
		opts trace.ReplayOptions
		want string
	}{
		{trace.ReplayOptions{Until: 11}, "trace: ReplayOptions.Until: 11 is outside [0, 10]"},
		{trace.ReplayOptions{Until: math.NaN()}, "trace: ReplayOptions.Until: NaN is outside [0, 10]"},
		{trace.ReplayOptions{Samples: -1}, "trace: ReplayOptions.Samples: -1 is outside [1, 10000]"},
		{trace.ReplayOptions{MaxArrivals: -1}, "trace: ReplayOptions.MaxArrivals: -1 is negative"},
	} {
		if _, err := trace.Replay(context.Background(), o, tc.opts); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: got %v, want %q", tc.opts, err, tc.want)
		}
	}
	noGPUTasks := &trace.Trace{Nodes: o.Trace.Nodes, Tasks: []trace.Task{{Name: "cpu", CPUMilli: 1000}}}
	og, err := noGPUTasks.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trace.Replay(context.Background(), og, trace.ReplayOptions{Until: 1}); err == nil || err.Error() != "trace: no task asks for GPUs" {
		t.Errorf("no GPU tasks: got %v", err)
	}
}
