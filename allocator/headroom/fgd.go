package headroom

import (
	"math"
	"slices"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// FGD is the node and device choice of Fragmentation Gradient Descent (Weng et al., ATC '23), as a
// [pods.Cost] and a [pods.Prefer] for pods.Options.Cost and Options.Prefer. Placing a pod on node n
// grows F_n(M) by F_n(M) after minus before (see frag.go), the pod's allocation results, CPU and memory
// taken; the node is rated as the paper's simulator scores it, 100·σ(−growth in GPUs) truncated to an
// integer of 0–100, and costs minus that score, so [pods.Cluster.Place] takes, among the nodes where
// the pod fits (the same nodes as FirstFit), one whose fragmentation grows least, growths within about
// 0.04 GPUs of one another alike. Among nodes of one score the first by name is taken, as in the
// paper's simulator: its kube-scheduler's selectHost (vendor/k8s.io/kubernetes/pkg/scheduler/core/
// generic_scheduler.go) keeps the lexicographically smallest node name of the best score "for
// reproducibility" instead of drawing one at random (the simulator names its nodes with prefixes it
// draws, so there the smallest name is a random order of the nodes fixed per run). The tie-break
// weighs: with the integer score most nodes tie for a share, and a draw among them for every pod
// spreads the shares over the fleet, leaving every node's CPU and GPUs in part used (on Alibaba's
// gpushare100 pod list, seed 1, 100 % arrived, measured before a share's GPU followed the simulator's:
// 1,078 GPUs unallocated with a draw hashed from the names, 1,215 with a uniform draw, 836 taking the
// first by name). The growth is rounded to 1e-9 GPUs first, so that growths equal but for rounding
// score alike.
//
// Within a node the devices are allocated with [allocator.BestFit] (a share goes to the device whose
// capacity is most used), and, as in the paper, a pod whose allocation takes a share of one device and
// nothing else of the node's devices is rated on each device alike to that one (same driver,
// capacities and string attributes) with enough capacity left: the node is rated with the device of
// the best score, the first in the node's order among devices of one score (the simulator takes the
// first GPU of the best score: fgd_score.go), and Prefer names that device where it is not BestFit's,
// so that the pod is placed there. Whole devices are BestFit's: free devices alike are alike for the measure.
// Nodes without devices in the inventory cost 0. The mix is checked as [Inventory.Fragmentation]
// checks it.
//
// Each node's state and F_n(M) are kept and measured again only when the node changed (a claim on
// its devices allocated or freed, its pods' CPU or memory), and nodes of one kind in one state with
// one allocation share one measure and one choice of device, so that rating a node costs a few lookups
// where the mix has been measured on its state before.
func (inv *Inventory) FGD(mix []Shape) (pods.Cost, pods.Prefer, error) {
	pm, err := prepareMix(mix)
	if err != nil {
		return nil, nil, err
	}
	f := &fgd{inv: inv, mix: pm, memo: map[string]float64{}, growth: map[growthKey]choice{}}
	return f.cost, f.prefer, nil
}

// fgd is FGD's memos for the mix: F_n(M) by state key, and the choice by state key and placement.
type fgd struct {
	inv *Inventory
	mix *preparedMix

	mu     sync.Mutex
	memo   map[string]float64
	growth map[growthKey]choice
}

// growthKey names a placement on a node in a state: the state's key, and what the placement takes
// (placementKey).
type growthKey struct {
	state, placement string
}

// choice is the growth of F_n(M) of the best placement on a node (by score), and the node's device
// that gives it in place of the share the allocation took; -1 for the allocation as it is.
type choice struct {
	growth float64
	device int
}

// memoLimit bounds the memo: past it, it starts again empty.
const memoLimit = 1 << 17

func (f *fgd) cost(in pods.CostInput) (float64, error) {
	return -score(f.rate(in).growth), nil
}

// score is the paper's simulator's node score for a growth of g GPUs: 100·σ(−g) truncated to an
// integer of 0–100 (fgd_score.go divides its growth in thousandths of a GPU by 1000). Growths within
// about 0.04 GPUs of one another score alike.
func score(g float64) float64 {
	return math.Floor(100 / (1 + math.Exp(g)))
}

func (f *fgd) prefer(in pods.CostInput) ([]allocator.DeviceID, error) {
	c := f.rate(in)
	if c.device < 0 {
		return nil, nil
	}
	return []allocator.DeviceID{f.inv.devices[in.Node.Name][c.device].id}, nil
}

// rate is the growth of F_n(M) the placement causes on its node, the best by score over the devices
// it may take its share of.
func (f *fgd) rate(in pods.CostInput) choice {
	name := in.Node.Name
	if len(f.inv.devices[name]) == 0 {
		return choice{device: -1}
	}
	ni := f.inv.info[name]
	before := f.inv.current(in.Snapshot, name, in.Node, in.Requested)
	// Nodes of one kind in one state given the same placement grow alike: most nodes of a fleet are
	// rated from this memo without a state built for the placement.
	var gk growthKey
	if before.key != "" {
		if p, ok := placementKey(ni, in); ok {
			gk = growthKey{before.key, p}
			f.mu.Lock()
			c, ok := f.growth[gk]
			f.mu.Unlock()
			if ok {
				return c
			}
		}
	}
	extra := resultUses(in.Results)
	c := choice{growth: f.grows(in, before, extra), device: -1}
	if i, u, ok := shareOf(ni, before, extra); ok {
		// The first device of the best score, in the node's order, as the simulator takes the first
		// GPU of the best score (fgd_score.go); the allocation's own device where that is it.
		best, at := c, i
		for j := range before.devs {
			if j == i || ni.alike[j] != ni.alike[i] || !holds(&before.devs[j], u) {
				continue
			}
			moved := map[allocator.DeviceID]*use{before.devs[j].dev.id: u}
			g := f.grows(in, before, moved)
			if s, bs := score(g), score(best.growth); s > bs || s == bs && j < at {
				best, at = choice{growth: g, device: j}, j
			}
		}
		c = best
	}
	if gk.state != "" {
		f.mu.Lock()
		if len(f.growth) >= memoLimit {
			clear(f.growth)
		}
		f.growth[gk] = c
		f.mu.Unlock()
	}
	return c
}

// grows is the growth of F_n(M) from the state before to before with extra taken and the pod's CPU and
// memory, rounded to 1e-9.
func (f *fgd) grows(in pods.CostInput, before *nodeState, extra map[allocator.DeviceID]*use) float64 {
	after := f.inv.after(in.Snapshot, in.Node.Name, before, extra, in.PodRequests)
	d := f.measure(in.Node.Name, after) - f.measure(in.Node.Name, before)
	return math.Round(d*1e9) / 1e9
}

// shareOf is the device of the node that the placement takes a share of, when that is all it takes of
// the node's devices and the node has no counter sets (whose state is not patched), and the share.
func shareOf(ni *nodeInfo, st *nodeState, extra map[allocator.DeviceID]*use) (int, *use, bool) {
	if ni.counters || len(extra) != 1 {
		return 0, nil, false
	}
	for id, u := range extra {
		i, ok := ni.index[id]
		if !ok || u.whole || !st.devs[i].dev.shared {
			return 0, nil, false
		}
		return i, u, true
	}
	return 0, nil, false
}

// holds reports whether the shared device can take the share u now: it is not held whole, and has at
// least what u consumes left of each capacity.
func holds(ds *devState, u *use) bool {
	if !ds.dev.shared || ds.whole {
		return false
	}
	for k, q := range u.consumed {
		l, ok := ds.left[k]
		if !ok || l.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// placementKey names what a placement takes of a node without counter sets: each result's device by
// its index on the node, whole or a share, and the capacity it consumes; then the pod's CPU and memory.
// False when it cannot be named exactly (a node with counter sets, a device of another node, an amount
// that is not an integer).
func placementKey(ni *nodeInfo, in pods.CostInput) (string, bool) {
	if ni.counters {
		return "", false
	}
	b := make([]byte, 0, 32)
	for _, r := range in.Results {
		for _, d := range r.Devices.Results {
			if d.AdminAccess != nil && *d.AdminAccess {
				continue
			}
			i, ok := ni.index[allocator.DeviceID{Driver: d.Driver, Pool: d.Pool, Device: d.Device}]
			if !ok {
				return "", false
			}
			b = strconv.AppendInt(b, int64(i), 36)
			b = append(b, flag(d.ShareID == nil))
			names := make([]string, 0, len(d.ConsumedCapacity))
			for k := range d.ConsumedCapacity {
				names = append(names, string(k))
			}
			slices.Sort(names)
			for _, k := range names {
				q := d.ConsumedCapacity[resourceapi.QualifiedName(k)]
				v, ok := q.AsInt64()
				if !ok {
					return "", false
				}
				b = append(b, k...)
				b = append(b, '=')
				b = strconv.AppendInt(b, v, 36)
			}
			b = append(b, ';')
		}
	}
	b = append(b, '#')
	b = strconv.AppendInt(b, in.PodRequests[v1.ResourceCPU], 36)
	b = append(b, ',')
	b = strconv.AppendInt(b, in.PodRequests[v1.ResourceMemory], 36)
	return string(b), true
}

// measure is F_n(M) of the state, from the memo when its key was measured before.
func (f *fgd) measure(name string, st *nodeState) float64 {
	if st.key == "" {
		return f.mix.measure(name, st).F
	}
	f.mu.Lock()
	v, ok := f.memo[st.key]
	f.mu.Unlock()
	if ok {
		return v
	}
	v = f.mix.measure(name, st).F
	f.mu.Lock()
	if len(f.memo) >= memoLimit {
		clear(f.memo)
	}
	f.memo[st.key] = v
	f.mu.Unlock()
	return v
}
