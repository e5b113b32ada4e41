package headroom

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator/pods"
)

// DefaultMax is the number of copies Count stops at when Options.Max is 0.
const DefaultMax = 1000

// ErrBudget is wrapped by the error of a Count that ran out of its budget of placements before it
// reached Options.Max or a copy that fits nowhere; the Result then holds what was counted so far.
var ErrBudget = errors.New("headroom budget exhausted")

// Options bound a [Count]. The zero value counts up to DefaultMax copies with a budget of one placement
// per copy, plus the one that finds no node.
type Options struct {
	// Max is the most copies counted; 0 means DefaultMax.
	Max int
	// Budget is the most placements tried (one per copy, each a full [pods.Cluster.Place]); 0 means
	// Max+1. A Count that runs out returns what it counted with an error wrapping ErrBudget.
	Budget int
}

// Stop says why a Count stopped.
type Stop int

const (
	// ReachedMax: Options.Max copies fit; more may.
	ReachedMax Stop = iota
	// Full: the next copy fits on no node; Result.Limits says why.
	Full
	// OutOfBudget: Options.Budget placements were tried.
	OutOfBudget
)

func (s Stop) String() string {
	switch s {
	case ReachedMax:
		return "ReachedMax"
	case Full:
		return "Full"
	case OutOfBudget:
		return "OutOfBudget"
	}
	return "Stop(" + strconv.Itoa(int(s)) + ")"
}

// Result is what a [Count] found.
type Result struct {
	// Total is how many copies fit, one after another.
	Total int
	// Nodes are the nodes that take at least one copy, by name.
	Nodes []NodeCount
	// Stop says why counting stopped.
	Stop Stop
	// Limits are, when Stop is Full, the nodes grouped by why the next copy does not fit there, most
	// nodes first (see [pods.ReasonGroup]).
	Limits []Limit
}

// NodeCount is how many copies one node takes.
type NodeCount struct {
	Node   string
	Copies int
}

// Limit is a group of nodes that refuse the next copy for the same reason.
type Limit struct {
	Reason string
	// Nodes is how many nodes; Examples names the first few.
	Nodes    int
	Examples []string
}

// Count says how many more copies of pod fit on the cluster as it stands, and on which nodes: it places
// copies one at a time with the cluster's Place (its Choice, filters and predicates) and Assume on a
// fork that it discards, so the cluster is not changed. The pod is a template and is not modified: copy
// i is named <name>-headroom-<i> with a UID derived from that name, without spec.nodeName or a status
// (a pod already bound or with claim statuses is a shape, not a placement). Claims the pod names by
// resourceClaimName are shared by all copies, as they would be by real pods.
//
// Counting stops at Options.Max copies, when a copy fits nowhere (then the nodes are grouped by why,
// with [pods.Cluster.Explain]), or when Options.Budget placements were tried (then the error wraps
// ErrBudget and the Result holds the count so far). A nil cluster or pod, or a negative Max or Budget,
// is an error naming it; errors of Place and Assume other than fitting nowhere are returned as they are.
func Count(ctx context.Context, c *pods.Cluster, pod *v1.Pod, opts Options) (*Result, error) {
	if c == nil {
		return nil, errors.New("headroom: nil Cluster")
	}
	if pod == nil {
		return nil, errors.New("headroom: nil Pod")
	}
	if opts.Max < 0 {
		return nil, fmt.Errorf("headroom: Options.Max: must not be negative, got %d", opts.Max)
	}
	if opts.Budget < 0 {
		return nil, fmt.Errorf("headroom: Options.Budget: must not be negative, got %d", opts.Budget)
	}
	max := opts.Max
	if max == 0 {
		max = DefaultMax
	}
	budget := opts.Budget
	if budget == 0 {
		budget = max + 1
	}
	fork := c.Fork()
	defer func() { _ = fork.Snapshot().Discard() }()

	res := &Result{}
	perNode := map[string]int{}
	for step := 0; ; step++ {
		if res.Total == max {
			res.Stop = ReachedMax
			break
		}
		if step == budget {
			res.Stop = OutOfBudget
			res.Nodes = sortedCounts(perNode)
			return res, fmt.Errorf("pod %s/%s: %w after %d placements", pod.Namespace, pod.Name, ErrBudget, budget)
		}
		cp := copyOf(pod, res.Total+1)
		p, err := fork.Place(ctx, cp)
		if errors.Is(err, pods.ErrNoNode) {
			res.Stop = Full
			e, err := fork.Explain(ctx, cp)
			if err != nil {
				return nil, err
			}
			for _, g := range e.Groups {
				res.Limits = append(res.Limits, Limit{Reason: g.Reason, Nodes: g.Nodes, Examples: g.Examples})
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if err := fork.Assume(p); err != nil {
			return nil, err
		}
		perNode[p.Node]++
		res.Total++
	}
	res.Nodes = sortedCounts(perNode)
	return res, nil
}

// copyOf is copy i of the template: a new pod of the same shape, not bound and with no claim statuses
// (the claims generated for it are its own).
func copyOf(pod *v1.Pod, i int) *v1.Pod {
	cp := pod.DeepCopy()
	cp.Name = pod.Name + "-headroom-" + strconv.Itoa(i)
	cp.GenerateName = ""
	cp.UID = types.UID("headroom-" + pod.Namespace + "-" + cp.Name)
	cp.ResourceVersion = ""
	cp.Spec.NodeName = ""
	cp.Status = v1.PodStatus{}
	return cp
}

func sortedCounts(m map[string]int) []NodeCount {
	out := make([]NodeCount, 0, len(m))
	for n, k := range m {
		out = append(out, NodeCount{Node: n, Copies: k})
	}
	slices.SortFunc(out, func(a, b NodeCount) int {
		switch {
		case a.Node < b.Node:
			return -1
		case a.Node > b.Node:
			return 1
		}
		return 0
	})
	return out
}
