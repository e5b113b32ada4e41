package headroom

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// Fragmentation in the sense of FGD (Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing
// Workloads with Fragmentation Gradient Descent", USENIX ATC '23), for DRA devices.
//
// A workload mix M is a list of task shapes m with weights p_m summing to 1. The free GPU capacity of a
// device d, free(d), is in GPUs: a device without allowMultipleAllocations counts 1 while no claim holds
// it, else 0; a device with allowMultipleAllocations counts the free fraction of its capacity "shares"
// (of "memory" when it has no shares, else of its first capacity by name): (capacity − consumed) ÷
// capacity, the consumed amounts being the allocated claims' consumedCapacity.
//
// A shape m fits on node n when n's devices can serve each of its requests on distinct devices: a request
// for count whole devices needs that many devices with free(d) = 1, a request for an amount q of a
// capacity needs a device with allowMultipleAllocations and at least q of it free. The devices m can use
// are those that could serve one of its requests. Then
//
//	F_n(m) = Σ free(d) over the devices d of n, when m does not fit on n;
//	F_n(m) = Σ free(d) over the devices d of n that m cannot use, when it fits;
//	F_n(M) = Σ_m p_m · F_n(m);   F(M) = Σ_n F_n(M).
//
// Partitionable devices (MIG partitions in dynamic-MIG mode) draw on a counter set, one per physical
// GPU: such a GPU is one unit whose free(g) is the share of its memory slices (counters named
// memory-slice-<i>) not consumed by allocated devices, or of its counter "memory" when it has no
// slices, counting only the counters that a partition the allocator could give now draws on (not
// allocated, not tainted NoSchedule or NoExecute, all its counters free): a slice that only tainted
// partitions, or partitions that no longer fit, draw on is given to no claim. A partition device can serve a request for whole devices when it is not allocated, its
// attributes match the request's, and the counters it consumes are still free in its set; the GPU is
// usable by m when one of its partitions can serve m. Two partitions that each fit a set may not fit it
// together, so for partitions "fits" is an upper bound.
//
// A shape also asks for CPU and memory: a node whose allocatable, less what the pods on it request,
// leaves less than that cannot run it, and all its free capacity is a fragment for it, as in the paper
// (which counts all of a node's free GPUs as fragments for a task that the node lacks CPU for). A shape
// without requests (a CPU-only task) can use no device: all of the node's free capacity is a fragment
// for it.
//
// A device the allocator will not give to a claim without tolerations is not free (free(d) = 0) and
// serves no request: one of an older generation of its pool or of an incomplete pool ([NewInventory]
// leaves them out), and one with an effective NoSchedule or NoExecute taint, read from the snapshot
// ([allocator.Snapshot.TaintRules]) when measured. Device capacity that no shape of the mix able to
// run on its node can use is stranded. The measure looks at the devices of the ResourceSlices given to
// [NewInventory] only (the accelerators: its unit is
// one GPU); CEL selectors and constraints are not part of it; a Request's Attributes stand for the
// selectors that tell device kinds apart.

// Request is what a shape asks of one device class: Count whole devices, or, with Capacity set, one
// share of Amount of that capacity of a device with allowMultipleAllocations.
type Request struct {
	Count    int64
	Capacity resourceapi.QualifiedName
	Amount   resource.Quantity
	// Attributes, when set, are string attributes a device must have, each with one of the values given
	// (a MIG profile, GPU models a task accepts); nil matches every device.
	Attributes map[resourceapi.QualifiedName][]string
}

// Shape is one task shape of a workload mix and its weight.
type Shape struct {
	Name     string
	Weight   float64
	Requests []Request
	// CPU and Memory are what the task requests of its node besides devices (zero: nothing). A node
	// whose allocatable leaves less CPU or memory free cannot run the task, so all its free GPUs are
	// fragments for it.
	CPU, Memory resource.Quantity
}

