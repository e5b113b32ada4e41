package pods

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// The node index keeps Place from filtering again, pod after pod, the nodes already found full.
//
// Whether a pod fits on a node is a function of the pod's shape (its spec, namespace and the specs of the
// claims to allocate, see shapeKey) and of what the cluster holds: the snapshot and the pods on nodes. An
// Assume only adds: allocations take devices, counters and capacity, and recorded pods take CPU, memory,
// pod slots and host ports. None of the checks Place runs (NodeName, NodeUnschedulable, TaintToleration,
// NodeAffinity, NodePorts, NodeResourcesFit, the reuse of allocated claims and Fits) can turn from "no"
// to "yes" when more is taken, so a node where a shape did not fit stays one where it does not fit while
// only Assumes change the cluster. The index holds, per shape, those nodes (by position in the snapshot's
// node list) for one lineage of revisions: the revision it was built at, advanced by each Assume that
// made the snapshot's next change (as the load cache in score.go).
//
// A removal only frees: a pod forgotten on its node (DeletePod, Remove, a pod recorded anew) frees that
// node's CPU, memory, pod slot and ports, and the claims a Remove or RemovePodGroup deallocates or
// deletes free devices of their pools, which are one node's own where allocator.Snapshot.PoolNode
// says so (touchedBy, rankindex.go). Only those nodes can turn from "no" to "yes": the index forgets
// that they were full, for every shape (FirstFit's prefix ends at the first of them at the latest), and
// the rank indexes ask them again (freed), so that a workload alternating removals and placements does
// not filter the fleet again after each removal. A removal whose write was not the snapshot's next
// change after the index's revision, or that freed a device of a pool that is not one node's own
// (network-attached devices, a pool spanning nodes, a pool the snapshot no longer holds), empties the
// index, as does any other change of the snapshot (a commit, the caller's updates). The caller's
// Predicate (standing for PodTopologySpread and InterPodAffinity, which more pods can satisfy) is not
// monotone: a Cluster with one keeps no index.
//
// FirstFit takes nodes in name order, so the nodes it found full form a prefix of the list: the index
// keeps where that prefix ends, and the next pod of the shape starts after it, which makes a placement's
// cost independent of how many nodes were filled before. BestFit and Spread skip the known full nodes
// wherever they are in their order, and choose from the shape's rank index (rankindex.go), which the
// node index holds for its lineage too.

// nodeIndex is the Cluster's index of full nodes per pod shape. It keeps the snapshot's node list of its
// revision too (Assumes do not change it), so that a placement does not copy it.
type nodeIndex struct {
	// freeMu makes one removal's update (freed) at a time, so that the rank indexes learn the
	// generations in order.
	freeMu sync.Mutex
	mu     sync.Mutex
	ok     bool
	// gen counts the times the index was emptied or told of a removal (freed); a pass records only
	// into the generation it read, as it may have found full a node freed since.
	gen    uint64
	rev    allocator.Revision
	nodes  []*v1.Node // the snapshot's node list, read after rev (see nodeList)
	shapes map[string]*shapeFull
	ranks  map[string]*rank // BestFit's and Spread's rank index per shape (rankindex.go)
	byName map[string]int32 // positions in nodes by name, made when first needed
}

// shapeFull is what the index knows of one shape. Its bit set is never modified once published (a
// record replaces it), so a placement reads it without the lock; a FirstFit fill replaces it once a node
// fills, a 64th of a byte a node.
type shapeFull struct {
	full  []uint64 // bit i: the shape does not fit on the node at position i of the node list
	first int      // every position before first is full
}

// maxShapes bounds the shapes the index remembers.
const maxShapes = 256

// indexView is what one placement read from the index.
type indexView struct {
	key   string
	gen   uint64
	rev   allocator.Revision
	full  []uint64 // nil: nothing known
	first int
}

// skip reports whether the node at position i is known full.
func (v *indexView) skip(i int) bool { return v.full != nil && v.full[i/64]&(1<<(i%64)) != 0 }

// reset empties the index; the next lookup starts a new lineage.
func (x *nodeIndex) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.resetLocked()
}

func (x *nodeIndex) resetLocked() {
	x.ok = false
	x.gen++
	x.shapes, x.nodes, x.ranks, x.byName = nil, nil, nil, nil
}

