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

	"github.com/dralloc/dralloc/allocator"
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
	// Budget is the most placements tried (one per copy, and one per node that takes no more; when the
	// copies are placed with Place, one per copy and one for the copy that fits nowhere); 0 means Max
	// plus the number of nodes plus 1. A Count that runs out returns what it counted with an error
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
// Where a copy goes can change where the next ones fit when the copies share a claim (the first copy
// allocates it, and only nodes that can use that allocation take more) or a copy takes devices of a
// pool that is not its node's own (network-attached devices other nodes can get). Then every copy is
// placed with [pods.Cluster.Place], the cluster's own Choice (or Cost) choosing its node, so the count
// is the one the cluster's placements give: under Spread, copies sharing a claim may fit on other
// nodes, and more of them, than under FirstFit. A copy found to take another node's devices ends the
// count by node and starts it again that way.
//
// Otherwise a copy fits on a node whatever fits on other nodes, so the total is what filling the nodes
// in any order gives, and nodes are filled one after another, by name, each copy placed with
// [pods.Cluster.PlaceOnNode] on the node being filled, so a placement looks at that node alone. Nodes
// of one kind ([pods.Cluster.NodeKinds]: the same devices in the same state, the same allocatable and
// requests, the same taints and the labels the pod reads) take the same copies, so one of them is
// filled and the others are counted alike, unless Options.Explain is set (the explanation looks at
// every node as filled). A node counted alike counts as the placements filling it would try, toward
// Max and Budget, so the Result is the one placing every copy gives: 1,000 whole-GPU nodes alike
// answer in milliseconds, not the second that placing 8,000 copies takes. When the count stops because
// the next copy fits nowhere, each node holds as many copies as it can whatever the Choice; when it
// stops at Max or the budget, Nodes is where FirstFit would have put the copies so far, which another
// Choice may spread differently.
//
// Counting stops at Options.Max copies, when a copy fits nowhere (then the nodes are grouped by why,
// with [pods.Cluster.Explain]), or when Options.Budget placements were tried (then the error wraps
// ErrBudget and the Result holds the count so far). A nil cluster or pod, or a negative Max or Budget,
// is an error naming it; errors of Place and Assume other than fitting nowhere are returned as they are.
func Count(ctx context.Context, c *pods.Cluster, pod *v1.Pod, opts Options) (*Result, error) {
	return count(ctx, c, pod, opts, true)
}

// count is Count, with the nodes' kinds when kinds is set (tests compare with every copy placed).
func count(ctx context.Context, c *pods.Cluster, pod *v1.Pod, opts Options, kinds bool) (*Result, error) {
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
	newCounter := func() *counter {
		return &counter{pod: pod, max: max, budget: budget, explain: opts.Explain, perNode: map[string]int{}, reasons: map[string][]string{}}
	}
	if !sharesClaim(pod) {
		cnt := newCounter()
		fork := c.Fork()
		if kinds {
			cnt.prepareKinds(ctx, fork, nodes)
		}
		res, err := cnt.byNode(ctx, fork, nodes)
		_ = fork.Snapshot().Discard()
		if !cnt.interacts {
			return res, err
		}
	}
	fork := c.Fork()
	defer func() { _ = fork.Snapshot().Discard() }()
	cnt := newCounter()
	cnt.everywhere = true
	return cnt.byPlace(ctx, fork)
}

// sharesClaim reports whether copies of the pod may share a claim: one it names by resourceClaimName,
// or one of the PodGroup it names (only claims generated from templates for the pod are each copy's
// own). It reads the spec, so that it takes no generated name.
func sharesClaim(pod *v1.Pod) bool {
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return true
	}
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			return true
		}
	}
	return false
}

// counter is the state of one Count.
type counter struct {
	pod          *v1.Pod
	max, budget  int
	steps, total int
	explain      bool
	perNode      map[string]int
	reasons      map[string][]string // nodes by the reason the last copy did not fit there
	reason       string              // why the last copy placed did not fit
	// everywhere: copies are placed with Place on every node (byPlace). interacts: placed by node, a
	// copy took devices of a pool not its node's own, which ends the count by node (byNode).
	everywhere, interacts bool

	// kinds are the nodes' kinds (pods.Cluster.NodeKinds) when the shortcut holds, nil otherwise, and
	// filled what a node of each kind took: the copies and why the next did not fit.
	kinds  []int
	filled map[int]fill
}

// fill is what filling one node gave: the copies it took and why the next one did not fit.
type fill struct {
	copies int
	reason string
}

