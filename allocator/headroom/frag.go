package headroom

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
// slices. A partition device can serve a request for whole devices when it is not allocated, its
// attributes match the request's, and the counters it consumes are still free in its set; the GPU is
// usable by m when one of its partitions can serve m. Two partitions that each fit a set may not fit it
// together, so for partitions "fits" is an upper bound.
//
// Device capacity that no shape of the mix can use on its node is stranded. The measure looks at the
// devices of the ResourceSlices given to [NewInventory] only (the accelerators: its unit is one GPU);
// CPU, memory, CEL selectors and constraints are not part of it; a Request's Attributes stand for the
// selectors that tell device kinds apart. The paper measures GPU capacity too, but counts all of a node's
// free GPUs as fragments for a task whose CPU or memory the node cannot hold; this measure does not yet,
// which is one reason its FGD fares worse on the whole trace (BenchmarkReplayAlibabaTrace).

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
}

// ShapeOf reads a shape from a pod: the requests of the claims it would get ([pods.Cluster.PodClaims]),
// each ExactCount request as Count whole devices or, with capacity requests, one share of the first
// capacity requested by name. CEL selectors are not read: set Request.Attributes to tell device kinds
// (MIG profiles) apart.
func ShapeOf(c *pods.Cluster, pod *v1.Pod, weight float64) (Shape, error) {
	if c == nil || pod == nil {
		return Shape{}, errors.New("headroom: nil Cluster or Pod")
	}
	claims, err := c.PodClaims(pod)
	if err != nil {
		return Shape{}, err
	}
	s := Shape{Name: pod.Namespace + "/" + pod.Name, Weight: weight}
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
// free state is read from a snapshot's claims when measured.
type Inventory struct {
	nodes   []string
	devices map[string][]device // by node
	sets    map[setKey]resourceapi.CounterSet

	mu    sync.Mutex
	cache *allocator.Snapshot // the snapshot and revision usage was read at
	rev   allocator.Revision
	usage map[allocator.DeviceID]*use
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
	attrs    map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	consumes []resourceapi.DeviceCounterConsumption
}

// use is what allocated claims hold of a device.
type use struct {
	held     bool
	consumed map[resourceapi.QualifiedName]resource.Quantity
}

// NewInventory indexes the node-local devices of the slices by node, and the counter sets of their
// pools. A slice with devices but without spec.nodeName, or a device consuming a counter set no slice
// publishes, is an error naming it.
func NewInventory(rs []*resourceapi.ResourceSlice) (*Inventory, error) {
	inv := &Inventory{devices: map[string][]device{}, sets: map[setKey]resourceapi.CounterSet{}}
	for _, s := range rs {
		if s == nil {
			return nil, errors.New("headroom: nil ResourceSlice")
		}
		for _, cs := range s.Spec.SharedCounters {
			inv.sets[setKey{s.Spec.Driver, s.Spec.Pool.Name, cs.Name}] = cs
		}
	}
	for _, s := range rs {
		if len(s.Spec.Devices) == 0 {
			continue
		}
		if s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
			return nil, fmt.Errorf("ResourceSlice %s: spec.nodeName: required for the fragmentation measure", s.Name)
		}
		n := *s.Spec.NodeName
		for i, d := range s.Spec.Devices {
			for j, cc := range d.ConsumesCounters {
				if _, ok := inv.sets[setKey{s.Spec.Driver, s.Spec.Pool.Name, cc.CounterSet}]; !ok {
					return nil, fmt.Errorf("ResourceSlice %s: spec.devices[%d].consumesCounters[%d].counterSet: %q is not published in pool %s", s.Name, i, j, cc.CounterSet, s.Spec.Pool.Name)
				}
			}
			dev := device{id: allocator.DeviceID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name}, attrs: d.Attributes, consumes: d.ConsumesCounters}
			if d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations && len(d.Capacity) > 0 {
				dev.shared = true
				dev.cap = map[resourceapi.QualifiedName]resource.Quantity{}
				for k, c := range d.Capacity {
					dev.cap[k] = c.Value
				}
				dev.unit = unitOf(d.Capacity)
			}
			if len(inv.devices[n]) == 0 {
				inv.nodes = append(inv.nodes, n)
			}
			inv.devices[n] = append(inv.devices[n], dev)
		}
	}
	slices.Sort(inv.nodes)
	return inv, nil
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

