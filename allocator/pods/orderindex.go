package pods

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
)

// nodeOrder is BestFit's or Spread's order of the nodes (see Cluster.order) for one revision of the
// Cluster's snapshot and one node list (the node index's, nodeindex.go), kept in the load cache: an
// Assume moves the few nodes whose load it changed instead of the next placement sorting every node
// again. The order slice is never modified once made (a move makes a new one), so a placement reads it
// without the lock.
type nodeOrder struct {
	rev    allocator.Revision
	nodes  []*v1.Node // the list the positions index
	order  []int
	score  []int // each node's load, by position in nodes
	byName map[string]int
	desc   bool // BestFit: the most loaded first
}

// sortByLoad is the order of Cluster.order from the nodes' loads: Spread takes the least loaded first,
// BestFit the most loaded; ties (unloaded nodes among them) keep the nodes' order. It is the order the
// nodes take when sorted by (load, position), load descending for BestFit.
func sortByLoad(nodes []*v1.Node, load map[string]int, desc bool) *nodeOrder {
	o := &nodeOrder{nodes: nodes, order: make([]int, len(nodes)), score: make([]int, len(nodes)), desc: desc}
	for i, n := range nodes {
		o.order[i] = i
		o.score[i] = max(load[n.Name], 0)
	}
	slices.SortFunc(o.order, o.cmp)
	return o
}

func (o *nodeOrder) cmp(x, y int) int {
	sx, sy := o.score[x], o.score[y]
	if o.desc {
		sx, sy = sy, sx
	}
	if sx != sy {
		return sx - sy
	}
	return x - y
}

// sameList reports whether a and b are one node list (the same array), as the index hands it out.
func sameList(a, b []*v1.Node) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// moved returns the order at revision after, the nodes named having now the loads in load; nil when a
// node is not in the list.
func (o *nodeOrder) moved(after allocator.Revision, names []string, load map[string]int) *nodeOrder {
	if o.byName == nil {
		o.byName = make(map[string]int, len(o.nodes))
		for i, n := range o.nodes {
			o.byName[n.Name] = i
		}
	}
	order := o.order
	cloned := false
	for _, name := range names {
		i, ok := o.byName[name]
		if !ok {
			continue // a claim pinned to a node not in the list weighs on no node of it
		}
		s := max(load[name], 0)
		if s == o.score[i] {
			continue
		}
		if !cloned {
			order, cloned = slices.Clone(order), true
		}
		at := slices.Index(order, i)
		order = slices.Delete(order, at, at+1)
		o.score[i] = s
		to, _ := slices.BinarySearchFunc(order, i, o.cmp)
		order = slices.Insert(order, to, i)
	}
	return &nodeOrder{rev: after, nodes: o.nodes, order: order, score: o.score, byName: o.byName, desc: o.desc}
}