// prepareKinds sorts the nodes into kinds where that is exact: nodes of a kind take the same copies,
// one after another, and a copy placed on one node changes no other node's answers. That holds for
// copies that share no claim (Count places those with Place) unless the limits are explained (the
// explanation looks at every node as the fork holds it), or a copy takes devices another node can get,
// which place checks copy by copy (and Count then places every copy with Place).
func (k *counter) prepareKinds(ctx context.Context, fork *pods.Cluster, nodes []*v1.Node) {
	if k.explain || len(nodes) < 2 {
		return
	}
	first := copyOf(k.pod, 1)
	claims, err := fork.PodClaims(first)
	if err != nil {
		return // Place reports it, copy by copy
	}
	for _, pc := range claims {
		if !pc.Generated || pc.PodGroup != nil {
			return
		}
	}
	kinds, err := fork.NodeKinds(ctx, first, nodes)
	if err != nil {
		return // Place reports it, copy by copy
	}
	k.kinds, k.filled = kinds, map[int]fill{}
}

// place places and assumes the next copy on the node, or with k.everywhere where the cluster's Place
// puts it; false when it does not fit there.
func (k *counter) place(ctx context.Context, fork *pods.Cluster, node string) (bool, error) {
	k.steps++
	var p *pods.Placement
	var err error
	if k.everywhere {
		p, err = fork.Place(ctx, copyOf(k.pod, k.total+1))
	} else {
		p, err = fork.PlaceOnNode(ctx, copyOf(k.pod, k.total+1), node)
	}
	var nn *pods.NoNodeError
	if errors.As(err, &nn) {
		for _, r := range nn.Nodes {
			k.reasons[r.Reason] = append(k.reasons[r.Reason], r.Node)
			k.reason = r.Reason
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !k.everywhere && !ownDevices(fork, p) {
		// The copy takes devices other nodes can get: where it goes changes where the next ones fit,
		// which the cluster's Choice decides.
		k.interacts = true
		return false, nil
	}
	if err := fork.Assume(p); err != nil {
		return false, err
	}
	k.perNode[p.Node]++
	k.total++
	return true, nil
}

// ownDevices reports whether every device the placement allocates is of a pool of its node's own
// (allocator.Snapshot.PoolNode), so that no other node's answers change when it is assumed.
func ownDevices(fork *pods.Cluster, p *pods.Placement) bool {
	snap := fork.Snapshot()
	for _, pc := range p.Claims {
		a := pc.Claim.Status.Allocation
		if a == nil {
			continue
		}
		for _, d := range a.Devices.Results {
			if n, ok := snap.PoolNode(allocator.PoolID{Driver: d.Driver, Pool: d.Pool}); !ok || n != p.Node {
				return false
			}
		}
	}
	return true
}

// repeat counts the node as the node of its kind filled before it: the same copies, the same reason the
// next does not fit, step by step as place would, so that Max and the budget stop it where they would.
// false when no node of its kind was filled.
func (k *counter) repeat(node string, kind int) (bool, *Result, error) {
	f, ok := k.filled[kind]
	if !ok {
		return false, nil, nil
	}
	for j := 0; ; j++ {
		if done, res, err := k.stop(); done {
			return true, res, err
		}
		k.steps++
		if j == f.copies {
			k.reasons[f.reason] = append(k.reasons[f.reason], node)
			return true, nil, nil
		}
		k.perNode[node]++
		k.total++
	}
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
	for i, n := range nodes {
		if k.kinds != nil {
			done, res, err := k.repeat(n.Name, k.kinds[i])
			if res != nil || err != nil {
				return res, err
			}
			if done {
				continue
			}
		}
		copies := 0
		for {
			if done, res, err := k.stop(); done {
				return res, err
			}
			ok, err := k.place(ctx, fork, n.Name)
			if err != nil || k.interacts {
				return nil, err
			}
			if !ok {
				break
			}
			copies++
		}
		if k.kinds != nil {
			k.filled[k.kinds[i]] = fill{copies: copies, reason: k.reason}
		}
	}
	return k.full(ctx, fork)
}

// byPlace places copies one after another where the cluster's Place puts them, until one fits
// nowhere, Max or the budget.
func (k *counter) byPlace(ctx context.Context, fork *pods.Cluster) (*Result, error) {
	for {
		if done, res, err := k.stop(); done {
			return res, err
		}
		ok, err := k.place(ctx, fork, "")
		if err != nil {
			return nil, err
		}
		if !ok {
			return k.full(ctx, fork)
		}
	}
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
