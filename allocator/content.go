package allocator

import (
	"encoding/binary"
	"encoding/json"
	"reflect"
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The content of a device as node classes compare it (classCache.content): everything but its name
// and attributes. Capacities and counter consumption, which partitionable devices publish by the
// dozen, are written field by field, maps in key order; the rest of the device goes through JSON when
// anything of it is set, which also covers any field a later API adds (a field added to the types
// written by hand fails TestDeviceContentKnowsTheFields).

// contentScratch is the working memory of writing contents: the bytes and, per kind of map, the keys
// last sorted, reused across devices and slices.
type contentScratch struct {
	b                                  []byte
	capacityKeys, counterKeys, setKeys []string
}

var contentScratches = sync.Pool{New: func() any { return new(contentScratch) }}

// scratchSortedKeys returns m's keys in order, in the key buffer keys (valid until the next call with it).
// A device often repeats the names of the device before it (the capacities of every partition of a GPU,
// the counters of partitions on the same memory slices), so when keys already holds exactly m's names
// (as many, each in m) they are returned as they are, without collecting and sorting them again.
func scratchSortedKeys[K ~string, V any](keys *[]string, m map[K]V) []string {
	if holdsExactly(*keys, m) {
		return *keys
	}
	*keys = (*keys)[:0]
	for k := range m {
		*keys = append(*keys, string(k))
	}
	slices.Sort(*keys)
	return *keys
}

// holdsExactly: keys are m's names, as many and each in m (keys has no duplicates).
func holdsExactly[K ~string, V any](keys []string, m map[K]V) bool {
	if len(keys) != len(m) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[K(k)]; !ok {
			return false
		}
	}
	return true
}

// appendDeviceContent appends d's content; false when a value cannot be written.
func appendDeviceContent(b []byte, d *resourceapi.Device, c *contentScratch) ([]byte, bool) {
	rest := *d
	rest.Name, rest.Attributes, rest.Capacity, rest.ConsumesCounters = "", nil, nil, nil
	// Most devices set nothing else: a zero rest is written as one byte, without JSON.
	ok := true
	if reflect.ValueOf(&rest).Elem().IsZero() {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		if b, ok = appendJSON(b, rest); !ok {
			return b, false
		}
	}
	b = appendLen(b, len(d.Capacity), d.Capacity == nil)
	for _, name := range scratchSortedKeys(&c.capacityKeys, d.Capacity) {
		dc := d.Capacity[resourceapi.QualifiedName(name)]
		b = appendString(b, name)
		if b, ok = appendCapacity(b, &dc); !ok {
			return b, false
		}
	}
	b = appendLen(b, len(d.ConsumesCounters), d.ConsumesCounters == nil)
	for i := range d.ConsumesCounters {
		cc := &d.ConsumesCounters[i]
		b = appendString(b, cc.CounterSet)
		b = appendLen(b, len(cc.Counters), cc.Counters == nil)
		for _, name := range scratchSortedKeys(&c.counterKeys, cc.Counters) {
			b = appendString(b, name)
			if b, ok = appendQuantity(b, cc.Counters[name].Value); !ok {
				return b, false
			}
		}
		b = appendLen(b, len(cc.CompatibilityGroups), cc.CompatibilityGroups == nil)
		for _, g := range cc.CompatibilityGroups {
			b = appendString(b, g)
		}
	}
	return b, true
}

// appendCounterSets writes a pool's counter sets in order (their order is the pool's): each set's name
// and its counters in name order; false when a value cannot be written.
func appendCounterSets(b []byte, sets []resourceapi.CounterSet, c *contentScratch) ([]byte, bool) {
	b = appendLen(b, len(sets), sets == nil)
	ok := true
	for i := range sets {
		b = appendString(b, sets[i].Name)
		b = appendLen(b, len(sets[i].Counters), sets[i].Counters == nil)
		for _, name := range scratchSortedKeys(&c.setKeys, sets[i].Counters) {
			b = appendString(b, name)
			if b, ok = appendQuantity(b, sets[i].Counters[name].Value); !ok {
				return b, false
			}
		}
	}
	return b, true
}

