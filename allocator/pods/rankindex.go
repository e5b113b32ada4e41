package pods

import (
	"context"
	"maps"
	"math/big"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// The rank index keeps BestFit and Spread from filtering, allocating and scoring, pod after pod, the
// nodes whose answer cannot have changed since the last pod of the shape.
//
// A node's answer for a shape (whether the pod fits, and for a scored BestFit the fill of its
// allocation, score.go) is a function of what the node sees: its own pools, the pools it shares with
// other nodes, and the pods recorded on it. An Assume changes the pools its claims' devices belong to
// and the pods on the placements' nodes: where every such pool is one node's own
// (allocator.Snapshot.PoolNode), only the answers of those nodes, of the nodes the claims are pinned to
// (whose load moves) and of the placements' nodes can have changed; a device of any other pool changes
// every node's. The index keeps, per shape, each node's answer and its key in the choice's order —
// (fill, then) load, then position, as Cluster.order and bestFill rank them — in a heap, and an Assume
// marks the nodes it touched, whose answers are computed again at the next placement of the shape. The
// first node of the heap is then the node the unindexed path chooses: for Spread and an unscored
// BestFit the first in order where the pod fits (nodes not yet asked are asked when they come first), for
// a scored BestFit the one whose allocation has the highest fill, ties to the first in order. Nodes
// where the shape does not fit leave the heap, as they stay full while only Assumes change the cluster
// (nodeindex.go). A pod recorded on a node by AddOrUpdatePod marks that node as an Assume does.
//
// A removal frees (nodeIndex.freed): the nodes it touched are marked too, and a node known full among
// them is asked again like one never asked (statePending), so that a node that fits again goes back
// into the heap, with its load and fill as they are after the removal.
//
// The index lives in the node index, for its lineage of revisions; anything that empties the node index
// drops it. It holds the node index's generation it has learned the removals of: a placement that read
// another generation (a removal is being told) does not use it. An error while asking a node (the
// context's, a search budget's, a CEL error) leaves the placement to the unindexed path, which reports
// it as it would have, and the index is built again.

// rank is the rank index of one shape.
type rank struct {
	mu      sync.Mutex
	rev     allocator.Revision // the revision the answers are of
	gen     uint64             // the node index's generation whose removals the answers know
	rebuild bool               // every answer is to be computed again
	scored  bool               // built for a scored BestFit: every node in the heap was asked
	desc    bool               // BestFit: the most loaded first
	ver     []uint32           // per position: bumped when the node's answer may have changed
	state   []nodeState        // per position
	heap    []rankEntry
	dirty   []int32 // positions marked since the last placement
}

type nodeState uint8

const (
	statePending nodeState = iota // not asked since the node last changed
	stateFits
	stateFull
)

// rankEntry is a node in the heap with its key when pushed; an entry whose ver is not the node's is
// stale and dropped when it comes first.
type rankEntry struct {
	pos  int32
	ver  uint32
	load int
	fill *big.Rat // scored only
}

// maxRanks bounds the shapes with a rank index: each holds a few words per node.
const maxRanks = 16

// before reports whether a comes before b in the choice's order.
func (rk *rank) before(a, b *rankEntry) bool {
	if rk.scored {
		if c := a.fill.Cmp(b.fill); c != 0 {
			return c > 0
		}
	}
	if a.load != b.load {
		return (a.load > b.load) == rk.desc
	}
	return a.pos < b.pos
}

func (rk *rank) up(j int) {
	h := rk.heap
	for j > 0 {
		p := (j - 1) / 2
		if !rk.before(&h[j], &h[p]) {
			return
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
}

func (rk *rank) down(j int) {
	h := rk.heap
	for {
		l := 2*j + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && rk.before(&h[r], &h[l]) {
			m = r
		}
		if !rk.before(&h[m], &h[j]) {
			return
		}
		h[j], h[m] = h[m], h[j]
		j = m
	}
}

func (rk *rank) push(e rankEntry) {
	rk.heap = append(rk.heap, e)
	rk.up(len(rk.heap) - 1)
}

func (rk *rank) pop() {
	h := rk.heap
	last := len(h) - 1
	h[0] = h[last]
	rk.heap = h[:last]
	if last > 0 {
		rk.down(0)
	}
}

func (rk *rank) heapify() {
	for j := len(rk.heap)/2 - 1; j >= 0; j-- {
		rk.down(j)
	}
}

// mark records that the answers at the positions may have changed (all: every answer); freed: they may
// have turned from full to fitting (a removal), so a node known full is asked again too.
func (rk *rank) mark(pos []int32, all, freed bool) {
	if all || len(rk.dirty)+len(pos) > len(rk.ver) {
		rk.rebuild, rk.dirty = true, nil
		return
	}
	for _, p := range pos {
		rk.ver[p]++
		rk.dirty = append(rk.dirty, p)
		if freed {
			rk.state[p] = statePending
		}
	}
}

// rankOf returns the rank index of the shape the view was read for, made when missing; nil when the
// node index moved on since the view was read.
func (x *nodeIndex) rankOf(v *indexView, desc bool) *rank {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.ok || x.gen != v.gen || x.rev != v.rev {
		return nil
	}
	if rk := x.ranks[v.key]; rk != nil {
		return rk
	}
	if x.ranks == nil {
		x.ranks = map[string]*rank{}
	}
	if len(x.ranks) >= maxRanks {
		for k := range x.ranks {
			delete(x.ranks, k)
			break
		}
	}
	rk := &rank{rev: x.rev, gen: x.gen, rebuild: true, desc: desc}
	x.ranks[v.key] = rk
	return rk
}

// touched marks the named nodes (all: every node) in every rank index; from an Assume, before and after
// are the snapshot's revisions around its write, and the indexes advance to after. A rank index not at
// before is built again. From AddOrUpdatePod (assumed false) the revision did not change.
func (x *nodeIndex) touched(names []string, all bool, assumed bool, before, after allocator.Revision) {
	x.mu.Lock()
	if len(x.ranks) == 0 {
		x.mu.Unlock()
		return
	}
	var pos []int32
	if !all {
		pos = x.positionsLocked(names)
	}
	ranks := slices.Collect(maps.Values(x.ranks))
	x.mu.Unlock()
	// The ranks' locks are taken without the index's: a placement holding one asks nodes, which reads
	// the pods on nodes, whose writers may empty the index.
	for _, rk := range ranks {
		rk.mu.Lock()
		switch {
		case !assumed:
			rk.mark(pos, all, false)
		case rk.rev != before:
			rk.mark(nil, true, false)
			rk.rev = after
		default:
			rk.mark(pos, all, false)
			rk.rev = after
		}
		rk.mu.Unlock()
	}
}

// touchedBy names the nodes whose answers the claim updates of an Assume and its placements can have
// changed (see the top of the file); all reports a device of a pool that is not one node's own.
func (c *Cluster) touchedBy(updates []allocator.ClaimUpdate, ps []*Placement) (names []string, all bool) {
	for _, u := range updates {
		for _, claim := range []*resourceapi.ResourceClaim{u.Base, u.Claim} {
			if claim == nil || claim.Status.Allocation == nil {
				continue
			}
			if node, n := pinned(claim); n > 0 {
				names = append(names, node)
			}
			for _, r := range claim.Status.Allocation.Devices.Results {
				node, ok := c.snap.PoolNode(allocator.PoolID{Driver: r.Driver, Pool: r.Pool})
				if !ok {
					return nil, true
				}
				names = append(names, node)
			}
		}
	}
	for _, p := range ps {
		if p != nil {
			names = append(names, p.Node)
		}
	}
	return names, false
}

// rankPass is one placement's use of a rank index: what it needs to ask nodes.
type rankPass struct {
	c       *Cluster
	ctx     context.Context
	snap    *allocator.Snapshot
	r       *request
	nodes   []*v1.Node
	extName string
	classes *allocator.NodeClasses
	asked   bool // classes were asked for
	shared  classVerdicts
	full    []int // positions found full
	// own is the allocation a scored pass made on the node it chose, when it was asked in this pass
	// and the results are the node's own: Place builds the placement from it, as bestFill's caller does.
	own *allocVerdict
}

// ask filters the node at position i as the workers of placeIndexed do: fits, and for a scored pass the
// allocation whose fill ranks it; an error ends the pass.
func (p *rankPass) ask(i int, scored bool) (bool, *allocVerdict, error) {
	if err := p.ctx.Err(); err != nil {
		return false, nil, err
	}
	nc, _, err := p.c.check(p.r, p.nodes[i], p.extName)
	if err != nil {
		return false, nil, err
	}
	if nc == nil {
		p.full = append(p.full, i)
		return false, nil, nil
	}
	if len(nc.claims) > 0 {
		if !p.asked {
			p.asked = true
			if len(p.r.pending) > 0 && len(p.nodes) > 1 {
				if p.classes, err = p.snap.NodeClasses(p.ctx, p.r.pending); err != nil {
					return false, nil, err
				}
			}
		}
		fits, err := p.shared.fits(p.ctx, p.snap, p.classes, p.nodes[i], nc)
		if err != nil {
			return false, nil, err
		}
		if !fits {
			p.full = append(p.full, i)
			return false, nil, nil
		}
	}
	if !scored {
		return true, nil, nil
	}
	v, av := p.shared.allocate(p.ctx, p.snap, p.classes, p.nodes[i], nc)
	if v.err != nil {
		return false, nil, v.err
	}
	if !v.fits {
		p.full = append(p.full, i)
		return false, nil, nil
	}
	return true, av, nil
}

// rankChoose chooses the node for a BestFit or Spread placement from the shape's rank index: the
// position the unindexed path chooses, -1 when the pod fits on no node, and for a scored BestFit the
// allocation made there when this pass made it; false when the index cannot answer (the node index
// moved on, the snapshot changed, or asking a node failed), and the caller filters as without it.
func (c *Cluster) rankChoose(ctx context.Context, snap *allocator.Snapshot, r *request, nodes []*v1.Node, idx *indexView, extName string) (int, *allocVerdict, bool) {
	rk := c.fullIdx.rankOf(idx, c.opts.Choice == BestFit)
	if rk == nil {
		return -1, nil, false
	}
	p := &rankPass{c: c, ctx: ctx, snap: snap, r: r, nodes: nodes, extName: extName}
	chosen, ok := c.rankChooseLocked(rk, p, idx)
	// Recorded without the rank's lock (see touched).
	if len(p.full) > 0 {
		c.fullIdx.record(idx, snap.Revision(), p.full)
	}
	return chosen, p.own, ok
}

func (c *Cluster) rankChooseLocked(rk *rank, p *rankPass, idx *indexView) (int, bool) {
	rk.mu.Lock()
	defer rk.mu.Unlock()
	if rk.rev != p.snap.Revision() || rk.gen != idx.gen {
		return -1, false
	}
	n := len(p.nodes)
	var scored bool
	c.withScores(p.snap, func(_ map[string]int, fill *fillState) { scored = fill != nil })
	// The nodes to ask or key again.
	var again []int32
	if rk.rebuild || rk.scored != scored || len(rk.ver) != n {
		rk.rebuild, rk.scored, rk.dirty, rk.heap = false, scored, nil, rk.heap[:0]
		if len(rk.ver) != n {
			rk.ver, rk.state = make([]uint32, n), make([]nodeState, n)
		}
		for i := range n {
			rk.ver[i]++
			rk.state[i] = statePending
			if idx.skip(i) {
				rk.state[i] = stateFull
				continue
			}
			again = append(again, int32(i))
		}
	} else {
		slices.Sort(rk.dirty)
		for _, i := range slices.Compact(rk.dirty) {
			// Full stays full while only Assumes change the cluster; a removal set the nodes it
			// freed pending (freed).
			if rk.state[i] != stateFull {
				rk.state[i] = statePending
				again = append(again, i)
			}
		}
		rk.dirty = rk.dirty[:0]
	}
	fail := func() (int, bool) {
		rk.rebuild = true
		return -1, false
	}
	// A scored pass asks every node again now (bestFill compares them all); an unscored one asks a
	// node when it comes first.
	var allocs []*allocVerdict
	var asked map[int32]*allocVerdict // the allocations made in this pass, by position
	if scored {
		asked = make(map[int32]*allocVerdict, len(again))
		allocs = make([]*allocVerdict, len(again))
		for k, i := range again {
			fits, av, err := p.ask(int(i), true)
			if err != nil {
				return fail()
			}
			if fits {
				rk.state[i] = stateFits
				allocs[k], asked[i] = av, av
			} else {
				rk.state[i] = stateFull
			}
		}
	}
	fresh := len(rk.heap) == 0
	c.withScores(p.snap, func(load map[string]int, fill *fillState) {
		byClass := map[*classVerdict]*big.Rat{} // nodes of a class draw on sets alike, as in bestFill
		for k, i := range again {
			if rk.state[i] == stateFull {
				continue
			}
			e := rankEntry{pos: i, ver: rk.ver[i], load: max(load[p.nodes[i].Name], 0)}
			if scored {
				v := allocs[k]
				f := byClass[v.class]
				if f == nil || v.class == nil {
					f = fill.fill(p.snap, v.results)
					if v.class != nil {
						byClass[v.class] = f
					}
				}
				e.fill = f
			}
			if fresh {
				rk.heap = append(rk.heap, e)
			} else {
				rk.push(e)
			}
		}
	})
	if fresh {
		rk.heapify()
	}
	// The first entry that is current and where the pod fits; each round drops an entry or ends.
	for len(rk.heap) > 0 {
		e := &rk.heap[0]
		i := int(e.pos)
		if e.ver != rk.ver[i] || rk.state[i] == stateFull {
			rk.pop()
			continue
		}
		if rk.state[i] == statePending {
			fits, _, err := p.ask(i, false)
			if err != nil {
				return fail()
			}
			if !fits {
				rk.state[i] = stateFull
				rk.pop()
				continue
			}
			rk.state[i] = stateFits
		}
		if av := asked[e.pos]; av != nil && av.own {
			p.own = av
		}
		rk.compact()
		return i, true
	}
	return -1, true
}

// compact drops the stale entries once they outnumber the nodes, so that the heap stays within twice
// the nodes whatever the number of placements.
func (rk *rank) compact() {
	if len(rk.heap) <= 2*len(rk.ver)+64 {
		return
	}
	rk.heap = slices.DeleteFunc(rk.heap, func(e rankEntry) bool {
		return e.ver != rk.ver[e.pos] || rk.state[e.pos] == stateFull
	})
	rk.heapify()
}
