package trace

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// ReplayOptions say how [Replay] lets the tasks arrive. The zero value replays every task once in
// trace order with FirstFit, sampled at DefaultSamples points.
type ReplayOptions struct {
	// Strategy places the tasks; its Options.NameSuffix, when nil, is a counter (deterministic names).
	Strategy Strategy
	// Shuffle lets the tasks arrive in a random order drawn from Seed: a permutation of the trace,
	// and a new one each time the trace is used up. Without it they arrive in trace order, from the
	// start again each time the trace is used up.
	Shuffle bool
	Seed    uint64
	// Order, when set, is the arrival order itself: indexes into the trace's tasks, each arriving when
	// its turn comes (an index may repeat: a task arriving again is a copy of it). The replay stops at
	// its end or at Until, whichever comes first; Shuffle must be false. It lets a caller reproduce
	// another simulator's order, as examples/packing does for the FGD paper's.
	Order []int
	// Until is the arrived GPU workload, as a share of the cluster's GPUs, at which the replay stops
	// (the paper's experiment: 1 and above). 0 means: with Shuffle 1, else when every task has arrived
	// once. At most MaxUntil.
	Until float64
	// Samples is how many points the curve has after the empty cluster, evenly spaced in the arrived
	// workload, the last at the end. 0 means DefaultSamples; at most MaxSamples.
	Samples int
	// MaxArrivals bounds the tasks that arrive; 0 means DefaultMaxArrivals. The replay stops there.
	MaxArrivals int
	// Mix is the workload mix of the fragmentation measure; nil means the trace's Mix.
	Mix []headroom.Shape
}

const (
	// DefaultSamples is ReplayOptions.Samples when unset.
	DefaultSamples = 50
	// MaxSamples bounds ReplayOptions.Samples: every sample measures every node.
	MaxSamples = 10_000
	// MaxUntil bounds ReplayOptions.Until.
	MaxUntil = 10.0
	// DefaultMaxArrivals is ReplayOptions.MaxArrivals when unset.
	DefaultMaxArrivals = 1_000_000
)

// Point is the state of the cluster after Arrivals tasks have arrived.
type Point struct {
	// Arrivals is the number of tasks that have arrived, with or without GPUs.
	Arrivals int
	// ArrivedGPUs is the GPUs they asked for (shares as fractions); Arrived that as a share of the
	// cluster's GPUs (1 is the whole cluster).
	ArrivedGPUs, Arrived float64
	// Unallocated is the GPUs no claim holds (shares as fractions), as the fragmentation measure reads
	// them from the allocated claims; UnallocatedShare that as a share of the cluster's GPUs.
	Unallocated, UnallocatedShare float64
	// Fragmentation is F(M) of the measure ([headroom.Report].F), in GPUs.
	Fragmentation float64
	// Failed is the arrived tasks that fit on no node, FailedGPUs the GPUs they asked for.
	Failed     int
	FailedGPUs float64
}

// Arrival is one task's arrival: its index in the trace's tasks and the node it was placed on, "" when
// it fit on none.
type Arrival struct {
	Task int
	Node string
}

// Curve is what a replay found.
type Curve struct {
	// Strategy is the strategy's name.
	Strategy string
	// GPUs is the cluster's GPUs.
	GPUs int
	// Points are the samples, the first the empty cluster, the last the end of the replay.
	Points []Point
	// Arrivals are the tasks in the order they arrived.
	Arrivals []Arrival
	// Truncated tells that the replay stopped at MaxArrivals before reaching Until.
	Truncated bool
}

// At is the first point at which the arrived workload reached share; false when the replay stopped
// before.
func (c *Curve) At(share float64) (Point, bool) {
	for _, p := range c.Points {
		if p.Arrived >= share {
			return p, true
		}
	}
	return Point{}, false
}

