package headroom

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator/pods"
)

// DefaultMax is the number of copies Count stops at when Options.Max is 0.
const DefaultMax = 1000

// ErrBudget is wrapped by the error of a Count that ran out of its budget of placements before it
// reached Options.Max or a copy that fits nowhere; the Result then holds what was counted so far.
var ErrBudget = errors.New("headroom budget exhausted")

// Options bound a [Count]. The zero value counts up to DefaultMax copies with a budget that lets every
// node be filled.
type Options struct {
	// Max is the most copies counted; 0 means DefaultMax.
	Max int
	// Budget is the most placements tried (one per copy, and one per node that takes no more); 0 means
	// Max plus the number of nodes plus 1. A Count that runs out returns what it counted with an error
	// wrapping ErrBudget.
	Budget int
	// Explain groups the nodes by [pods.Cluster.Explain]'s reasons (which request, which claims hold the
	// devices) instead of the reasons Place gives ("Insufficient cpu", "cannot allocate all claims");
	// it costs an explanation of every node, which grows with the devices and claims on it.
	Explain bool
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
	// nodes first, ties by reason.
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

// Count says how many more copies of pod fit on the cluster as it stands, and on which nodes. It places
// copies one at a time with the cluster's Place (its filters, predicates and device strategy) and
// Assume on a fork that it discards, so the cluster is not changed and every copy counted fits next to
// the copies before it. The pod is a template and is not modified: copy i is named
// <name>-headroom-<i> with a UID derived from that name, without a status (a pod already bound or with
// claim statuses is a shape, not a placement). Claims the pod names by resourceClaimName are shared by
// all copies, as they would be by real pods.
//
// Nodes are filled one after another, by name, as FirstFit fills them, each copy placed with
// [pods.Cluster.PlaceOnNode] on the node being filled, so a placement looks at that node alone and
// 1,000 nodes of 8 GPUs count 8,000 one-GPU copies in time linear in the copies. A copy fits on a node
// whatever fits on other nodes, unless copies share a claim, so the total is what filling the nodes in
// any order gives; Nodes is where FirstFit would put the copies, which another Choice may spread
// differently.
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
	nodes := c.Snapshot().Nodes()
	budget := opts.Budget
	if budget == 0 {
		budget = max + len(nodes) + 1
	}
	cnt := &counter{pod: pod, max: max, budget: budget, explain: opts.Explain, perNode: map[string]int{}, reasons: map[string][]string{}}
	fork := c.Fork()
	defer func() { _ = fork.Snapshot().Discard() }()
	return cnt.byNode(ctx, fork, nodes)
}

// counter is the state of one Count.
type counter struct {
	pod          *v1.Pod
	max, budget  int
	steps, total int
	explain      bool
	perNode      map[string]int
	reasons      map[string][]string // nodes by the reason the last copy did not fit there
}

// place places and assumes the next copy on the node; false when it does not fit there.
func (k *counter) place(ctx context.Context, fork *pods.Cluster, node string) (bool, error) {
	k.steps++
	p, err := fork.PlaceOnNode(ctx, copyOf(k.pod, k.total+1), node)
	var nn *pods.NoNodeError
	if errors.As(err, &nn) {
		for _, r := range nn.Nodes {
			k.reasons[r.Reason] = append(k.reasons[r.Reason], r.Node)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := fork.Assume(p); err != nil {
		return false, err
	}
	k.perNode[p.Node]++
	k.total++
	return true, nil
}

// stop ends the count if Max or the budget is reached: done, and the result and error to return.
func (k *counter) stop() (bool, *Result, error) {
	if k.total == k.max {
		return true, k.result(ReachedMax), nil
	}
	if k.steps == k.budget {
		return true, k.result(OutOfBudget), fmt.Errorf("pod %s/%s: %w after %d placements", k.pod.Namespace, k.pod.Name, ErrBudget, k.budget)
	}
	return false, nil, nil
}

func (k *counter) byNode(ctx context.Context, fork *pods.Cluster, nodes []*v1.Node) (*Result, error) {
	for _, n := range nodes {
		for {
			if done, res, err := k.stop(); done {
				return res, err
			}
			ok, err := k.place(ctx, fork, n.Name)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
		}
	}
	return k.full(ctx, fork)
}

// full is the result when the next copy fits nowhere: the nodes grouped by why.
func (k *counter) full(ctx context.Context, fork *pods.Cluster) (*Result, error) {
	res := k.result(Full)
	if k.explain {
		e, err := fork.Explain(ctx, copyOf(k.pod, k.total+1))
		if err != nil {
			return nil, err
		}
		for _, g := range e.Groups {
			res.Limits = append(res.Limits, Limit{Reason: g.Reason, Nodes: g.Nodes, Examples: g.Examples})
		}
		return res, nil
	}
	for reason, nodes := range k.reasons {
		res.Limits = append(res.Limits, Limit{Reason: reason, Nodes: len(nodes), Examples: nodes[:min(len(nodes), maxExamples)]})
	}
	slices.SortFunc(res.Limits, func(a, b Limit) int {
		if a.Nodes != b.Nodes {
			return b.Nodes - a.Nodes
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	return res, nil
}

// maxExamples is how many nodes a Limit names, as pods.ReasonGroup does.
const maxExamples = 3

func (k *counter) result(stop Stop) *Result {
	return &Result{Total: k.total, Nodes: sortedCounts(k.perNode), Stop: stop}
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
