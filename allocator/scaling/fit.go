package scaling

import (
	"context"
	"slices"

	"github.com/dralloc/dralloc/allocator/pods"
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
	// node affinity or taint the new node does not satisfy, or an error the type's devices cause, such as
	// a selector failing at run time on them: allocator.InputError with NodeDependent); empty when it fits.
	Reason string
}

// Fits answers, for each pending unit, which node types would let it fit: on empty new nodes of that
// type only, with none of the cluster's current nodes, so that the answer is about the type. A pod gets
// one new node, a gang as many as it has pods (at most Options.MaxNodes). Claims the units share with
// pods already running stay as they are: a claim allocated on a current node fits on no new node. Units
// are judged independently.
func (p *Planner) Fits(ctx context.Context, pending []Pending) ([]Fit, error) {
	b := &budget{ctx: ctx, limit: p.opts.StepBudget}
	out := make([]Fit, len(pending))
	for i, u := range pending {
		out[i] = Fit{Pending: u.Name(), Types: make([]TypeFit, len(p.types))}
	}
	most := 0
	for _, u := range pending {
		most = max(most, u.size())
	}
	most = min(most, p.opts.MaxNodes)
	for ti, t := range p.types {
		// One fork per type with the cluster's nodes removed and as many new nodes as the largest
		// unit can use, added once: nodes and slices are prepared when added, which costs more
		// than a placement.
		base, err := p.typeBase(ti, most)
		if err != nil {
			return nil, err
		}
		v, err := p.fitsOfType(b, base, pending)
		base.Snapshot().Discard()
		if err != nil {
			return nil, err
		}
		for i := range pending {
			v[i].Type = t.Template.Name
			out[i].Types[ti] = v[i]
		}
	}
	return out, nil
}

// typeBase is a fork of the cluster without its nodes and with the first n new nodes of type ti.
func (p *Planner) typeBase(ti, n int) (*pods.Cluster, error) {
	base := p.c.Fork()
	for _, node := range base.Snapshot().Nodes() {
		if err := base.Snapshot().DeleteNode(node.Name); err != nil {
			base.Snapshot().Discard()
			return nil, err
		}
	}
	for k := range n {
		in, err := p.instance(ti, k)
		if err == nil {
			err = addNode(base.Snapshot(), in)
		}
		if err != nil {
			base.Snapshot().Discard()
			return nil, err
		}
	}
	return base, nil
}

// fitsOfType judges every unit on the new nodes of base (see typeBase), each on its own fork.
func (p *Planner) fitsOfType(b *budget, base *pods.Cluster, pending []Pending) ([]TypeFit, error) {
	first := ""
	if nodes := base.Snapshot().Nodes(); len(nodes) > 0 {
		first = nodes[0].Name
	}
	out := make([]TypeFit, len(pending))
	for i, u := range pending {
		f := base.Fork()
		a, err := try(b, f, u, first)
		f.Snapshot().Discard()
		if err != nil {
			return nil, err
		}
		if !a.fits() {
			out[i] = TypeFit{Reason: a.reason}
			continue
		}
		out[i] = TypeFit{Fits: true, Nodes: len(usedNodes(a))}
	}
	return out, nil
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
