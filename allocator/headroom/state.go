package headroom

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/taints"
)

// nodeState is the free state of a node: of its devices, of the units the measure counts (a device
// without counters is its own unit, a counter set, a GPU in dynamic-MIG mode, is one), and its free CPU
// and memory. A state is never changed once built, so that the Inventory's cache and the memos may hand
// it out.
type nodeState struct {
	devs  []devState
	units []float64 // free(unit) in GPUs
	// stamps are the snapshot's PoolUse stamps of the node's pools the devices were read at, and
	// blocking the taints they were read with.
	stamps   []uint64
	blocking blocking
	// limited: the node's allocatable is known, cpu (millicores) and mem (bytes) are what is free of it.
	limited  bool
	cpu, mem int64
	// key names the state for the memos: nodes of one kind with one key measure alike. "" when the
	// state cannot be named exactly (a consumed amount that is not an integer).
	key string
}

// devState is one device's free state.
type devState struct {
	dev   *device
	unit  int
	left  map[resourceapi.QualifiedName]resource.Quantity // shared devices: capacity not consumed
	held  bool                                            // a claim holds it, whole or a share
	whole bool                                            // a claim holds all of it
	fits  bool                                            // counter devices: its counters are free in its sets
	// blocked: a NoSchedule or NoExecute taint keeps claims off it; it is not free (frag.go).
	blocked bool
}

// blocking is how the snapshot's device taints keep claims off devices: the DeviceTaintRules in force
// ([allocator.Snapshot.TaintRules]) and whether the DRADeviceTaints gate is on (off, the allocator
// ignores taints).
type blocking struct {
	rules *taints.Evaluator
	on    bool
}

func blockingOf(snap *allocator.Snapshot) blocking {
	return blocking{rules: snap.TaintRules(), on: snap.Features().DRADeviceTaints}
}

// blocks reports whether an effective taint of the device (its own, then the rules') with effect
// NoSchedule or NoExecute keeps a claim without tolerations off it, as the allocator's taint filter
// decides (taints.Blocking; the mix's shapes carry no tolerations).
func (b blocking) blocks(d *device) bool {
	if !b.on {
		return false
	}
	_, blocked := taints.Blocking(b.rules.Taints(d.id.Driver, d.id.Pool, d.api), nil)
	return blocked
}

// use is what allocated claims hold of a device.
type use struct {
	held, whole bool
	consumed    map[resourceapi.QualifiedName]resource.Quantity
}

// snapshotUse reads what the snapshot's claims hold of the device.
func snapshotUse(snap *allocator.Snapshot, id allocator.DeviceID) *use {
	u := snap.DeviceUse(id)
	if !u.Held() {
		return nil
	}
	return &use{held: true, whole: u.Exclusive > 0, consumed: u.Consumed}
}

