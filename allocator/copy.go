package allocator

import (
	"hash/maphash"
	"math"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator/validation"
)

// sliceCopier makes the snapshot's private copy of a ResourceSlice: equal to it (reflect.DeepEqual), and
// sharing no memory the caller can modify, so that changing the caller's object afterwards never changes
// the snapshot's answers. It copies as ResourceSlice.DeepCopy does, but a device's maps and attribute
// values are what most of a fleet's memory is, and the copy shares what it can between devices:
//
//   - attribute values (the targets of intValue, boolValue, stringValue and versionValue) are allocated
//     in blocks, a few allocations per slice rather than one per attribute;
//   - the consumesCounters of all devices of a slice share one backing array;
//   - equal attribute, capacity and counter maps across the snapshot are one map: every node of a fleet
//     publishes the same capacities and counters, the MIG placements of one GPU differ by profile only,
//     and a fleet whose devices carry no unique attribute (a uuid) publishes the same attributes on
//     every node: 5,000 nodes of 8 GPUs with an index and a model are 8 attribute maps, not 40,000 of
//     about 1.3 KB each (a Go map of a few entries holds a group of eight).
//
// Maps are shared only when they are equal in representation too (quantities with ==), so that the copy
// returned by Snapshot.Device and the lookups is DeepEqual to its input. Nothing in the snapshot modifies
// the objects it keeps, and callers must not modify what the lookups return (see lookup.go), so sharing a
// map between devices is invisible.
//
// A sliceCopier is safe for concurrent use; snapshots and their forks share one. The maps it remembers
// for sharing are bounded (maxSharedMaps): past that it forgets them all and starts again, so that a
// snapshot whose slices come and go does not keep dead maps alive.
type sliceCopier struct {
	mu       sync.Mutex
	seed     maphash.Seed
	capacity map[uint64][]map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
	counters map[uint64][]map[string]resourceapi.Counter
	shared   int // maps held in capacity and counters
	// attrs are the attribute maps copied, by hash; attrShared counts them, bounded apart from the
	// capacity and counter maps, so that a fleet whose attributes all differ (a uuid per device) does
	// not make the copier forget its few capacity maps every maxSharedMaps devices.
	attrs      map[uint64][]map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	attrShared int
	// memo remembers the shared maps that validation found valid (copies are never modified).
	memo validation.Memo
	// derived shares what is computed from the shared maps alone (CEL views, plain consumption).
	derived derived
}

// maxSharedMaps bounds the capacity and counter maps a sliceCopier remembers, and apart from them the
// attribute maps. A fleet has a few dozen distinct capacity and counter maps (one per MIG profile and
// placement), so the bound is met only by slices whose devices all differ, where remembering does not
// pay; attribute maps meet it when every device has a uuid, and are then remembered for a few slices
// at a time, as many as share them (the MIG placements of one GPU).
const maxSharedMaps = 4096

// valueBlock is the most attribute values of one kind allocated at once.
const valueBlock = 32

func newSliceCopier() *sliceCopier {
	return &sliceCopier{seed: maphash.MakeSeed()}
}

// block hands out pointers to values of one kind, allocated in blocks of about valueBlock.
type block[T any] struct {
	buf []T
}

// reserve makes room for n values; left is how many more devices of the slice may ask for as many.
func (b *block[T]) reserve(n, left int) {
	if cap(b.buf)-len(b.buf) < n {
		b.buf = make([]T, 0, max(n, min(n*left, valueBlock)))
	}
}

// ptr stores v in room reserved and returns its address.
func (b *block[T]) ptr(v T) *T {
	b.buf = append(b.buf, v)
	return &b.buf[len(b.buf)-1]
}

// valueBlocks are the blocks of one slice's attribute values.
type valueBlocks struct {
	ints  block[int64]
	bools block[bool]
	strs  block[string] // stringValue and versionValue
}

