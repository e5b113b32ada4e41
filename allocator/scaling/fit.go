package scaling

import (
	"context"
	"slices"

	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/inventory"
)

// Fit says, for one pending pod or gang, on which node types it would fit.
type Fit struct {
	// Pending is the unit's name ([Pending.Name]).
	Pending string
	// Types has one verdict per node type, in the order given to New.
	Types []TypeFit
}

// TypeFit is the verdict for one node type.
type TypeFit struct {
	// Type is the node type's name.
	Type string
	// Fits reports that the unit fits on new nodes of this type alone.
	Fits bool
	// Nodes is how many new nodes of the type the unit uses (one for a pod; up to one per pod of a
	// gang); zero when it does not fit.
	Nodes int
	// Reason says why it does not fit, as the placement reports it ("cannot allocate all claims", a
	// node affinity or taint the new node does not satisfy); empty when it fits.
	Reason string
}

// Fits answers, for each pending unit, which node types would let it fit: on empty new nodes of that
// type only, with none of the cluster's current nodes, so that the answer is about the type. A pod gets
// one new node, a gang as many as it has pods. Claims the units share with pods already running stay as
// they are: a claim allocated on a current node fits on no new node. Units are judged independently.
func (p *Planner) Fits(ctx context.Context, pending []Pending) ([]Fit, error) {
	b := &budget{ctx: ctx, limit: p.opts.StepBudget}
	out := make([]Fit, len(pending))
	for i, u := range pending {
		out[i] = Fit{Pending: u.Name(), Types: make([]TypeFit, len(p.types))}
	}
	for ti, t := range p.types {
		empty := p.c.Fork()
		for _, n := range empty.Snapshot().Nodes() {
			if err := empty.Snapshot().DeleteNode(n.Name); err != nil {
				empty.Snapshot().Discard()
				return nil, err
			}
		}
		for i, u := range pending {
			v, err := p.fitType(b, empty, ti, u)
			if err != nil {
				empty.Snapshot().Discard()
				return nil, err
			}
			v.Type = t.Template.Name
			out[i].Types[ti] = v
		}
		empty.Snapshot().Discard()
	}
	return out, nil
}

// fitType tries a unit on as many new nodes of type ti as it can use, on a fork of base.
func (p *Planner) fitType(b *budget, base *pods.Cluster, ti int, u Pending) (TypeFit, error) {
	f := base.Fork()
	defer f.Snapshot().Discard()
	var added []inventory.Instance
	for k := range u.size() {
		in, err := p.instance(ti, k)
		if err != nil {
			return TypeFit{}, err
		}
		if err := addNode(f.Snapshot(), in); err != nil {
			return TypeFit{}, err
		}
		added = append(added, in)
	}
	a, err := try(b, f, u, added[0].Node.Name)
	if err != nil {
		return TypeFit{}, err
	}
	if !a.fits() {
		return TypeFit{Reason: a.reason}, nil
	}
	return TypeFit{Fits: true, Nodes: len(usedNodes(a))}, nil
}

// usedNodes are the distinct nodes of an attempt's placements, sorted.
func usedNodes(a *attempt) []string {
	var out []string
	for _, pl := range a.placements() {
		out = append(out, pl.Node)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
