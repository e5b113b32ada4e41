package pods

import (
	"context"
	"math/big"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
)

// What BestFit and Spread score nodes by: the devices allocated to claims pinned to each node (its
// load), and, for BestFit, how full the shared counter sets are that a pod's allocation would draw on
// (its fill).
//
// The fill of an allocation is, summed over each device it takes and each counter set that device
// consumes (spec.devices[].consumesCounters), the share of that set already consumed by the devices
// allocated in the snapshot: for each counter of the set with a capacity above zero, consumed ÷
// capacity, averaged over those counters. A share is a ratio of quantities of one counter, so the measure
// has no unit: a set of memory slices counted in ones and one of memory counted in bytes weigh alike, and
// one partition on a GPU whose set is 6/7 used scores 6/7 wherever it lands. The sum draws, as a
// scheduler packing partitions would, the allocation towards the GPU that is already fullest, which keeps
// the emptiest GPUs whole: a MIG partition scores the share of its GPU's counter set already used, and a
// whole GPU in dynamic-MIG mode (which consumes all of its set, so fits only where none is used) scores
// 0, as does every device that consumes no counters. Counting the devices drawing on a set instead would
// need no capacity but would rate a GPU holding one 1-slice partition as full as one holding a 4-slice
// partition; the share does not. Shares are exact rationals, so ties are ties and go to the load.

// order is the order in which Options.Choice takes the nodes, as indexes into nodes; nil for FirstFit
// (the nodes' own order). BestFit takes the nodes with the most devices allocated to claims pinned to
// them first, Spread those with the fewest; ties keep the nodes' order. Without counter sets, taking the
// first node in this order where the pod fits chooses what comparing the scores of every node that fits
// would choose, and needs to filter only the nodes before it. scored reports a BestFit on a snapshot
// with counter sets: then every node is filtered and the fill of its allocation comes first (place);
// or Options.Cost, which rates every node where the pod fits (cost.go).
func (c *Cluster) order(snap *allocator.Snapshot, nodes []*v1.Node) (order []int, scored bool) {
	if c.opts.Cost != nil || c.opts.Choice == Scheduler {
		return nil, true // every node is filtered, then rated (cost.go) or scored (profilechoice.go)
	}
	if c.opts.Choice == FirstFit {
		return nil, false
	}
	c.withScores(snap, func(load map[string]int, fill *fillState) {
		scored = fill != nil
		if snap != c.snap {
			order = sortByLoad(nodes, load, c.opts.Choice == BestFit).order
			return
		}
		// The cache's lock is held: the order kept for its revision and this node list is the one to take.
		lc := &c.load
		if o := lc.order; o != nil && o.rev == lc.rev && sameList(o.nodes, nodes) {
			order = o.order
			return
		}
		o := sortByLoad(nodes, load, c.opts.Choice == BestFit)
		o.rev = lc.rev
		lc.order = o
		order = o.order
	})
	return order, scored
}

// nodeLoad counts, per node, the devices allocated to claims whose allocation is pinned to that node
// (see pinned).
func nodeLoad(snap *allocator.Snapshot, claims []*resourceapi.ResourceClaim) map[string]int {
	load := map[string]int{}
	for _, claim := range claims {
		if node, n := pinned(claim); n > 0 {
			load[node] += n
		}
	}
	return load
}

// pinned returns the node a claim's allocation is pinned to (a node selector with the single field
// requirement metadata.name in [node], as allocations of node-local devices are written) and how many
// devices it holds there; 0 devices for a claim without such an allocation.
func pinned(claim *resourceapi.ResourceClaim) (string, int) {
	a := claim.Status.Allocation
	if a == nil || a.NodeSelector == nil || len(a.NodeSelector.NodeSelectorTerms) != 1 {
		return "", 0
	}
	t := a.NodeSelector.NodeSelectorTerms[0]
	if len(t.MatchExpressions) != 0 || len(t.MatchFields) != 1 {
		return "", 0
	}
	f := t.MatchFields[0]
	if f.Key == "metadata.name" && f.Operator == v1.NodeSelectorOpIn && len(f.Values) == 1 {
		return f.Values[0], len(a.Devices.Results)
	}
	return "", 0
}

// setKey names a counter set: its pool and its name in the pool.
type setKey struct {
	pool allocator.PoolID
	name string
}

// counterSet is one counter set: the capacity of its counters and what the allocated devices consume.
type counterSet struct {
	capacity map[string]*big.Rat // counters with a capacity above zero
	consumed map[string]resource.Quantity
	share    *big.Rat // the mean of consumed ÷ capacity; nil until asked for after a change
}