// slice returns the private copy of in.
func (c *sliceCopier) slice(in *resourceapi.ResourceSlice) *resourceapi.ResourceSlice {
	out := new(resourceapi.ResourceSlice)
	rest := *in
	rest.Spec.Devices = nil
	rest.DeepCopyInto(out) // everything but the devices, including fields added to the API later
	if in.Spec.Devices == nil {
		return out
	}
	var vals valueBlocks
	consumes := 0
	for i := range in.Spec.Devices {
		consumes += len(in.Spec.Devices[i].ConsumesCounters)
	}
	var consumed []resourceapi.DeviceCounterConsumption
	if consumes > 0 {
		consumed = make([]resourceapi.DeviceCounterConsumption, consumes)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	out.Spec.Devices = make([]resourceapi.Device, len(in.Spec.Devices))
	for i := range in.Spec.Devices {
		src, dst := &in.Spec.Devices[i], &out.Spec.Devices[i]
		rest := *src
		rest.Attributes, rest.Capacity, rest.ConsumesCounters = nil, nil, nil
		rest.DeepCopyInto(dst) // the fields rarely set, and any added to the API later
		dst.Attributes = c.attributes(src.Attributes, &vals, len(in.Spec.Devices)-i)
		dst.Capacity = c.capacityMap(src.Capacity)
		if src.ConsumesCounters != nil {
			n := len(src.ConsumesCounters)
			dst.ConsumesCounters = consumed[:n:n]
			if n == 0 {
				dst.ConsumesCounters = []resourceapi.DeviceCounterConsumption{}
			}
			consumed = consumed[n:]
			for j := range src.ConsumesCounters {
				from, to := &src.ConsumesCounters[j], &dst.ConsumesCounters[j]
				rest := *from
				rest.Counters = nil
				rest.DeepCopyInto(to)
				to.Counters = c.counterMap(from.Counters)
			}
		}
	}
	return out
}

// attributes copies an attribute map, or returns the copy of an equal map made before.
// left is the number of devices of the slice still to copy, this one included.
func (c *sliceCopier) attributes(in map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, vals *valueBlocks, left int) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	if in == nil {
		return nil
	}
	h := uint64(len(in))
	ints, bools, strs := 0, 0, 0
	for k, a := range in {
		h += mix(maphash.String(c.seed, string(k)), c.attributeHash(a))
		ints += countSet(a.IntValue)
		bools += countSet(a.BoolValue)
		strs += countSet(a.StringValue) + countSet(a.VersionValue)
	}
	for _, m := range c.attrs[h] {
		if sameAttributes(m, in) {
			return m
		}
	}
	vals.ints.reserve(ints, left)
	vals.bools.reserve(bools, left)
	vals.strs.reserve(strs, left)
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(in))
	for k, a := range in {
		rest := a
		rest.IntValue, rest.BoolValue, rest.StringValue, rest.VersionValue = nil, nil, nil, nil
		var v resourceapi.DeviceAttribute
		rest.DeepCopyInto(&v) // the list values, and any kind added to the API later
		if a.IntValue != nil {
			v.IntValue = vals.ints.ptr(*a.IntValue)
		}
		if a.BoolValue != nil {
			v.BoolValue = vals.bools.ptr(*a.BoolValue)
		}
		if a.StringValue != nil {
			v.StringValue = vals.strs.ptr(*a.StringValue)
		}
		if a.VersionValue != nil {
			v.VersionValue = vals.strs.ptr(*a.VersionValue)
		}
		out[k] = v
	}
	if c.attrShared >= maxSharedMaps || c.attrs == nil {
		c.attrs, c.attrShared = map[uint64][]map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}, 0
	}
	c.attrShared++
	c.attrs[h] = append(c.attrs[h], out)
	return out
}

func countSet[T any](p *T) int {
	if p == nil {
		return 0
	}
	return 1
}

