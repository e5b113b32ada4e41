package scaling

import (
	"context"
	"fmt"
	"slices"

	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/inventory"
)

// Plan is a scale-up answer: the new nodes and where each pending pod goes.
type Plan struct {
	// Nodes are the new nodes, in the order they were added. Adding them (the Node and its slices)
	// and placing the pods in order reproduces Placements.
	Nodes []NewNode
	// Counts is the number of new nodes per type, in the order given to New; types not used are left
	// out.
	Counts []TypeCount
	// Cost is the sum of the new nodes' costs.
	Cost float64
	// Placed are the pods that get a node, in the order they were placed.
	Placed []Placed
	// Unplaced are the units that fit on no node, current or new, with the reason of every type.
	Unplaced []Fit
	// Steps is the number of placement attempts made.
	Steps int
}

// NewNode is a node the plan adds.
type NewNode struct {
	// Type is the node type's name.
	Type string
	// Instance is the node and the slices it would publish.
	Instance inventory.Instance
}

// TypeCount is how many new nodes of a type a plan adds.
type TypeCount struct {
	Type  string
	Count int
}

// Placed is where one pod goes.
type Placed struct {
	// Pod is "<namespace>/<name>".
	Pod string
	// Node is the node's name.
	Node string
	// New reports a node the plan adds.
	New bool
	// Placement is the pod's placement on the plan's fork, with its claims as the scheduler would
	// write them.
	Placement *pods.Placement
}

// ScaleUp computes the new nodes the pending units need. Units are placed in the order given, each on
// the cluster's current nodes and the nodes added so far if it fits there; otherwise nodes of the
// cheapest type that lets it fit are added (one for a pod, as few as the gang needs for a gang, up to
// one per pod), types of equal cost in the order given. types restricts the choice to the node types
// named; none means all. A unit that fits on no type is listed in Plan.Unplaced with every type's
// reason, and the others are still planned.
//
// Placing pods one at a time in order is what the scheduler does with its queue; the answer is an upper
// bound on the nodes needed, not an optimum over all orders.
func (p *Planner) ScaleUp(ctx context.Context, pending []Pending, types ...string) (*Plan, error) {
	allowed, err := p.allowed(types)
	if err != nil {
		return nil, err
	}
	b := &budget{ctx: ctx, limit: p.opts.StepBudget}
	f := p.c.Fork()
	defer f.Snapshot().Discard()
	existing := map[string]bool{}
	for _, n := range f.Snapshot().Nodes() {
		existing[n.Name] = true
	}
	plan := &Plan{}
	next := make([]int, len(p.types))  // next instance index per type
	count := make([]int, len(p.types)) // new nodes per type
	newNode := map[string]bool{}
	// Per type, a fork with only new nodes of that type, made when first needed: a unit that does
	// not fit there is not tried by adding nodes, which costs more than a placement.
	most := 0
	for _, u := range pending {
		most = max(most, u.size())
	}
	most = min(most, p.opts.MaxNodes)
	bases := make([]*pods.Cluster, len(p.types))
	defer func() {
		for _, base := range bases {
			if base != nil {
				base.Snapshot().Discard()
			}
		}
	}()
	for _, u := range pending {
		a, err := try(b, f, u, "")
		if err != nil {
			return nil, err
		}
		if a.fits() {
			if err := a.assume(f); err != nil {
				return nil, err
			}
			plan.record(a, newNode)
			continue
		}
		fit := Fit{Pending: u.Name()}
		placed := false
		for _, ti := range p.order {
			if !allowed[ti] {
				continue
			}
			t := p.types[ti]
			name := t.Template.Name
			room := p.opts.MaxNodes - len(plan.Nodes)
			if t.Max > 0 {
				room = min(room, t.Max-count[ti])
			}
			if room <= 0 {
				fit.Types = append(fit.Types, TypeFit{Type: name, Reason: fmt.Sprintf("no more new nodes of this type (%d added)", count[ti])})
				continue
			}
			if bases[ti] == nil {
				if bases[ti], err = p.typeBase(ti, most); err != nil {
					return nil, err
				}
			}
			alone, err := p.fitsOfType(b, bases[ti], []Pending{u})
			if err != nil {
				return nil, err
			}
			if !alone[0].Fits {
				fit.Types = append(fit.Types, TypeFit{Type: name, Reason: alone[0].Reason})
				continue
			}
			added, a, err := p.grow(b, f, ti, &next[ti], min(room, u.size()), u, existing)
			if err != nil {
				return nil, err
			}
			if a == nil {
				continue
			}
			if !a.fits() {
				fit.Types = append(fit.Types, TypeFit{Type: name, Reason: a.reason})
				continue
			}
			for _, in := range added {
				plan.Nodes = append(plan.Nodes, NewNode{Type: name, Instance: in})
				newNode[in.Node.Name] = true
				plan.Cost += t.Cost
				count[ti]++
			}
			plan.record(a, newNode)
			placed = true
			break
		}
		if !placed {
			plan.Unplaced = append(plan.Unplaced, fit)
		}
	}
	for ti, n := range count {
		if n > 0 {
			plan.Counts = append(plan.Counts, TypeCount{Type: p.types[ti].Template.Name, Count: n})
		}
	}
	plan.Steps = b.steps
	return plan, nil
}

