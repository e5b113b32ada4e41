package scaling

import (
	"cmp"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
)

// Usage is what is in use, per pool and per node.
type Usage struct {
	// Pools are sorted by driver and pool name.
	Pools []PoolUse
	// Nodes are the pools' figures summed per node, sorted by name; pools not local to one node are
	// under the empty name.
	Nodes []NodeUse
}

// PoolUse is the use of one pool's newest generation.
type PoolUse struct {
	Driver, Pool string
	// Node is spec.nodeName of the pool's slices; empty for pools not local to one node.
	Node string
	// Devices is the number of devices the pool publishes; Allocated those at least one allocation
	// result names (admin access excepted: it takes the device from no one); Shares the results with
	// a share ID (consumable capacity), which may name one device many times.
	Devices, Allocated, Shares int
	// Counters are the pool's shared counters with what its allocated devices consume, sorted by
	// counter set and name: the multiprocessors and memory of a partitionable GPU that its MIG
	// placements in use take. A device counts once however many shares it has.
	Counters []CounterUse
}

// CounterUse is one shared counter.
type CounterUse struct {
	CounterSet, Counter string
	Total, Used         resource.Quantity
}

// NodeUse is the device use of one node.
type NodeUse struct {
	Node                       string
	Devices, Allocated, Shares int
}

// Fraction is Allocated/Devices, zero for a node without devices.
func (n NodeUse) Fraction() float64 {
	if n.Devices == 0 {
		return 0
	}
	return float64(n.Allocated) / float64(n.Devices)
}

// Utilisation computes what the claims' allocations use of the slices' devices, counting only each
// pool's newest generation, as the scheduler does. Allocation results naming devices no slice
// publishes are ignored. Inputs are not modified.
func Utilisation(sl []*resourceapi.ResourceSlice, claims []*resourceapi.ResourceClaim) Usage {
	type key struct{ driver, pool string }
	newest := map[key]int64{}
	for _, s := range sl {
		k := key{s.Spec.Driver, s.Spec.Pool.Name}
		if g, ok := newest[k]; !ok || s.Spec.Pool.Generation > g {
			newest[k] = s.Spec.Pool.Generation
		}
	}
	allocated := map[allocator.DeviceID]bool{}
	shares := map[allocator.DeviceID]int{}
	for _, c := range claims {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			id := allocator.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			allocated[id] = true
			if r.ShareID != nil {
				shares[id]++
			}
		}
	}
	pools := map[key]*PoolUse{}
	counters := map[key]map[[2]string]*CounterUse{}
	for _, s := range sl {
		k := key{s.Spec.Driver, s.Spec.Pool.Name}
		if s.Spec.Pool.Generation != newest[k] {
			continue
		}
		pu := pools[k]
		if pu == nil {
			pu = &PoolUse{Driver: k.driver, Pool: k.pool}
			if s.Spec.NodeName != nil {
				pu.Node = *s.Spec.NodeName
			}
			pools[k] = pu
			counters[k] = map[[2]string]*CounterUse{}
		}
		for _, set := range s.Spec.SharedCounters {
			for name, c := range set.Counters {
				counters[k][[2]string{set.Name, name}] = &CounterUse{CounterSet: set.Name, Counter: name, Total: c.Value.DeepCopy()}
			}
		}
	}
	for _, s := range sl {
		k := key{s.Spec.Driver, s.Spec.Pool.Name}
		if s.Spec.Pool.Generation != newest[k] {
			continue
		}
		pu := pools[k]
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			id := allocator.DeviceID{Driver: k.driver, Pool: k.pool, Device: d.Name}
			pu.Devices++
			if !allocated[id] {
				continue
			}
			pu.Allocated++
			pu.Shares += shares[id]
			for _, cc := range d.ConsumesCounters {
				for name, q := range cc.Counters {
					cu := counters[k][[2]string{cc.CounterSet, name}]
					if cu == nil { // a counter no slice of the pool defines: the pool is invalid
						continue
					}
					cu.Used.Add(q.Value)
				}
			}
		}
	}
	var u Usage
	byNode := map[string]*NodeUse{}
	for k, pu := range pools {
		for _, cu := range counters[k] {
			pu.Counters = append(pu.Counters, *cu)
		}
		slices.SortFunc(pu.Counters, func(x, y CounterUse) int {
			return cmp.Or(strings.Compare(x.CounterSet, y.CounterSet), strings.Compare(x.Counter, y.Counter))
		})
		u.Pools = append(u.Pools, *pu)
		n := byNode[pu.Node]
		if n == nil {
			n = &NodeUse{Node: pu.Node}
			byNode[pu.Node] = n
		}
		n.Devices += pu.Devices
		n.Allocated += pu.Allocated
		n.Shares += pu.Shares
	}
	slices.SortFunc(u.Pools, func(x, y PoolUse) int {
		return cmp.Or(strings.Compare(x.Driver, y.Driver), strings.Compare(x.Pool, y.Pool))
	})
	for _, n := range byNode {
		u.Nodes = append(u.Nodes, *n)
	}
	slices.SortFunc(u.Nodes, func(x, y NodeUse) int { return strings.Compare(x.Node, y.Node) })
	return u
}