// Replay lets the trace's tasks arrive on a new cluster of the objects one by one as the options say,
// each placed with [pods.Cluster.Place] and, where it fits, assumed before the next arrives; none
// leaves. It stops when the arrived GPU workload reaches ReplayOptions.Until (or the tasks are used up),
// at MaxArrivals, or when ctx is done (then with ctx's error).
//
// Since nothing leaves, a task cannot fit once a task with the same GPU request and no more CPU and
// memory has fit on no node: such tasks are counted as failed without searching again. This holds for
// the built-in filters; a Strategy whose Predicate depends on more than the pod's requests and the
// node must not rely on it.
func Replay(ctx context.Context, o *Objects, opts ReplayOptions) (*Curve, error) {
	if o == nil || o.Trace == nil {
		return nil, errors.New("trace: nil Objects")
	}
	tasks := o.Trace.Tasks
	if len(tasks) == 0 {
		return nil, errors.New("trace: no tasks")
	}
	if o.GPUs == 0 {
		return nil, errors.New("trace: no GPUs")
	}
	samples := opts.Samples
	if samples == 0 {
		samples = DefaultSamples
	}
	if samples < 0 || samples > MaxSamples {
		return nil, fmt.Errorf("trace: ReplayOptions.Samples: %d is outside [1, %d]", samples, MaxSamples)
	}
	maxArrivals := opts.MaxArrivals
	if maxArrivals == 0 {
		maxArrivals = DefaultMaxArrivals
	}
	if maxArrivals < 0 {
		return nil, fmt.Errorf("trace: ReplayOptions.MaxArrivals: %d is negative", maxArrivals)
	}
	until := opts.Until
	if until < 0 || until > MaxUntil || until != until {
		return nil, fmt.Errorf("trace: ReplayOptions.Until: %v is outside [0, %v]", until, MaxUntil)
	}
	demand := 0.0
	for _, t := range tasks {
		demand += t.GPU()
	}
	if demand == 0 {
		return nil, errors.New("trace: no task asks for GPUs")
	}
	if opts.Order != nil {
		if opts.Shuffle {
			return nil, errors.New("trace: ReplayOptions.Order and Shuffle are both set")
		}
		if len(opts.Order) == 0 {
			return nil, errors.New("trace: ReplayOptions.Order is empty")
		}
		for k, i := range opts.Order {
			if i < 0 || i >= len(tasks) {
				return nil, fmt.Errorf("trace: ReplayOptions.Order[%d]: %d is not a task index (the trace has %d tasks)", k, i, len(tasks))
			}
		}
	}
	// end is the arrived GPUs at which the replay stops; once is a replay of every task, in order.
	once := until == 0 && !opts.Shuffle
	end := demand
	if opts.Order != nil && until == 0 {
		// The curve spans what the order asks for; the replay ends with the order.
		end = 0
		for _, i := range opts.Order {
			end += tasks[i].GPU()
		}
		if end == 0 {
			return nil, errors.New("trace: ReplayOptions.Order: no task of it asks for GPUs")
		}
		once = false
	} else if !once {
		if until == 0 {
			until = 1
		}
		end = until * float64(o.GPUs)
	}
	mix := opts.Mix
	if mix == nil {
		mix = o.Mix
	}
	inv, err := o.Inventory()
	if err != nil {
		return nil, err
	}
	popts := opts.Strategy.Options
	if popts.NameSuffix == nil {
		k := 0
		popts.NameSuffix = func() string { k++; return fmt.Sprintf("%05d", k) }
	}
	c, err := o.Cluster(popts)
	if err != nil {
		return nil, err
	}

	r := &replay{o: o, c: c, inv: inv, mix: mix, curve: &Curve{Strategy: opts.Strategy.Name, GPUs: o.GPUs}, failedReq: map[int][]request{}}
	if err := r.sample(); err != nil {
		return nil, err
	}
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x7472616365)) // "trace"
	next := 1                                             // the next sample is at end·next/samples
	pos := len(order)                                     // order is used up: start it (again)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if once && len(r.curve.Arrivals) == len(tasks) {
			break
		}
		if opts.Order != nil && len(r.curve.Arrivals) == len(opts.Order) {
			break
		}
		if !once && r.point.ArrivedGPUs >= end-1e-9 {
			break
		}
		if len(r.curve.Arrivals) == maxArrivals {
			r.curve.Truncated = true
			break
		}
		if opts.Order != nil {
			order, pos = opts.Order, len(r.curve.Arrivals)
		} else if pos == len(order) {
			if opts.Shuffle {
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			}
			pos = 0
		}
		if err := r.arrive(ctx, order[pos]); err != nil {
			return nil, err
		}
		pos++
		// One point per crossing: a large task may pass several sample points at once.
		if next <= samples && r.point.ArrivedGPUs >= end*float64(next)/float64(samples)-1e-9 {
			for next <= samples && r.point.ArrivedGPUs >= end*float64(next)/float64(samples)-1e-9 {
				next++
			}
			if err := r.sample(); err != nil {
				return nil, err
			}
		}
	}
	if last := r.curve.Points[len(r.curve.Points)-1]; last.Arrivals != r.point.Arrivals {
		if err := r.sample(); err != nil {
			return nil, err
		}
	}
	return r.curve, nil
}