// grow adds up to limit new nodes of type ti to f, one at a time, until the unit fits; it returns the
// nodes the unit uses (the others are removed again) and the attempt, assumed into f when it fits. A
// unit that does not fit leaves f unchanged. *next advances past every name tried, so that no name is
// used twice; names of current nodes are skipped.
func (p *Planner) grow(b *budget, f *pods.Cluster, ti int, next *int, limit int, u Pending, existing map[string]bool) ([]inventory.Instance, *attempt, error) {
	g := f.Fork()
	var added []inventory.Instance
	var a *attempt
	for len(added) < limit {
		in, err := p.instance(ti, *next)
		if err != nil {
			g.Snapshot().Discard()
			return nil, nil, err
		}
		*next++
		if existing[in.Node.Name] {
			continue
		}
		if err := addNode(g.Snapshot(), in); err != nil {
			g.Snapshot().Discard()
			return nil, nil, err
		}
		added = append(added, in)
		if a, err = try(b, g, u, in.Node.Name); err != nil {
			g.Snapshot().Discard()
			return nil, nil, err
		}
		if a.fits() {
			break
		}
	}
	if a == nil || !a.fits() {
		*next -= len(added) // names not used may be used by the next unit
		g.Snapshot().Discard()
		return nil, a, nil
	}
	if err := a.assume(g); err != nil {
		g.Snapshot().Discard()
		return nil, nil, err
	}
	if err := g.Snapshot().Commit(); err != nil {
		return nil, nil, err
	}
	used := usedNodes(a)
	var kept []inventory.Instance
	for _, in := range added {
		if _, ok := slices.BinarySearch(used, in.Node.Name); ok {
			kept = append(kept, in)
		} else if err := removeNode(f.Snapshot(), in); err != nil {
			return nil, nil, err
		}
	}
	return kept, a, nil
}

func (plan *Plan) record(a *attempt, newNode map[string]bool) {
	for _, pl := range a.placements() {
		plan.Placed = append(plan.Placed, Placed{Pod: pl.Pod.Namespace + "/" + pl.Pod.Name, Node: pl.Node, New: newNode[pl.Node], Placement: pl})
	}
}

// allowed marks the types named (all when none is).
func (p *Planner) allowed(names []string) ([]bool, error) {
	out := make([]bool, len(p.types))
	if len(names) == 0 {
		for i := range out {
			out[i] = true
		}
		return out, nil
	}
	for _, n := range names {
		i := slices.IndexFunc(p.types, func(t NodeType) bool { return t.Template.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("%w: unknown node type %q (known: %v)", ErrInvalidPlanner, n, p.Types())
		}
		out[i] = true
	}
	return out, nil
}