// nodeList is snap.Nodes() for the Cluster's snapshot, from the index while the snapshot's revision is
// the index's; any other revision empties the index, which starts from the list as it is now. (A list
// read after the revision may be newer than it: then no placement records into the index, as the
// revision it reads after filtering differs, and the next call empties it.)
func (c *Cluster) nodeList(snap *allocator.Snapshot) []*v1.Node {
	if c.noIndex || snap != c.snap {
		return snap.Nodes()
	}
	x := &c.fullIdx
	rev := snap.Revision()
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.ok || x.rev != rev {
		x.resetLocked()
		x.ok, x.rev, x.nodes = true, rev, snap.Nodes()
	}
	return x.nodes
}

// lookup returns what the index knows of the shape, nil when the index is not of snap's revision rev or
// nodes is not its node list (positions would name other nodes).
func (x *nodeIndex) lookup(rev allocator.Revision, nodes []*v1.Node, key string) *indexView {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.ok || x.rev != rev || len(nodes) == 0 || len(nodes) != len(x.nodes) || &nodes[0] != &x.nodes[0] {
		return nil
	}
	v := &indexView{key: key, gen: x.gen, rev: rev}
	if s := x.shapes[key]; s != nil {
		v.full, v.first = s.full, s.first
	}
	return v
}

// record adds the positions found full by a placement that read v, when the index is still at the
// generation and revision v was read at and the snapshot made no change meanwhile (now is its revision
// after the placement's filtering): what the placement saw is then what the index describes.
func (x *nodeIndex) record(v *indexView, now allocator.Revision, full []int) {
	if len(full) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.ok || x.gen != v.gen || x.rev != v.rev || now != v.rev {
		return
	}
	s := x.shapes[v.key]
	ns := &shapeFull{}
	if s != nil {
		ns.full, ns.first = slices.Clone(s.full), s.first
	} else {
		ns.full = make([]uint64, (len(x.nodes)+63)/64)
	}
	for _, i := range full {
		ns.full[i/64] |= 1 << (i % 64)
	}
	for ns.first < len(x.nodes) && ns.full[ns.first/64]&(1<<(ns.first%64)) != 0 {
		ns.first++
	}
	if x.shapes == nil {
		x.shapes = map[string]*shapeFull{}
	}
	if s == nil && len(x.shapes) >= maxShapes {
		// Pods of many shapes (each with its own spec.nodeName, say): forget one shape, so that the
		// index holds at most maxShapes bit sets.
		for k := range x.shapes {
			delete(x.shapes, k)
			break
		}
	}
	x.shapes[v.key] = ns
}

// assumed advances the index over an Assume's write (before and after are the snapshot's revisions
// around it, err its error): the write only took devices, so what was full stays full.
func (x *nodeIndex) assumed(before, after allocator.Revision, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.ok {
		return
	}
	if err != nil || x.rev != before || !sameLineage(before, after, 1) {
		x.resetLocked()
		return
	}
	x.rev = after
}

// freed updates the index for a removal (see the top of the file): the pods forgotten on the named nodes
// and, when w is not nil, that write of the snapshot, whose claim updates freed devices on those nodes
// only (all: a device of a pool that is not one node's own). The nodes' full bits are cleared for every
// shape and the rank indexes ask them again; a write that was not the snapshot's next change after the
// index's revision, or all, empties the index. A forgotten pod alone (w nil) changes no revision.
func (x *nodeIndex) freed(names []string, all bool, w *snapWrite) {
	if len(names) == 0 && !all && w == nil {
		return
	}
	x.freeMu.Lock()
	defer x.freeMu.Unlock()
	x.mu.Lock()
	if !x.ok {
		x.mu.Unlock()
		return
	}
	if all || w != nil && (x.rev != w.before || !sameLineage(w.before, w.after, 1)) {
		x.resetLocked()
		x.mu.Unlock()
		return
	}
	pos := x.positionsLocked(names)
	// Passes that read the index before now may have found these nodes full before they were freed:
	// they record nothing.
	x.gen++
	gen := x.gen
	if w != nil {
		x.rev = w.after
	}
	for key, s := range x.shapes {
		x.shapes[key] = s.without(pos)
	}
	ranks := slices.Collect(maps.Values(x.ranks))
	x.mu.Unlock()
	// The ranks' locks are taken without the index's (see touched).
	for _, rk := range ranks {
		rk.mu.Lock()
		if w != nil && rk.rev != w.before {
			rk.mark(nil, true, false)
		} else {
			rk.mark(pos, false, true)
		}
		if w != nil {
			rk.rev = w.after
		}
		rk.gen = gen
		rk.mu.Unlock()
	}
}