// request is what a task asks for besides its GPU request.
type request struct{ cpu, mem int64 }

type replay struct {
	o     *Objects
	c     *pods.Cluster
	inv   *headroom.Inventory
	mix   []headroom.Shape
	curve *Curve
	point Point // the running totals; Unallocated and Fragmentation are set when sampled
	// failedReq are, per template index (-1: no GPUs), requests that fit on no node.
	failedReq map[int][]request
}

// maxFailedPerTemplate bounds the requests remembered per template; the first ones are kept.
const maxFailedPerTemplate = 64

func (r *replay) arrive(ctx context.Context, i int) error {
	task := r.o.Trace.Tasks[i]
	n := len(r.curve.Arrivals)
	r.point.Arrivals++
	r.point.ArrivedGPUs += task.GPU()
	r.point.Arrived = r.point.ArrivedGPUs / float64(r.o.GPUs)
	tmpl := r.o.templateIdx[i]
	req := request{task.CPUMilli, task.MemoryMiB}
	for _, f := range r.failedReq[tmpl] {
		if f.cpu <= req.cpu && f.mem <= req.mem {
			r.fail(i, task)
			return nil
		}
	}
	pod := r.o.Pod(i, fmt.Sprintf("%s-%d", task.Name, n))
	pl, err := r.c.Place(ctx, pod)
	if errors.Is(err, pods.ErrNoNode) {
		if len(r.failedReq[tmpl]) < maxFailedPerTemplate {
			r.failedReq[tmpl] = append(r.failedReq[tmpl], req)
		}
		r.fail(i, task)
		return nil
	}
	if err != nil {
		return fmt.Errorf("trace: task %s (arrival %d): %w", task.Name, n, err)
	}
	if err := r.c.Assume(pl); err != nil {
		return fmt.Errorf("trace: task %s (arrival %d): %w", task.Name, n, err)
	}
	r.curve.Arrivals = append(r.curve.Arrivals, Arrival{Task: i, Node: pl.Node})
	return nil
}

func (r *replay) fail(i int, task Task) {
	r.point.Failed++
	r.point.FailedGPUs += task.GPU()
	r.curve.Arrivals = append(r.curve.Arrivals, Arrival{Task: i})
}

// sample measures the cluster and appends the point.
func (r *replay) sample() error {
	rep, err := r.inv.Fragmentation(r.c, r.mix)
	if err != nil {
		return err
	}
	r.point.Unallocated = rep.Free
	r.point.UnallocatedShare = rep.Free / float64(r.o.GPUs)
	r.point.Fragmentation = rep.F
	r.curve.Points = append(r.curve.Points, r.point)
	return nil
}