// ShapeOf reads a shape from a pod: the requests of the claims it would get ([pods.Cluster.PodClaims]),
// each ExactCount request as Count whole devices or, with capacity requests, one share of the first
// capacity requested by name, and its CPU and memory requests as the scheduler sums them
// (resourcehelper.PodRequests: init containers, overhead and pod-level resources counted). CEL
// selectors are not read: set Request.Attributes to tell device kinds (MIG profiles) apart.
func ShapeOf(c *pods.Cluster, pod *v1.Pod, weight float64) (Shape, error) {
	if c == nil || pod == nil {
		return Shape{}, errors.New("headroom: nil Cluster or Pod")
	}
	claims, err := c.PodClaims(pod)
	if err != nil {
		return Shape{}, err
	}
	s := Shape{Name: pod.Namespace + "/" + pod.Name, Weight: weight}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	s.CPU, s.Memory = reqs[v1.ResourceCPU], reqs[v1.ResourceMemory]
	for _, pc := range claims {
		for i, r := range pc.Claim.Spec.Devices.Requests {
			e := r.Exactly
			if e == nil || e.AllocationMode != resourceapi.DeviceAllocationModeExactCount {
				return Shape{}, fmt.Errorf("pod %s: ResourceClaim %s: spec.devices.requests[%d]: only exactly with allocationMode ExactCount is a shape", s.Name, pc.Claim.Name, i)
			}
			req := Request{Count: e.Count}
			if e.Capacity != nil && len(e.Capacity.Requests) > 0 {
				names := make([]string, 0, len(e.Capacity.Requests))
				for k := range e.Capacity.Requests {
					names = append(names, string(k))
				}
				slices.Sort(names)
				req.Capacity = resourceapi.QualifiedName(names[0])
				req.Amount = e.Capacity.Requests[req.Capacity]
			}
			s.Requests = append(s.Requests, req)
		}
	}
	return s, nil
}

// Inventory is the devices of each node that the measure counts, read once from ResourceSlices; the
// free state is read from a snapshot when measured, and kept per node while the snapshot's stamp of
// the node's pools ([allocator.Snapshot.PoolUse]) and the node's free CPU and memory stay.
type Inventory struct {
	nodes   []string
	devices map[string][]device // by node
	info    map[string]*nodeInfo
	sets    map[setKey]resourceapi.CounterSet

	mu     sync.Mutex
	states map[string]*nodeState // by node: the state last read
}

// nodeInfo is what the measure prepares once per node: the pools its devices are in, the index of each
// device, and its kind (nodes whose devices are alike, in order, share one) for the memo keys.
type nodeInfo struct {
	pools    []allocator.PoolID
	index    map[allocator.DeviceID]int
	kind     int
	counters bool // some device consumes counters: its state is read whole, not patched (after)
	// alike numbers the node's devices by their deviceSignature: devices with one number are alike
	// (FGD tries a share on each device alike to the one the allocation took).
	alike []int
}

// setKey names a counter set: its driver, pool and name.
type setKey struct {
	driver, pool, name string
}

type device struct {
	id       allocator.DeviceID
	shared   bool
	unit     resourceapi.QualifiedName // the capacity free(d) is measured in, for shared devices
	cap      map[resourceapi.QualifiedName]resource.Quantity
	capNames []resourceapi.QualifiedName // the keys of cap, sorted
	attrs    map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	consumes []resourceapi.DeviceCounterConsumption
	api      *resourceapi.Device // the published device, for its taints
}

// NewInventory indexes the node-local devices of the slices by node, and the counter sets of their
// pools, as the allocator sees the pools: only the slices of a pool's newest generation count (a driver
// republishing its pool leaves the older generation's slices until it deletes them), and a pool whose
// newest generation does not have spec.pool.resourceSliceCount slices yet is incomplete and left out,
// as the allocator uses none of its devices. A slice with devices but without spec.nodeName, or a
// device consuming a counter set no slice publishes, is an error naming it.
func NewInventory(rs []*resourceapi.ResourceSlice) (*Inventory, error) {
	inv := &Inventory{devices: map[string][]device{}, info: map[string]*nodeInfo{}, sets: map[setKey]resourceapi.CounterSet{}, states: map[string]*nodeState{}}
	for _, s := range rs {
		if s == nil {
			return nil, errors.New("headroom: nil ResourceSlice")
		}
	}
	// The allocator's rule ([allocator.PoolStatuses]): a slice counts when it is of its pool's newest
	// generation and that generation is complete, read with the gates Kubernetes enables by default
	// (the inventory knows no snapshot yet; the gates change only how slices using alpha fields count).
	pools := allocator.PoolStatuses(allocator.DefaultFeatures(), rs)
	counted := func(s *resourceapi.ResourceSlice) bool {
		return pools[allocator.PoolID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name}].Reads(s)
	}
	for _, s := range rs {
		if !counted(s) {
			continue
		}
		for _, cs := range s.Spec.SharedCounters {
			inv.sets[setKey{s.Spec.Driver, s.Spec.Pool.Name, cs.Name}] = cs
		}
	}
	for _, s := range rs {
		if len(s.Spec.Devices) == 0 || !counted(s) {
			continue
		}
		if s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
			return nil, fmt.Errorf("ResourceSlice %s: spec.nodeName: required for the fragmentation measure", s.Name)
		}
		n := *s.Spec.NodeName
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			for j, cc := range d.ConsumesCounters {
				if _, ok := inv.sets[setKey{s.Spec.Driver, s.Spec.Pool.Name, cc.CounterSet}]; !ok {
					return nil, fmt.Errorf("ResourceSlice %s: spec.devices[%d].consumesCounters[%d].counterSet: %q is not published in pool %s", s.Name, i, j, cc.CounterSet, s.Spec.Pool.Name)
				}
			}
			dev := device{id: allocator.DeviceID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name}, attrs: d.Attributes, consumes: d.ConsumesCounters, api: d}
			if d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations && len(d.Capacity) > 0 {
				dev.shared = true
				dev.cap = map[resourceapi.QualifiedName]resource.Quantity{}
				for k, c := range d.Capacity {
					dev.cap[k] = c.Value
					dev.capNames = append(dev.capNames, k)
				}
				slices.Sort(dev.capNames)
				dev.unit = unitOf(d.Capacity)
			}
			if len(inv.devices[n]) == 0 {
				inv.nodes = append(inv.nodes, n)
			}
			inv.devices[n] = append(inv.devices[n], dev)
		}
	}
	slices.Sort(inv.nodes)
	kinds := map[string]int{}
	for _, n := range inv.nodes {
		inv.info[n] = prepareNode(inv.devices[n], kinds)
	}
	return inv, nil
}