func (c *sliceCopier) attributeHash(a resourceapi.DeviceAttribute) uint64 {
	switch {
	case a.StringValue != nil:
		return maphash.String(c.seed, *a.StringValue)
	case a.VersionValue != nil:
		return maphash.String(c.seed, *a.VersionValue) + 1
	case a.IntValue != nil:
		return uint64(*a.IntValue) + 2
	case a.BoolValue != nil && *a.BoolValue:
		return 3
	}
	return uint64(len(a.IntValues) + len(a.BoolValues) + len(a.StringValues) + len(a.VersionValues))
}

// sameAttributes: the same names with the same values (see sameAttribute).
func sameAttributes(x, y map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) bool {
	if len(x) != len(y) {
		return false
	}
	for k, xa := range x {
		ya, ok := y[k]
		if !ok || !sameAttribute(xa, ya) {
			return false
		}
	}
	return true
}

// capacityMap copies a capacity map, or returns the copy of an equal one made before. Maps with request
// policies are copied every time: they are rare, and comparing them costs more than copying.
func (c *sliceCopier) capacityMap(in map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	if in == nil {
		return nil
	}
	h, share := uint64(len(in)), true
	for k, v := range in {
		if v.RequestPolicy != nil {
			share = false
			break
		}
		h += mix(maphash.String(c.seed, string(k)), quantityHash(v.Value))
	}
	if share {
		for _, m := range c.capacity[h] {
			if sameCapacityValues(m, in) {
				return m
			}
		}
	}
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, len(in))
	for k, v := range in {
		var cp resourceapi.DeviceCapacity
		v.DeepCopyInto(&cp)
		out[k] = cp
	}
	if share {
		c.remember()
		if c.capacity == nil {
			c.capacity = map[uint64][]map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
		}
		c.capacity[h] = append(c.capacity[h], out)
	}
	return out
}

// sameCapacityValues: the same names with identical values and no request policies.
func sameCapacityValues(x, y map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) bool {
	if len(x) != len(y) {
		return false
	}
	for k, xv := range x {
		yv, ok := y[k]
		if !ok || yv.RequestPolicy != nil || xv.RequestPolicy != nil || xv.Value != yv.Value {
			return false
		}
	}
	return true
}

// counterMap copies the counters a device consumes from one counter set, or returns the copy of an
// equal map made before.
func (c *sliceCopier) counterMap(in map[string]resourceapi.Counter) map[string]resourceapi.Counter {
	if in == nil {
		return nil
	}
	h := uint64(len(in))
	for k, v := range in {
		h += mix(maphash.String(c.seed, k), quantityHash(v.Value))
	}
	for _, m := range c.counters[h] {
		if sameCounters(m, in) {
			return m
		}
	}
	out := make(map[string]resourceapi.Counter, len(in))
	for k, v := range in {
		var cp resourceapi.Counter
		v.DeepCopyInto(&cp)
		out[k] = cp
	}
	c.remember()
	if c.counters == nil {
		c.counters = map[uint64][]map[string]resourceapi.Counter{}
	}
	c.counters[h] = append(c.counters[h], out)
	return out
}

// sameCounters: the same names with identical values. Identical (==) quantities have the same
// representation, so a shared map reads as the input did; a quantity held as an inf.Dec is never
// identical to another's copy, and maps holding one are not shared.
func sameCounters(x, y map[string]resourceapi.Counter) bool {
	if len(x) != len(y) {
		return false
	}
	for k, xv := range x {
		yv, ok := y[k]
		if !ok || xv != yv {
			return false
		}
	}
	return true
}

// remember makes room for one more shared map.
func (c *sliceCopier) remember() {
	if c.shared >= maxSharedMaps {
		c.capacity, c.counters, c.shared = nil, nil, 0
	}
	c.shared++
}

// quantityHash hashes what a quantity's value is close to; identical quantities hash alike.
func quantityHash(q resource.Quantity) uint64 {
	return math.Float64bits(q.AsApproximateFloat64())
}

// mix combines a name's hash with its value's; the sum over a map's entries does not depend on the order
// in which they are visited.
func mix(name, value uint64) uint64 {
	h := name ^ (value * 0x9e3779b97f4a7c15)
	h ^= h >> 31
	return h * 0xbf58476d1ce4e5b9
}