// addResults adds allocation results to a map of uses, as the allocator counts them (a result with a
// shareID takes a share, any other the whole device; adminAccess takes nothing).
func addResults(u map[allocator.DeviceID]*use, results []resourceapi.DeviceRequestAllocationResult) {
	for _, r := range results {
		if r.AdminAccess != nil && *r.AdminAccess {
			continue
		}
		id := allocator.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		e := u[id]
		if e == nil {
			e = &use{}
			u[id] = e
		}
		e.held = true
		if r.ShareID == nil {
			e.whole = true
		}
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

// current is the node's state on the snapshot with the pods on it requesting requested (node nil: its
// allocatable is not known, CPU and memory do not limit it). The state last read is kept and handed
// out again while the node's pool stamps and free CPU and memory stay.
func (inv *Inventory) current(snap *allocator.Snapshot, name string, node *v1.Node, requested map[v1.ResourceName]int64) *nodeState {
	ni := inv.info[name]
	limited, cpu, mem := freeOf(node, requested, nil)
	blk := blockingOf(snap)
	inv.mu.Lock()
	prev := inv.states[name]
	inv.mu.Unlock()
	if prev != nil && prev.blocking == blk && stampsHold(snap, ni, prev.stamps) {
		if prev.limited == limited && prev.cpu == cpu && prev.mem == mem {
			return prev
		}
		st := *prev
		st.limited, st.cpu, st.mem = limited, cpu, mem
		st.key = keyOf(ni, &st)
		inv.keep(name, &st)
		return &st
	}
	for {
		stamps := make([]uint64, len(ni.pools))
		for i, p := range ni.pools {
			stamps[i] = snap.PoolUse(p)
		}
		st := inv.read(name, func(id allocator.DeviceID) *use { return snapshotUse(snap, id) }, nil, blk)
		st.stamps = stamps
		st.limited, st.cpu, st.mem = limited, cpu, mem
		st.key = keyOf(ni, st)
		// A claim allocated or freed while the devices were read: read them again, so that the state
		// kept is the one its stamps name.
		if stampsHold(snap, ni, stamps) {
			inv.keep(name, st)
			return st
		}
	}
}

func (inv *Inventory) keep(name string, st *nodeState) {
	inv.mu.Lock()
	inv.states[name] = st
	inv.mu.Unlock()
}

func stampsHold(snap *allocator.Snapshot, ni *nodeInfo, stamps []uint64) bool {
	for i, p := range ni.pools {
		if snap.PoolUse(p) != stamps[i] {
			return false
		}
	}
	return true
}

// freeOf is the CPU (millicores) and memory (bytes) of the node's allocatable that the requests (and
// the pod's, when given) leave; limited is false without a node.
func freeOf(node *v1.Node, requested, pod map[v1.ResourceName]int64) (limited bool, cpu, mem int64) {
	if node == nil {
		return false, 0, 0
	}
	c, m := node.Status.Allocatable[v1.ResourceCPU], node.Status.Allocatable[v1.ResourceMemory]
	cpu = c.MilliValue() - requested[v1.ResourceCPU] - pod[v1.ResourceCPU]
	mem = m.Value() - requested[v1.ResourceMemory] - pod[v1.ResourceMemory]
	return true, cpu, mem
}

// resultUses is what allocation results take of each device, as addResults counts it.
func resultUses(results []resourceapi.AllocationResult) map[allocator.DeviceID]*use {
	extra := map[allocator.DeviceID]*use{}
	for _, r := range results {
		addResults(extra, r.Devices.Results)
	}
	return extra
}

// after is the state st of the node with the pod placed: what it takes of the devices (resultUses)
// added and its CPU and memory taken. Devices without counters are patched; a node with counter sets is
// read again.
func (inv *Inventory) after(snap *allocator.Snapshot, name string, st *nodeState, extra map[allocator.DeviceID]*use, pod map[v1.ResourceName]int64) *nodeState {
	ni := inv.info[name]
	var out *nodeState
	if ni.counters {
		out = inv.read(name, func(id allocator.DeviceID) *use { return snapshotUse(snap, id) }, extra, st.blocking)
	} else {
		out = &nodeState{devs: append([]devState(nil), st.devs...), units: append([]float64(nil), st.units...), blocking: st.blocking}
		for id, u := range extra {
			i, ok := ni.index[id]
			if !ok {
				continue // a device of another node (a network-attached one) is not measured here
			}
			ds := &out.devs[i]
			ds.held = true
			ds.whole = ds.whole || u.whole
			if !ds.dev.shared {
				out.units[ds.unit] = 0 // held now, and so not free whatever it was
				continue
			}
			left := make(map[resourceapi.QualifiedName]resource.Quantity, len(ds.left))
			for k, l := range ds.left {
				l = l.DeepCopy()
				if q, ok := u.consumed[k]; ok {
					l.Sub(q)
				}
				left[k] = l
			}
			ds.left = left
			out.units[ds.unit] = sharedFree(ds)
		}
	}
	out.limited, out.cpu, out.mem = st.limited, st.cpu-pod[v1.ResourceCPU], st.mem-pod[v1.ResourceMemory]
	out.key = keyOf(ni, out)
	return out
}

// sharedFree is free(d) of a shared device: the free fraction of its unit capacity, 0 when held whole
// or tainted.
func sharedFree(ds *devState) float64 {
	c, l := ds.dev.cap[ds.dev.unit], ds.left[ds.dev.unit]
	if ds.whole || ds.blocked || c.Sign() <= 0 || l.Sign() <= 0 {
		return 0
	}
	return l.AsApproximateFloat64() / c.AsApproximateFloat64()
}

// keyOf names the state for the memos: the node's kind, each device's state in order (held, held
// whole, fits, what is left of each capacity), each unit's free capacity for counter sets, and the free
// CPU and memory. Two nodes with one key have alike devices in one state, so the measure gives them the
// same F_n(m) for every shape. "" when a left amount is not an integer.
func keyOf(ni *nodeInfo, st *nodeState) string {
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(b, int64(ni.kind), 36)
	for i := range st.devs {
		ds := &st.devs[i]
		b = append(b, '|', flag(ds.held), flag(ds.whole), flag(ds.fits), flag(ds.blocked))
		for _, k := range ds.dev.capNames {
			l := ds.left[k]
			v, ok := l.AsInt64()
			if !ok {
				return ""
			}
			b = append(b, ',')
			b = strconv.AppendInt(b, v, 36)
		}
	}
	if ni.counters {
		for _, f := range st.units {
			b = append(b, '/')
			b = strconv.AppendFloat(b, f, 'g', -1, 64)
		}
	}
	if st.limited {
		b = append(b, '#')
		b = strconv.AppendInt(b, st.cpu, 36)
		b = append(b, ',')
		b = strconv.AppendInt(b, st.mem, 36)
	}
	return string(b)
}

func flag(b bool) byte {
	if b {
		return '1'
	}
	return '0'
}

// read builds the free state of the node's devices from what use says claims hold of each, with extra
// results (a placement considered) added, and the taints that keep claims off them.
func (inv *Inventory) read(node string, usage func(allocator.DeviceID) *use, extra map[allocator.DeviceID]*use, blk blocking) *nodeState {
	devs := inv.devices[node]
	st := &nodeState{devs: make([]devState, len(devs)), blocking: blk}
	setUnit := map[setKey]int{}
	setLeft := map[setKey]map[string]resource.Quantity{}
	for i := range devs {
		d := &devs[i]
		ds := &st.devs[i]
		ds.dev = d
		ds.blocked = blk.blocks(d)
		us := []*use{usage(d.id), extra[d.id]}
		for _, u := range us {
			if u != nil && u.held {
				ds.held = true
				ds.whole = ds.whole || u.whole
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
			if !ds.held && !ds.blocked {
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
		st.units = append(st.units, sharedFree(ds))
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
	// A counter is free only where a device that could be given now draws on it: a partition nobody
	// holds, without a taint that keeps claims off it, whose counters are all left. What no such
	// device reaches (every partition on it tainted, or each one held in part) the allocator gives to
	// no claim, as it gives no tainted device.
	reach := map[setKey]map[string]bool{}
	for i := range st.devs {
		ds := &st.devs[i]
		if len(ds.dev.consumes) == 0 || ds.held || ds.blocked {
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
		if !ds.fits {
			continue
		}
		for _, cc := range ds.dev.consumes {
			k := setKey{ds.dev.id.Driver, ds.dev.id.Pool, cc.CounterSet}
			if reach[k] == nil {
				reach[k] = map[string]bool{}
			}
			for name := range cc.Counters {
				reach[k][name] = true
			}
		}
	}
	for k, u := range setUnit {
		st.units[u] = setFree(inv.sets[k], setLeft[k], reach[k])
	}
	return st
}

// setFree is the free share of a counter set's memory slices (counters memory-slice-<i>), or of its
// counter "memory" when it has no slices: what is left of each, counted only where reach says a device
// that could be given now draws on it.
func setFree(set resourceapi.CounterSet, left map[string]resource.Quantity, reach map[string]bool) float64 {
	var total, free float64
	for name, c := range set.Counters {
		if strings.HasPrefix(name, "memory-slice-") {
			total += c.Value.AsApproximateFloat64()
			if l := left[name]; reach[name] {
				free += max(0, l.AsApproximateFloat64())
			}
		}
	}
	if total == 0 {
		if c, ok := set.Counters["memory"]; ok && c.Value.Sign() > 0 && reach["memory"] {
			l := left["memory"]
			return max(0, l.AsApproximateFloat64()) / c.Value.AsApproximateFloat64()
		}
		return 0
	}
	return free / total
}