// prepareNode indexes a node's devices and names its kind: nodes whose devices have the same
// capacities and attributes, in order, are of one kind.
func prepareNode(devs []device, kinds map[string]int) *nodeInfo {
	ni := &nodeInfo{index: map[allocator.DeviceID]int{}, alike: make([]int, len(devs))}
	var sig strings.Builder
	sigs := map[string]int{}
	for i, d := range devs {
		ni.index[d.id] = i
		ds := deviceSignature(d)
		a, ok := sigs[ds]
		if !ok {
			a = len(sigs)
			sigs[ds] = a
		}
		ni.alike[i] = a
		p := allocator.PoolID{Driver: d.id.Driver, Pool: d.id.Pool}
		if !slices.Contains(ni.pools, p) {
			ni.pools = append(ni.pools, p)
		}
		if len(d.consumes) > 0 {
			ni.counters = true
		}
		sig.WriteString(ds)
		sig.WriteByte(';')
	}
	k, ok := kinds[sig.String()]
	if !ok {
		k = len(kinds)
		kinds[sig.String()] = k
	}
	ni.kind = k
	return ni
}

// deviceSignature is what the measure reads of a device besides its free state: the driver (the
// attributes of another driver are other attributes), its capacities and string attributes.
func deviceSignature(d device) string {
	var b strings.Builder
	b.WriteString(d.id.Driver)
	if d.shared {
		b.WriteString(" shared " + string(d.unit))
		for _, k := range d.capNames {
			q := d.cap[k]
			b.WriteString(" " + string(k) + "=" + q.String())
		}
	}
	names := make([]string, 0, len(d.attrs))
	for k, a := range d.attrs {
		if a.StringValue != nil {
			names = append(names, string(k)+"="+strconv.Quote(*a.StringValue))
		}
	}
	slices.Sort(names)
	b.WriteString(" " + strings.Join(names, ","))
	return b.String()
}

func unitOf(c map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) resourceapi.QualifiedName {
	for _, want := range []resourceapi.QualifiedName{"shares", "memory"} {
		if _, ok := c[want]; ok {
			return want
		}
	}
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, string(k))
	}
	slices.Sort(names)
	return resourceapi.QualifiedName(names[0])
}

// NodeFragmentation is the measure on one node.
type NodeFragmentation struct {
	Node string
	// Free is Σ free(d) over the node's devices, in GPUs.
	Free float64
	// F is F_n(M).
	F float64
	// StrandedDevices is how many units (devices, or GPUs of partitions) with free capacity no shape
	// can use; StrandedFree their free capacity in GPUs.
	StrandedDevices int
	StrandedFree    float64
}

// Report is the measure on every node of the inventory.
type Report struct {
	// F is F(M), Free the cluster's free capacity, Stranded the stranded part of it (GPUs).
	F, Free, Stranded float64
	// Nodes are by name.
	Nodes []NodeFragmentation
}

// String is one line per node with free capacity, then the totals.
func (r *Report) String() string {
	var b strings.Builder
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, "%s: free %.3g F %.3g stranded %d (%.3g)\n", n.Node, n.Free, n.F, n.StrandedDevices, n.StrandedFree)
	}
	fmt.Fprintf(&b, "total: free %.3g F %.3g stranded %.3g", r.Free, r.F, r.Stranded)
	return b.String()
}