// positionsLocked returns the positions of the named nodes in the node list, each once (a removal names
// a node for its pod, its claims' node selector and their devices); names not in it are left out (no
// placement chooses them).
func (x *nodeIndex) positionsLocked(names []string) []int32 {
	if x.byName == nil {
		x.byName = make(map[string]int32, len(x.nodes))
		for i, n := range x.nodes {
			x.byName[n.Name] = int32(i)
		}
	}
	pos := make([]int32, 0, len(names))
	for _, name := range names {
		if p, ok := x.byName[name]; ok {
			pos = append(pos, p)
		}
	}
	slices.Sort(pos)
	return slices.Compact(pos)
}

// without returns the shape's set with the positions cleared, and FirstFit's prefix ending at the
// first of them at the latest; s itself when none of them was full (the published set is not modified).
func (s *shapeFull) without(pos []int32) *shapeFull {
	ns := s
	for _, p := range pos {
		if ns.full[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		if ns == s {
			ns = &shapeFull{full: slices.Clone(s.full), first: s.first}
		}
		ns.full[p/64] &^= 1 << (p % 64)
		ns.first = min(ns.first, int(p))
	}
	return ns
}

// indexView returns the index's view for the request's shape, nil when the placement may not use the
// index: on another snapshot than the Cluster's (a fork of Place's fallbacks), with the caller's
// Predicate, or for a pod reusing allocated claims (whose reservations are the pod's own).
func (c *Cluster) indexView(snap *allocator.Snapshot, r *request, rev allocator.Revision, nodes []*v1.Node) *indexView {
	if c.noIndex || snap != c.snap || c.opts.Predicate != nil || len(r.allocated) > 0 || r.pod == nil {
		return nil
	}
	key, ok := shapeKey(r)
	if !ok {
		return nil
	}
	return c.fullIdx.lookup(rev, nodes, key)
}

// shapeKey is what decides where a pod fits, besides the cluster: the pod's namespace and spec (node
// name, selectors, affinity, tolerations, requests, host ports, extended resources) and the namespace
// and spec of each claim to allocate. Names are left out: pods of one workload share a shape.
func shapeKey(r *request) (string, bool) {
	type claimShape struct {
		Namespace string
		Spec      *resourceapi.ResourceClaimSpec
	}
	s := struct {
		Namespace string
		Spec      *v1.PodSpec
		Claims    []claimShape
	}{Namespace: r.pod.Namespace, Spec: &r.pod.Spec}
	for _, claim := range r.pending {
		s.Claims = append(s.Claims, claimShape{Namespace: claim.Namespace, Spec: &claim.Spec})
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// verdictPages are a placement's verdicts by node, in pages allocated when a node of theirs is filtered:
// a FirstFit placement that filters a few nodes allocates for those, not for every node. Workers set
// the verdicts of distinct nodes; they are read once the workers are done.
type verdictPages struct {
	pages []atomic.Pointer[[verdictPage]verdict]
}

const verdictPage = 32

func newVerdicts(n int) *verdictPages {
	return &verdictPages{pages: make([]atomic.Pointer[[verdictPage]verdict], (n+verdictPage-1)/verdictPage)}
}

// at is the node's verdict, to set.
func (p *verdictPages) at(i int) *verdict {
	slot := &p.pages[i/verdictPage]
	pg := slot.Load()
	if pg == nil {
		pg = new([verdictPage]verdict)
		if !slot.CompareAndSwap(nil, pg) {
			pg = slot.Load()
		}
	}
	return &pg[i%verdictPage]
}

// get is the node's verdict; the zero verdict for a node not filtered.
func (p *verdictPages) get(i int) verdict {
	if pg := p.pages[i/verdictPage].Load(); pg != nil {
		return pg[i%verdictPage]
	}
	return verdict{}
}

// each calls fn with the verdicts of the pages allocated, in node order.
func (p *verdictPages) each(fn func(i int, v *verdict)) {
	for k := range p.pages {
		if pg := p.pages[k].Load(); pg != nil {
			for j := range pg {
				fn(k*verdictPage+j, &pg[j])
			}
		}
	}
}
