package scaling

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/inventory"
)

// DefaultMaxNodes bounds the new nodes of one answer when Options.MaxNodes is zero.
const DefaultMaxNodes = 1000

// NodeType is a kind of node the autoscaler can add.
type NodeType struct {
	// Template is what a node of this type has and publishes; its name names the type.
	Template inventory.Template
	// Cost is the price of one node, in any unit the caller likes: a finite number, zero or more (New
	// refuses NaN, infinities and negative costs); ScaleUp adds the cheapest type that lets a pod fit,
	// types of equal cost in the order given (the caller's preference).
	Cost float64
	// Max is the most new nodes of this type one answer may add; zero means no limit of its own.
	Max int
}

// Options bound the planner's decisions. The zero value is usable.
type Options struct {
	// StepBudget is the most placement attempts one call may make: a pod tried on a cluster is one, a
	// gang as many as it has pods (kube-scheduler's pass, [pods.Cluster.PlaceGroup], places each once),
	// at least one. Zero means no limit on the call but the context. Running out returns an error
	// wrapping allocator.ErrSearchBudget.
	StepBudget int
	// MaxNodes is the most new nodes one ScaleUp may add, over all types; zero means DefaultMaxNodes.
	MaxNodes int
}

// Pending is a pod waiting for a node, or a gang: the pods of a PodGroup that must be placed together.
type Pending struct {
	// Pod is a single pod; nil for a gang.
	Pod *v1.Pod
	// Group is the PodGroup of a gang (it must be known to the Cluster); nil for a single pod.
	Group *schedulingapi.PodGroup
	// Pods are the gang's pods.
	Pods []*v1.Pod
}

// Name is "Pod <namespace>/<name>" or "PodGroup <namespace>/<name>".
func (u Pending) Name() string {
	switch {
	case u.Group != nil:
		return "PodGroup " + u.Group.Namespace + "/" + u.Group.Name
	case u.Pod != nil:
		return "Pod " + u.Pod.Namespace + "/" + u.Pod.Name
	}
	return "<empty>"
}

// size is the most new nodes the unit can use: one per pod.
func (u Pending) size() int {
	if u.Group != nil {
		return max(1, len(u.Pods))
	}
	return 1
}

// ErrInvalidPlanner is wrapped by New for node types it cannot use.
var ErrInvalidPlanner = errors.New("invalid planner")

// Planner answers scaling questions about a Cluster and the node types that could be added to it. It is
// safe for concurrent use; it never changes the Cluster.
type Planner struct {
	c     *pods.Cluster
	types []NodeType
	order []int // indexes into types, cheapest first, ties in the order given
	opts  Options

	mu        sync.Mutex
	instances map[string][]inventory.Instance // per type, by index
}

// New returns a planner for the cluster and node types. Type names (template names) must be unique,
// costs finite and not negative, and every template must instantiate; the error wraps
// [ErrInvalidPlanner] and names the type otherwise.
func New(c *pods.Cluster, types []NodeType, opts Options) (*Planner, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil cluster", ErrInvalidPlanner)
	}
	if opts.MaxNodes <= 0 {
		opts.MaxNodes = DefaultMaxNodes
	}
	p := &Planner{c: c, types: slices.Clone(types), opts: opts, instances: map[string][]inventory.Instance{}}
	seen := map[string]bool{}
	for i, t := range types {
		name := t.Template.Name
		switch {
		case name == "":
			return nil, fmt.Errorf("%w: types[%d].template.name: required", ErrInvalidPlanner, i)
		case seen[name]:
			return nil, fmt.Errorf("%w: types[%d].template.name: duplicate %q", ErrInvalidPlanner, i, name)
		case t.Max < 0:
			return nil, fmt.Errorf("%w: types[%d].max: must not be negative", ErrInvalidPlanner, i)
		case math.IsNaN(t.Cost) || math.IsInf(t.Cost, 0) || t.Cost < 0:
			// NaN compares as neither cheaper nor dearer than any cost, so the cheapest type first would
			// depend on where sorting meets it, and a plan's cost would be NaN.
			return nil, fmt.Errorf("%w: types[%d] %s: cost: must be a finite number, not negative, got %v", ErrInvalidPlanner, i, name, t.Cost)
		}
		seen[name] = true
		if _, err := p.instance(i, 0); err != nil {
			return nil, fmt.Errorf("%w: types[%d] %s: %w", ErrInvalidPlanner, i, name, err)
		}
		p.order = append(p.order, i)
	}
	slices.SortStableFunc(p.order, func(x, y int) int { return cmp.Compare(types[x].Cost, types[y].Cost) })
	return p, nil
}

// Types returns the names of the node types, in the order given to New.
func (p *Planner) Types() []string {
	out := make([]string, len(p.types))
	for i, t := range p.types {
		out[i] = t.Template.Name
	}
	return out
}

// NodeName is the name of the k-th new node of a type: <type>-new-<k>, k zero-padded to five digits
// so that names sort in the order nodes are added.
func NodeName(typeName string, k int) string {
	return fmt.Sprintf("%s-new-%05d", typeName, k)
}

