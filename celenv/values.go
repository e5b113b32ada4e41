package celenv

import (
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// stringMap is an immutable CEL map with string keys over values converted
// in advance. Lookups neither convert nor allocate, which is what keeps a
// selector evaluation allocation-free.
//
// The keys are a sorted slice and the values a slice beside it, not a Go
// map: a device's maps have a few to a few dozen entries, where a binary
// search is as fast as hashing, and a prepared fleet holds millions of them,
// where a map's groups and headers would be most of its memory.
//
// When fallback is set, Find (what indexing and field selection use)
// answers it for unknown keys, as Kubernetes does for device.attributes and
// device.capacity: device.attributes["unknown.example.com"] is an empty map,
// not an error. Get, "in" and iteration still see only the real keys.
type stringMap struct {
	names    []string  // sorted, without duplicates
	vals     []ref.Val // vals[i] is the value of names[i]
	fallback ref.Val
	// sorted are the keys, boxed once, on first iteration: most maps are
	// only ever indexed.
	sorted atomic.Pointer[[]ref.Val]
}

var _ traits.Mapper = (*stringMap)(nil)

// sortedMap is a map of names, sorted and without duplicates, and their values, which it keeps.
func sortedMap(names []string, vals []ref.Val, fallback ref.Val) *stringMap {
	return &stringMap{names: names, vals: vals, fallback: fallback}
}

// find returns the value of the key k.
func (m *stringMap) find(k string) (ref.Val, bool) {
	if i, ok := slices.BinarySearch(m.names, k); ok {
		return m.vals[i], true
	}
	return nil, false
}

// keys returns the sorted keys, boxed. It is safe for concurrent use.
func (m *stringMap) keys() []ref.Val {
	if k := m.sorted.Load(); k != nil {
		return *k
	}
	keys := make([]ref.Val, len(m.names))
	for i, k := range m.names {
		keys[i] = types.String(k)
	}
	m.sorted.CompareAndSwap(nil, &keys)
	return *m.sorted.Load()
}

var emptyMap = sortedMap(nil, nil, nil)

func (m *stringMap) lookup(key ref.Val) (ref.Val, bool, ref.Val) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false, types.MaybeNoSuchOverloadErr(key)
	}
	v, found := m.find(string(k))
	return v, found, nil
}

func (m *stringMap) Contains(key ref.Val) ref.Val {
	_, found, err := m.lookup(key)
	if err != nil {
		return err
	}
	return types.Bool(found)
}

func (m *stringMap) Get(key ref.Val) ref.Val {
	v, found, err := m.lookup(key)
	if err != nil {
		return err
	}
	if !found {
		return types.NewErr("no such key: %v", key)
	}
	return v
}

func (m *stringMap) Find(key ref.Val) (ref.Val, bool) {
	v, found, err := m.lookup(key)
	if err != nil {
		return err, false
	}
	if !found && m.fallback != nil {
		return m.fallback, true
	}
	return v, found
}

func (m *stringMap) Iterator() traits.Iterator { return &keyIterator{keys: m.keys()} }

func (m *stringMap) Size() ref.Val { return types.Int(len(m.names)) }

func (m *stringMap) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Mapper)
	if !ok {
		return types.False
	}
	if o.Size() != m.Size() {
		return types.False
	}
	for i, k := range m.keys() {
		ov, found := o.Find(k)
		if !found {
			return types.False
		}
		if eq := types.Equal(m.vals[i], ov); eq != types.True {
			return eq
		}
	}
	return types.True
}

func (m *stringMap) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if typeDesc.Kind() == reflect.Map && typeDesc.Key().Kind() == reflect.String {
		out := reflect.MakeMapWithSize(typeDesc, len(m.names))
		for i, k := range m.names {
			v := m.vals[i]
			nv, err := v.ConvertToNative(typeDesc.Elem())
			if err != nil {
				return nil, err
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(typeDesc.Key()), reflect.ValueOf(nv))
		}
		return out.Interface(), nil
	}
	if reflect.TypeOf(m).AssignableTo(typeDesc) {
		return m, nil
	}
	return nil, fmt.Errorf("type conversion error from map to '%v'", typeDesc)
}

func (m *stringMap) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case types.MapType:
		return m
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", types.MapType, typeVal)
}

func (m *stringMap) Type() ref.Type { return types.MapType }

// Value is the map as a Go map of its values.
func (m *stringMap) Value() any {
	out := make(map[string]ref.Val, len(m.names))
	for i, k := range m.names {
		out[k] = m.vals[i]
	}
	return out
}

// keyIterator walks boxed keys. Only comprehensions over a map create one.
type keyIterator struct {
	keys []ref.Val
	i    int
}

func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }

func (it *keyIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return nil
	}
	k := it.keys[it.i]
	it.i++
	return k
}

func (it *keyIterator) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion on iterators not supported")
}

func (it *keyIterator) ConvertToType(typeVal ref.Type) ref.Val {
	return types.NewErr("no such overload")
}

func (it *keyIterator) Equal(other ref.Val) ref.Val { return types.NoSuchOverloadErr() }

func (it *keyIterator) Type() ref.Type { return types.IteratorType }

func (it *keyIterator) Value() any { return nil }

// nativeOf answers ConvertToNative for an opaque value (kind names it in errors): the Go value itself, or
// its string form.
func nativeOf(native any, str func() string, kind string, typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(native).AssignableTo(typeDesc) {
		return native, nil
	}
	if reflect.TypeOf("").AssignableTo(typeDesc) {
		return str(), nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", kind, typeDesc)
}

// convertOpaque answers ConvertToType for self, an opaque value of type own: itself, its type, and, where
// str is set (as for IPs and CIDRs, which string() accepts), its string form.
func convertOpaque(self ref.Val, own *types.Type, str func() string, typeVal ref.Type) ref.Val {
	switch {
	case typeVal == own:
		return self
	case typeVal == types.TypeType:
		return own
	case typeVal == types.StringType && str != nil:
		return types.String(str())
	}
	return types.NewErr("type conversion error from '%s' to '%s'", own, typeVal)
}