// Fragmentation measures F(M) and the stranded capacity of every node of the inventory on the
// snapshot's allocated claims. The weights must be at least 0 and sum to 1 (within 1e-9).
func (inv *Inventory) Fragmentation(snap *allocator.Snapshot, mix []Shape) (*Report, error) {
	if err := checkMix(mix); err != nil {
		return nil, err
	}
	usage := inv.usageOf(snap)
	rep := &Report{}
	for _, n := range inv.nodes {
		st := inv.state(n, usage, nil)
		nf := measure(n, st, mix)
		rep.F += nf.F
		rep.Free += nf.Free
		rep.Stranded += nf.StrandedFree
		rep.Nodes = append(rep.Nodes, nf)
	}
	return rep, nil
}

func checkMix(mix []Shape) error {
	if len(mix) == 0 {
		return errors.New("headroom: mix: must have at least one shape")
	}
	sum := 0.0
	for i, m := range mix {
		if m.Weight < 0 || math.IsNaN(m.Weight) {
			return fmt.Errorf("headroom: mix[%d] %s: weight: must be at least 0, got %v", i, m.Name, m.Weight)
		}
		for j, r := range m.Requests {
			if r.Capacity == "" && r.Count < 1 {
				return fmt.Errorf("headroom: mix[%d] %s: requests[%d].count: must be at least 1, got %d", i, m.Name, j, r.Count)
			}
			if r.Capacity != "" && r.Amount.Sign() <= 0 {
				return fmt.Errorf("headroom: mix[%d] %s: requests[%d].amount: must be positive", i, m.Name, j)
			}
		}
		sum += m.Weight
	}
	if math.Abs(sum-1) > 1e-9 {
		return fmt.Errorf("headroom: mix: weights must sum to 1, got %v", sum)
	}
	return nil
}

// usageOf reads what the snapshot's allocated claims hold of each device, once per revision.
func (inv *Inventory) usageOf(snap *allocator.Snapshot) map[allocator.DeviceID]*use {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.cache == snap && inv.usage != nil && inv.rev == snap.Revision() {
		return inv.usage
	}
	rev := snap.Revision()
	u := map[allocator.DeviceID]*use{}
	for _, c := range snap.Claims("") {
		if c.Status.Allocation == nil {
			continue
		}
		addResults(u, c.Status.Allocation.Devices.Results)
	}
	inv.cache, inv.rev, inv.usage = snap, rev, u
	return u
}

func addResults(u map[allocator.DeviceID]*use, results []resourceapi.DeviceRequestAllocationResult) {
	for _, r := range results {
		id := allocator.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		e := u[id]
		if e == nil {
			e = &use{}
			u[id] = e
		}
		e.held = true
		for k, q := range r.ConsumedCapacity {
			if e.consumed == nil {
				e.consumed = map[resourceapi.QualifiedName]resource.Quantity{}
			}
			sum := e.consumed[k]
			sum.Add(q)
			e.consumed[k] = sum
		}
	}
}

// nodeState is the free state of a node's devices and of the units the measure counts: a device
// without counters is its own unit, a counter set (a GPU in dynamic-MIG mode) is one.
type nodeState struct {
	devs  []devState
	units []float64 // free(unit) in GPUs
}

// devState is one device's free state.
type devState struct {
	dev  *device
	unit int
	left map[resourceapi.QualifiedName]resource.Quantity // shared devices: capacity not consumed
	held bool
	fits bool // counter devices: its counters are free in its sets
}

