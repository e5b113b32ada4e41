package fuzz_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// worstBudget bounds each search of TestWorstGeneratedCluster; a search that reaches it is counted as
// undecided.
const worstBudget = 10_000_000

// TestWorstGeneratedCluster measures the hardest searches among many generated clusters with every
// feature: the most steps one Allocate call takes and the longest it runs. It is a measurement, not a check
// of the default test run (it takes minutes); set DRALLOC_WORST to the number of clusters to draw, for
// example DRALLOC_WORST=100000 go test -run TestWorstGeneratedCluster -v ./fuzz.
func TestWorstGeneratedCluster(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("DRALLOC_WORST"))
	if n <= 0 {
		t.Skip("set DRALLOC_WORST to the number of clusters to measure")
	}
	gen := fuzz.ClusterGen(fuzz.AllOptions())
	var (
		steps                     stepSink
		worstSteps, worstStepsAt  int
		worstTime                 time.Duration
		worstTimeAt               int
		undecided, over1M, over1s int
		total                     time.Duration
	)
	for i := range n {
		c := gen.Example(i)
		s, err := c.Snapshot(allocator.Options{StepBudget: worstBudget, Logger: logr.New(&steps)})
		if err != nil {
			continue
		}
		start := time.Now()
		_, err = s.Allocate(context.Background(), c.Node, c.Claims)
		d := time.Since(start)
		total += d
		if errors.Is(err, allocator.ErrSearchBudget) {
			undecided++
			t.Logf("cluster %d: undecided after %d steps (%v)", i, worstBudget, d)
		}
		if steps.last > 1_000_000 {
			over1M++
		}
		if d > time.Second {
			over1s++
		}
		if steps.last > worstSteps {
			worstSteps, worstStepsAt = steps.last, i
		}
		if d > worstTime {
			worstTime, worstTimeAt = d, i
		}
	}
	t.Logf("%d clusters, %v in Allocate: most steps %d (cluster %d), longest %v (cluster %d); %d over 1M steps, %d over 1 s, %d undecided after %d steps",
		n, total.Round(time.Millisecond), worstSteps, worstStepsAt, worstTime, worstTimeAt, over1M, over1s, undecided, worstBudget)
}

// stepSink is a logr sink that keeps the step count of the last Allocate call (logged at V(5)).
type stepSink struct{ last int }

func (*stepSink) Init(logr.RuntimeInfo)       {}
func (*stepSink) Enabled(level int) bool      { return level <= 5 }
func (*stepSink) Error(error, string, ...any) {}
func (s *stepSink) Info(_ int, _ string, kv ...any) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "steps" {
			s.last, _ = kv[i+1].(int)
		}
	}
}
func (s *stepSink) WithValues(...any) logr.LogSink { return s }
func (s *stepSink) WithName(string) logr.LogSink   { return s }
