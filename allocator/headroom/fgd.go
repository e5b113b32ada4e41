package headroom

import (
	"math"
	"sync"

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
	f := &fgd{inv: inv, mix: pm, memo: map[string]float64{}}
	return f.cost, nil
}

// fgd is FGD's memo: F_n(M) by state key, for the mix.
type fgd struct {
	inv *Inventory
	mix *preparedMix

	mu   sync.Mutex
	memo map[string]float64
}

// memoLimit bounds the memo: past it, it starts again empty.
const memoLimit = 1 << 17

func (f *fgd) cost(in pods.CostInput) (float64, error) {
	name := in.Node.Name
	if len(f.inv.devices[name]) == 0 {
		return 0, nil
	}
	before := f.inv.current(in.Snapshot, name, in.Node, in.Requested)
	after := f.inv.after(in.Snapshot, name, before, in.Results, in.PodRequests)
	d := f.measure(name, after) - f.measure(name, before)
	return math.Round(d*1e9) / 1e9, nil
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