// appendQuantity writes q so that two quantities are written alike exactly when they print alike:
// its format and, when it is an int64, that value (String canonicalizes both), else its JSON. q is
// read, never modified (String would cache its text in it).
func appendQuantity(b []byte, q resource.Quantity) ([]byte, bool) {
	b = appendString(b, string(q.Format))
	if v, ok := q.AsInt64(); ok {
		b = append(b, 0)
		return binary.LittleEndian.AppendUint64(b, uint64(v)), true
	}
	b = append(b, 1)
	return appendJSON(b, q)
}

func appendJSON(b []byte, v any) ([]byte, bool) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return appendString(b, string(j)), true
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// appendLen writes a collection's length, and whether it is nil (nil and empty are copied as they
// are, so they are told apart).
func appendLen(b []byte, n int, isNil bool) []byte {
	b = append(b, boolByte(isNil))
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

// appendAttribute writes an attribute's value: each of its fields, present or not, in the API's
// order (TestDeviceContentKnowsTheFields keeps the list complete).
func appendAttribute(b []byte, a *resourceapi.DeviceAttribute) []byte {
	b = append(b, boolByte(a.IntValue != nil), boolByte(a.BoolValue != nil), boolByte(a.StringValue != nil), boolByte(a.VersionValue != nil))
	if a.IntValue != nil {
		b = binary.LittleEndian.AppendUint64(b, uint64(*a.IntValue))
	}
	if a.BoolValue != nil {
		b = append(b, boolByte(*a.BoolValue))
	}
	if a.StringValue != nil {
		b = appendString(b, *a.StringValue)
	}
	if a.VersionValue != nil {
		b = appendString(b, *a.VersionValue)
	}
	b = appendLen(b, len(a.IntValues), a.IntValues == nil)
	for _, v := range a.IntValues {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	b = appendLen(b, len(a.BoolValues), a.BoolValues == nil)
	for _, v := range a.BoolValues {
		b = append(b, boolByte(v))
	}
	b = appendLen(b, len(a.StringValues), a.StringValues == nil)
	for _, v := range a.StringValues {
		b = appendString(b, v)
	}
	b = appendLen(b, len(a.VersionValues), a.VersionValues == nil)
	for _, v := range a.VersionValues {
		b = appendString(b, v)
	}
	return b
}

// appendCapacity writes a capacity: its value and request policy.
func appendCapacity(b []byte, c *resourceapi.DeviceCapacity) ([]byte, bool) {
	b, ok := appendQuantity(b, c.Value)
	if !ok {
		return b, false
	}
	b = append(b, boolByte(c.RequestPolicy != nil))
	if c.RequestPolicy != nil {
		return appendJSON(b, c.RequestPolicy)
	}
	return b, true
}

// readKey appends to b what the call's selectors read of d (see classSig.reads): its driver, flags and
// the values read, each present or not, under both names a driver may publish it under.
func readKey(b []byte, reads []valueRead, d *deviceEntry) ([]byte, bool) {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(d.id.Driver)))
	b = append(b, d.id.Driver...)
	b = append(b, boolByte(d.multi), boolByte(d.binding))
	for _, r := range reads {
		for _, name := range [2]resourceapi.QualifiedName{r.qualified, r.bare} {
			if r.capacity {
				c, found := d.api.Capacity[name]
				b = append(b, boolByte(found))
				if found {
					var ok bool
					if b, ok = appendCapacity(b, &c); !ok {
						return b, false
					}
				}
			} else {
				a, found := d.api.Attributes[name]
				b = append(b, boolByte(found))
				if found {
					b = appendAttribute(b, &a)
				}
			}
			if r.domain != d.id.Driver {
				break // a name without a domain is the driver's
			}
		}
	}
	return b, true
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