// fillState is what the fill of an allocation is computed from: the snapshot's counter sets and the
// devices its claims hold.
type fillState struct {
	all  map[allocator.PoolID][]resourceapi.CounterSet // Snapshot.CounterSets
	sets map[setKey]*counterSet                        // built from all when first drawn on; nil: no such set
	// devices counts, per device, the allocation results naming it; a device consumes its counters
	// once however many shares of it are allocated, as the allocator counts them.
	devices map[allocator.DeviceID]int
}

// newFill returns the fill state of the snapshot's counter sets and claims; nil when the snapshot has
// no counter sets, where every allocation's fill is 0.
func newFill(snap *allocator.Snapshot, claims []*resourceapi.ResourceClaim) *fillState {
	all := snap.CounterSets()
	if len(all) == 0 {
		return nil
	}
	f := &fillState{all: all, sets: map[setKey]*counterSet{}, devices: map[allocator.DeviceID]int{}}
	for _, claim := range claims {
		f.claim(snap, claim, 1)
	}
	return f
}

// set is the counter set, built when first drawn on, so that a recount costs what is allocated rather
// than the fleet's counter sets; nil for a set the pool does not publish.
func (f *fillState) set(key setKey) *counterSet {
	if set, ok := f.sets[key]; ok {
		return set
	}
	var set *counterSet
	for _, cs := range f.all[key.pool] {
		if cs.Name != key.name {
			continue
		}
		set = &counterSet{capacity: map[string]*big.Rat{}, consumed: map[string]resource.Quantity{}}
		for name, c := range cs.Counters {
			if c.Value.Sign() > 0 {
				set.capacity[name] = ratOf(c.Value)
			}
		}
		break
	}
	f.sets[key] = set
	return set
}

// claim adds (sign 1) or takes away (sign -1) what the devices of the claim's allocation consume.
func (f *fillState) claim(snap *allocator.Snapshot, claim *resourceapi.ResourceClaim, sign int) {
	if claim.Status.Allocation == nil {
		return
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		id := allocator.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		n := f.devices[id]
		f.devices[id] = n + sign
		if n+sign <= 0 {
			delete(f.devices, id)
		}
		if (sign > 0 && n == 0) || (sign < 0 && n == 1) {
			f.consume(snap, id, sign)
		}
	}
}

// consume adds or takes away what one device consumes from the counter sets of its pool.
func (f *fillState) consume(snap *allocator.Snapshot, id allocator.DeviceID, sign int) {
	d, ok := snap.Device(id)
	if !ok {
		return
	}
	pool := allocator.PoolID{Driver: id.Driver, Pool: id.Pool}
	for _, cc := range d.ConsumesCounters {
		set := f.set(setKey{pool, cc.CounterSet})
		if set == nil {
			continue
		}
		for name, c := range cc.Counters {
			if _, ok := set.capacity[name]; !ok {
				continue
			}
			q := set.consumed[name]
			if sign > 0 {
				q.Add(c.Value)
			} else {
				q.Sub(c.Value)
			}
			set.consumed[name] = q
		}
		set.share = nil
	}
}

// fill is the fill of an allocation (see the comment at the top of the file): what the results' devices,
// each once, find their counter sets already holding.
func (f *fillState) fill(snap *allocator.Snapshot, results []resourceapi.AllocationResult) *big.Rat {
	sum := new(big.Rat)
	if f == nil {
		return sum
	}
	var seen []allocator.DeviceID
	for _, res := range results {
		for _, r := range res.Devices.Results {
			id := allocator.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			if slices.Contains(seen, id) {
				continue
			}
			seen = append(seen, id)
			d, ok := snap.Device(id)
			if !ok {
				continue
			}
			pool := allocator.PoolID{Driver: r.Driver, Pool: r.Pool}
			for _, cc := range d.ConsumesCounters {
				if set := f.set(setKey{pool, cc.CounterSet}); set != nil {
					sum.Add(sum, set.shareOf())
				}
			}
		}
	}
	return sum
}

// shareOf is the mean over the set's counters of consumed ÷ capacity.
func (s *counterSet) shareOf() *big.Rat {
	if s.share != nil {
		return s.share
	}
	share, part := new(big.Rat), new(big.Rat)
	for name, capacity := range s.capacity {
		if used, ok := s.consumed[name]; ok && used.Sign() != 0 {
			share.Add(share, part.Quo(setRat(part, used), capacity))
		}
	}
	if len(s.capacity) > 0 {
		share.Quo(share, new(big.Rat).SetInt64(int64(len(s.capacity))))
	}
	s.share = share
	return share
}

