package replay

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

// Slice is a part of a trace to replay: nodes, and the tasks in the order they arrive.
type Slice struct {
	Trace   *trace.Trace
	Objects *trace.Objects
}

// NewSlice takes every step-th node of t (step ≥ 1; GPU nodes only, at most nodes of them) and draws
// tasks at random from seed, with repetition as the paper's experiment does, until the GPUs they ask
// for reach until times the slice's GPUs (at most maxTasks tasks). Tasks whose GPU models no node of
// the slice has are left out: they could fit nowhere.
func NewSlice(t *trace.Trace, step, nodes int, seed uint64, until float64, maxTasks int) (*Slice, error) {
	if step < 1 || nodes < 1 || until <= 0 || maxTasks < 1 {
		return nil, fmt.Errorf("replay: step %d, nodes %d, until %v, maxTasks %d: each must be positive", step, nodes, until, maxTasks)
	}
	s := &trace.Trace{}
	models := map[string]bool{}
	for i := 0; i < len(t.Nodes) && len(s.Nodes) < nodes; i += step {
		if n := t.Nodes[i]; n.GPUs > 0 {
			s.Nodes = append(s.Nodes, n)
			models[n.Model] = true
		}
	}
	var pool []trace.Task
	for _, task := range t.Tasks {
		if task.GPUs == 0 {
			continue
		}
		ok := task.Models == nil
		for _, m := range task.Models {
			ok = ok || models[m]
		}
		if ok {
			pool = append(pool, task)
		}
	}
	if len(s.Nodes) == 0 || len(pool) == 0 {
		return nil, fmt.Errorf("replay: the slice has %d GPU nodes and %d GPU tasks that could run there", len(s.Nodes), len(pool))
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	end := until * float64(s.GPUs())
	var arrived float64
	for arrived < end && len(s.Tasks) < maxTasks {
		task := pool[rng.IntN(len(pool))]
		task.Name = fmt.Sprintf("%s-%d", task.Name, len(s.Tasks))
		s.Tasks = append(s.Tasks, task)
		arrived += task.GPU()
	}
	o, err := s.Objects()
	if err != nil {
		return nil, err
	}
	return &Slice{Trace: s, Objects: o}, nil
}

// Result is what one replay left: the GPUs no claim holds (shares as fractions) and the tasks that
// found no node, of Tasks.
type Result struct {
	Unallocated float64
	Failed      int
	Tasks       int
	GPUs        int
}

// Offline replays the slice with the library's strategy of that name (FirstFit, BestFit, Spread, FGD)
// in arrival order, as trace.Replay does.
func (s *Slice) Offline(ctx context.Context, strategy string) (Result, error) {
	strategies, err := s.Objects.Strategies()
	if err != nil {
		return Result{}, err
	}
	for _, st := range strategies {
		if st.Name != strategy {
			continue
		}
		c, err := trace.Replay(ctx, s.Objects, trace.ReplayOptions{Strategy: st, Samples: 1})
		if err != nil {
			return Result{}, err
		}
		last := c.Points[len(c.Points)-1]
		return Result{Unallocated: last.Unallocated, Failed: last.Failed, Tasks: last.Arrivals, GPUs: s.Objects.GPUs}, nil
	}
	return Result{}, fmt.Errorf("replay: no strategy %q", strategy)
}
