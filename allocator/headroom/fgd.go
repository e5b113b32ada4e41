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

// FGD is the node choice of Fragmentation Gradient Descent (Weng et al., ATC '23) as a [pods.Cost]:
// placing a pod on node n costs the growth of F_n(M) it causes, F_n(M) after minus before (see
// frag.go), the pod's allocation results, CPU and memory taken, so [pods.Cluster.Place] with
// Options.Cost set to it takes, among the nodes where the pod fits (the same nodes as FirstFit), the
// one whose fragmentation grows least. The growth is rounded to 1e-9 GPUs, so that growths equal but
// for rounding tie; ties go to the first node by name. (The paper does not say; its simulator rounds
// each node's score to an integer of 0–100 and lets kube-scheduler pick one of the best at random.)
// The devices are allocated on each node with [allocator.BestFit] (a share goes to the device whose
// capacity is most used, as the paper's simulator does). Nodes without devices in the inventory cost 0.
// The mix is checked as [Inventory.Fragmentation] checks it.
//
// Each node's state and F_n(M) are kept and measured again only when the node changed (a claim on
// its devices allocated or freed, its pods' CPU or memory), and nodes of one kind in one state with
// one allocation share one measure, so that rating a node costs a few lookups where the mix has been
// measured on its state before.
func (inv *Inventory) FGD(mix []Shape) (pods.Cost, error) {
	pm, err := prepareMix(mix)
	if err != nil {
		return nil, err
	}
	f := &fgd{inv: inv, mix: pm, memo: map[string]float64{}, growth: map[growthKey]float64{}}
	return f.cost, nil
}

// fgd is FGD's memos for the mix: F_n(M) by state key, and the growth by state key and placement.
type fgd struct {
	inv *Inventory
	mix *preparedMix

	mu     sync.Mutex
	memo   map[string]float64
	growth map[growthKey]float64
}

// growthKey names a placement on a node in a state: the state's key, and what the placement takes
// (placementKey).
type growthKey struct {
	state, placement string
}

// memoLimit bounds the memo: past it, it starts again empty.
const memoLimit = 1 << 17

func (f *fgd) cost(in pods.CostInput) (float64, error) {
	name := in.Node.Name
	if len(f.inv.devices[name]) == 0 {
		return 0, nil
	}
	before := f.inv.current(in.Snapshot, name, in.Node, in.Requested)
	// Nodes of one kind in one state given the same placement grow alike: most nodes of a fleet are
	// rated from this memo without a state built for the placement.
	var gk growthKey
	if before.key != "" {
		if p, ok := placementKey(f.inv.info[name], in); ok {
			gk = growthKey{before.key, p}
			f.mu.Lock()
			d, ok := f.growth[gk]
			f.mu.Unlock()
			if ok {
				return d, nil
			}
		}
	}
	after := f.inv.after(in.Snapshot, name, before, in.Results, in.PodRequests)
	d := f.measure(name, after) - f.measure(name, before)
	d = math.Round(d*1e9) / 1e9
	if gk.state != "" {
		f.mu.Lock()
		if len(f.growth) >= memoLimit {
			clear(f.growth)
		}
		f.growth[gk] = d
		f.mu.Unlock()
	}
	return d, nil
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