// ratOf is the exact value of a quantity.
func ratOf(q resource.Quantity) *big.Rat { return setRat(new(big.Rat), q) }

// setRat sets r to the exact value of a quantity and returns it.
func setRat(r *big.Rat, q resource.Quantity) *big.Rat {
	if v, ok := q.AsInt64(); ok {
		return r.SetInt64(v)
	}
	d := q.AsDec() // of the copy: the caller's quantity keeps its form
	r.SetInt(d.UnscaledBig())
	if scale := int64(d.Scale()); scale != 0 {
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(abs(scale)), nil)
		if scale > 0 {
			r.Quo(r, new(big.Rat).SetInt(p))
		} else {
			r.Mul(r, new(big.Rat).SetInt(p))
		}
	}
	return r
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// loadCache keeps the scores' inputs of the cluster's snapshot for one revision of it: nodeLoad and, for
// BestFit, the fill state. Placements the Cluster assumes update them in place, when the snapshot made no
// other change meanwhile; any other change makes the next placement count again.
type loadCache struct {
	mu   sync.Mutex
	ok   bool
	rev  allocator.Revision
	load map[string]int
	fill *fillState // nil without counter sets, and for Spread
	// order is BestFit's or Spread's order of the nodes at rev (orderindex.go); nil when not known.
	order *nodeOrder
}

// withScores calls fn with nodeLoad of snap and, for BestFit, its fill state (nil without counter sets),
// from the cache when it holds snap's revision. fn runs under the cache's lock.
func (c *Cluster) withScores(snap *allocator.Snapshot, fn func(load map[string]int, fill *fillState)) {
	count := func() (map[string]int, *fillState) {
		claims := snap.Claims("")
		var fill *fillState
		if c.opts.Choice == BestFit {
			fill = newFill(snap, claims)
		}
		return nodeLoad(snap, claims), fill
	}
	if snap != c.snap {
		fn(count())
		return
	}
	lc := &c.load
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if rev := snap.Revision(); !lc.ok || lc.rev != rev {
		// A change between reading the revision and the claims leaves a count newer than its
		// revision, which no later call meets: revisions only grow.
		lc.load, lc.fill = count()
		lc.rev, lc.ok = rev, true
	}
	fn(lc.load, lc.fill)
}

// assumed updates the cache for the claim updates Assume or a removal wrote: each update's Base is the
// claim it replaced (nil for a new one), before and after the snapshot's revisions around the write (one
// change).
func (c *Cluster) assumed(updates []allocator.ClaimUpdate, before, after allocator.Revision, err error) {
	lc := &c.load
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if err != nil || !lc.ok || lc.rev != before || !sameLineage(before, after, 1) {
		lc.ok, lc.order = false, nil
		return
	}
	var changed []string // nodes whose load the updates change
	for _, u := range updates {
		if old := u.Base; old != nil {
			if node, n := pinned(old); n > 0 {
				lc.load[node] -= n
				changed = append(changed, node)
			}
			if lc.fill != nil {
				lc.fill.claim(c.snap, old, -1)
			}
		}
		if u.Claim == nil {
			continue
		}
		if node, n := pinned(u.Claim); n > 0 {
			lc.load[node] += n
			changed = append(changed, node)
		}
		if lc.fill != nil {
			lc.fill.claim(c.snap, u.Claim, 1)
		}
	}
	if lc.order != nil && lc.order.rev == before {
		lc.order = lc.order.moved(after, changed, lc.load)
	} else {
		lc.order = nil
	}
	lc.rev = after
}

// sameLineage: after is before followed by exactly n changes, all made by the caller.
func sameLineage(before, after allocator.Revision, n int) bool {
	b := before
	b.Changes += uint64(n)
	return b == after
}

// allocate allocates the claims on the node in the device order of the choice: BestFit packs within the
// node as well as across nodes, so its claims are allocated with allocator.BestFit (partitions on the GPU
// whose counter set is fullest, shares on the device whose capacity is most used), whatever strategy the
// snapshot was made with; FirstFit and Spread keep the snapshot's (FirstFit: upstream's devices);
// Scheduler takes upstream's devices (allocator.FirstFit), as kube-scheduler does.
func (c *Cluster) allocate(ctx context.Context, snap *allocator.Snapshot, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	switch c.opts.Choice {
	case BestFit:
		return snap.AllocateWith(ctx, allocator.BestFit, node, claims)
	case Scheduler:
		return snap.AllocateWith(ctx, allocator.FirstFit, node, claims)
	}
	return snap.Allocate(ctx, node, claims)
}