// state is the free state of the node's devices, with extra results (a placement considered) added.
func (inv *Inventory) state(node string, usage map[allocator.DeviceID]*use, extra map[allocator.DeviceID]*use) *nodeState {
	devs := inv.devices[node]
	st := &nodeState{devs: make([]devState, len(devs))}
	setUnit := map[setKey]int{}
	setLeft := map[setKey]map[string]resource.Quantity{}
	for i := range devs {
		d := &devs[i]
		ds := &st.devs[i]
		ds.dev = d
		us := []*use{usage[d.id], extra[d.id]}
		for _, u := range us {
			if u != nil && u.held {
				ds.held = true
			}
		}
		if len(d.consumes) > 0 {
			ds.unit = -1
			for _, cc := range d.consumes {
				k := setKey{d.id.Driver, d.id.Pool, cc.CounterSet}
				if _, ok := setUnit[k]; !ok {
					setUnit[k] = len(st.units)
					st.units = append(st.units, 0)
					left := map[string]resource.Quantity{}
					for name, c := range inv.sets[k].Counters {
						left[name] = c.Value.DeepCopy()
					}
					setLeft[k] = left
				}
				if ds.unit < 0 {
					ds.unit = setUnit[k] // a device drawing on two sets counts towards the first
				}
			}
			continue
		}
		ds.unit = len(st.units)
		if !d.shared {
			st.units = append(st.units, 0)
			if !ds.held {
				st.units[ds.unit] = 1
			}
			continue
		}
		ds.left = map[resourceapi.QualifiedName]resource.Quantity{}
		for k, c := range d.cap {
			l := c.DeepCopy()
			for _, u := range us {
				if u != nil {
					if q, ok := u.consumed[k]; ok {
						l.Sub(q)
					}
				}
			}
			ds.left[k] = l
		}
		free := 0.0
		c, l := d.cap[d.unit], ds.left[d.unit]
		if c.Sign() > 0 && l.Sign() > 0 {
			free = l.AsApproximateFloat64() / c.AsApproximateFloat64()
		}
		st.units = append(st.units, free)
	}
	if len(setUnit) == 0 {
		return st
	}
	// Held partitions consume their counters once, however many claims share them.
	for i := range st.devs {
		ds := &st.devs[i]
		if !ds.held {
			continue
		}
		for _, cc := range ds.dev.consumes {
			left := setLeft[setKey{ds.dev.id.Driver, ds.dev.id.Pool, cc.CounterSet}]
			for name, c := range cc.Counters {
				l := left[name]
				l.Sub(c.Value)
				left[name] = l
			}
		}
	}
	for k, u := range setUnit {
		st.units[u] = setFree(inv.sets[k], setLeft[k])
	}
	for i := range st.devs {
		ds := &st.devs[i]
		if len(ds.dev.consumes) == 0 || ds.held {
			continue
		}
		ds.fits = true
		for _, cc := range ds.dev.consumes {
			left := setLeft[setKey{ds.dev.id.Driver, ds.dev.id.Pool, cc.CounterSet}]
			for name, c := range cc.Counters {
				if l := left[name]; l.Cmp(c.Value) < 0 {
					ds.fits = false
				}
			}
		}
	}
	return st
}

// setFree is the free share of a counter set's memory slices (counters memory-slice-<i>), or of its
// counter "memory" when it has no slices.
func setFree(set resourceapi.CounterSet, left map[string]resource.Quantity) float64 {
	var total, free float64
	for name, c := range set.Counters {
		if strings.HasPrefix(name, "memory-slice-") {
			total += c.Value.AsApproximateFloat64()
			l := left[name]
			free += max(0, l.AsApproximateFloat64())
		}
	}
	if total == 0 {
		if c, ok := set.Counters["memory"]; ok && c.Value.Sign() > 0 {
			l := left["memory"]
			return max(0, l.AsApproximateFloat64()) / c.Value.AsApproximateFloat64()
		}
		return 0
	}
	return free / total
}

// serves reports whether the device could serve the request now.
func (s *devState) serves(st *nodeState, r Request) bool {
	for k, want := range r.Attributes {
		a, ok := s.dev.attrs[k]
		if !ok || a.StringValue == nil || !slices.Contains(want, *a.StringValue) {
			return false
		}
	}
	if len(s.dev.consumes) > 0 {
		return r.Capacity == "" && s.fits
	}
	if r.Capacity == "" {
		return !s.held && st.units[s.unit] > 0
	}
	if !s.dev.shared {
		// A share request on a device without allowMultipleAllocations takes all of it.
		return !s.held
	}
	l, ok := s.left[r.Capacity]
	return ok && l.Cmp(r.Amount) >= 0
}

// fits reports whether the shape fits on the node, each request on devices of its own, and marks in
// usable the units one of its requests could use.
func fits(st *nodeState, m Shape, usable []bool) bool {
	taken := make([]bool, len(st.devs))
	ok := true
	for _, r := range m.Requests {
		need := r.Count
		if r.Capacity != "" {
			need = 1
		}
		for i := range st.devs {
			if st.devs[i].serves(st, r) {
				usable[st.devs[i].unit] = true
				if need > 0 && !taken[i] {
					taken[i] = true
					need--
				}
			}
		}
		if need > 0 {
			ok = false
		}
	}
	return ok
}

func measure(node string, st *nodeState, mix []Shape) NodeFragmentation {
	nf := NodeFragmentation{Node: node}
	for _, f := range st.units {
		nf.Free += f
	}
	anyUse := make([]bool, len(st.units))
	usable := make([]bool, len(st.units))
	for _, m := range mix {
		clear(usable)
		if !fits(st, m, usable) {
			nf.F += m.Weight * nf.Free
			continue
		}
		fm := 0.0
		for u, f := range st.units {
			if usable[u] {
				anyUse[u] = true
			} else {
				fm += f
			}
		}
		nf.F += m.Weight * fm
	}
	for u, f := range st.units {
		if f > 0 && !anyUse[u] {
			nf.StrandedDevices++
			nf.StrandedFree += f
		}
	}
	return nf
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
