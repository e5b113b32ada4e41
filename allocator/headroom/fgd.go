package headroom

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// FGD is the node choice of Fragmentation Gradient Descent (Weng et al., ATC '23) as a [pods.Cost]:
// placing a pod on node n with an allocation costs the growth of F_n(M) it causes, F_n(M) after minus
// before (see frag.go), so [pods.Cluster.Place] with Options.Cost set to it takes, among the nodes where
// the pod fits (the same nodes as FirstFit), the one whose fragmentation grows least, the first by name
// on ties. The devices are allocated on each node with [allocator.BestFit] (a share goes to the device
// whose capacity is most used). Nodes without devices in the inventory cost 0. The mix is checked as
// [Inventory.Fragmentation] checks it.
func (inv *Inventory) FGD(mix []Shape) (pods.Cost, error) {
	if err := checkMix(mix); err != nil {
		return nil, err
	}
	mix = append([]Shape(nil), mix...)
	return func(snap *allocator.Snapshot, node *v1.Node, results []resourceapi.AllocationResult) (float64, error) {
		if len(inv.devices[node.Name]) == 0 {
			return 0, nil
		}
		usage := inv.usageOf(snap)
		before := measure(node.Name, inv.state(node.Name, usage, nil), mix)
		extra := map[allocator.DeviceID]*use{}
		for _, r := range results {
			addResults(extra, r.Devices.Results)
		}
		after := measure(node.Name, inv.state(node.Name, usage, extra), mix)
		return after.F - before.F, nil
	}, nil
}