// instance returns the k-th new node of type i, instantiating it once.
func (p *Planner) instance(i, k int) (inventory.Instance, error) {
	name := p.types[i].Template.Name
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.instances[name]
	for len(list) <= k {
		in, err := p.types[i].Template.Instantiate(NodeName(name, len(list)))
		if err != nil {
			return inventory.Instance{}, err
		}
		list = append(list, in)
	}
	p.instances[name] = list
	return list[k], nil
}

// addNode adds an instance to a snapshot, as the node joining and its drivers publishing would.
func addNode(snap *allocator.Snapshot, in inventory.Instance) error {
	if err := snap.AddOrUpdateNode(in.Node); err != nil {
		return err
	}
	for _, s := range in.Slices {
		if err := snap.AddOrUpdateSlice(s); err != nil {
			return err
		}
	}
	return nil
}

// removeNode deletes an instance from a snapshot.
func removeNode(snap *allocator.Snapshot, in inventory.Instance) error {
	for _, s := range in.Slices {
		if err := snap.DeleteSlice(s.Name); err != nil {
			return err
		}
	}
	return snap.DeleteNode(in.Node.Name)
}

// budget counts placement attempts against Options.StepBudget and the context.
type budget struct {
	ctx   context.Context
	limit int
	steps int
}

// charge counts the pods of a gang's pass beyond the step try charged, before the pass runs: a pass
// that would go past the limit is not run.
func (b *budget) charge(pods int) error {
	b.steps += max(pods, 1) - 1
	if b.limit > 0 && b.steps > b.limit {
		return fmt.Errorf("%w: %d placement attempts", allocator.ErrSearchBudget, b.limit)
	}
	return nil
}

func (b *budget) step() error {
	if err := b.ctx.Err(); err != nil {
		return context.Cause(b.ctx)
	}
	b.steps++
	if b.limit > 0 && b.steps > b.limit {
		return fmt.Errorf("%w: %d placement attempts", allocator.ErrSearchBudget, b.limit)
	}
	return nil
}

// attempt is the outcome of trying a unit on a cluster.
type attempt struct {
	single *pods.Placement
	group  *pods.GroupPlacement
	reason string // why it does not fit, when it does not
}

func (a *attempt) fits() bool { return a.single != nil || a.group != nil }

// placements are the pods' placements (nil entries of a gang left out).
func (a *attempt) placements() []*pods.Placement {
	if a.single != nil {
		return []*pods.Placement{a.single}
	}
	if a.group != nil {
		var out []*pods.Placement
		for _, pl := range a.group.Pods {
			if pl != nil {
				out = append(out, pl)
			}
		}
		return out
	}
	return nil
}

func (a *attempt) assume(c *pods.Cluster) error {
	if a.single != nil {
		return c.Assume(a.single)
	}
	return c.AssumeGroup(a.group)
}

// try places a unit on c; a unit that does not fit is an attempt with a reason, not an error. The
// reason of a single pod is the one given for node why, when it names one.
func try(b *budget, c *pods.Cluster, u Pending, why string) (*attempt, error) {
	if err := b.step(); err != nil {
		return nil, err
	}
	a, err := place(b, c, u, why)
	// An error that one node's devices cause (a selector failing at run time on them, say) is, as for
	// kube-scheduler's filter, that node's failure: the unit does not fit there, and other node types are
	// still judged. Any other invalid input fails the call.
	var ie *allocator.InputError
	if errors.As(err, &ie) && ie.NodeDependent {
		return &attempt{reason: err.Error()}, nil
	}
	return a, err
}

// place is try's placement: the gang or the pod on c, a unit that does not fit an attempt with a reason.
func place(b *budget, c *pods.Cluster, u Pending, why string) (*attempt, error) {
	switch {
	case u.Group != nil:
		// An autoscaler asks whether new nodes make the gang schedulable, which is kube-scheduler's
		// pass, not whether some placement exists: a gang the pass leaves pending on the new nodes
		// stays pending there, and a node added for it would be wasted.
		if err := b.charge(len(u.Pods)); err != nil {
			return nil, err
		}
		gp, err := c.PlaceGroup(b.ctx, u.Group, u.Pods)
		if errors.Is(err, pods.ErrGroupUnschedulable) {
			return &attempt{reason: err.Error()}, nil
		}
		if err != nil {
			return nil, err
		}
		return &attempt{group: gp}, nil
	case u.Pod != nil:
		pl, err := c.Place(b.ctx, u.Pod)
		var nn *pods.NoNodeError
		if errors.As(err, &nn) {
			return &attempt{reason: nodeReason(nn, why)}, nil
		}
		if err != nil {
			return nil, err
		}
		return &attempt{single: pl}, nil
	}
	return nil, &allocator.InputError{Object: "Pending", Err: errors.New("neither a pod nor a gang")}
}

// nodeReason is the reason a NoNodeError gives for the node, or its error text.
func nodeReason(e *pods.NoNodeError, node string) string {
	for _, r := range e.Nodes {
		if r.Node == node {
			return r.Reason
		}
	}
	return e.Error()
}
