package allocator_test

import (
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// scramble changes in place everything reachable from v that a caller could change: strings, numbers and
// booleans of settable fields, the values behind pointers, map entries (each value changed, one entry
// added) and slice elements.
func scramble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			scramble(v.Elem())
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			scramble(e) // what it points to changes; the entry is replaced by the changed copy
			v.SetMapIndex(k, e)
		}
		if v.Type().Key().Kind() == reflect.String {
			v.SetMapIndex(reflect.ValueOf("scrambled").Convert(v.Type().Key()), reflect.New(v.Type().Elem()).Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			scramble(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scramble(v.Field(i))
			}
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(v.String() + "-scrambled")
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		if v.CanSet() {
			v.SetInt(v.Int() + 1)
		}
	case reflect.Bool:
		if v.CanSet() {
			v.SetBool(!v.Bool())
		}
	}
}

// A snapshot that copies its inputs answers the same, and hands back the same devices, however the
// objects it was given are changed afterwards: its copies (whose devices share maps and values among
// themselves) share nothing with them.
func TestPropChangedInputsChangeNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		s := allocator.NewSnapshot(options(c))
		load(t, s, c, func(int) bool { return true })
		// The node and the pending claims are the call's arguments, not the snapshot's; keep them.
		call := &fuzz.Cluster{Node: c.Node.DeepCopy(), Claims: make([]*resourceapi.ResourceClaim, len(c.Claims))}
		for i, claim := range c.Claims {
			call.Claims[i] = claim.DeepCopy()
		}
		before := allocateOn(s, call)
		devices := map[allocator.DeviceID]*resourceapi.Device{}
		for _, slice := range c.Slices {
			for i := range slice.Spec.Devices {
				id := allocator.DeviceID{Driver: slice.Spec.Driver, Pool: slice.Spec.Pool.Name, Device: slice.Spec.Devices[i].Name}
				if d, ok := s.Device(id); ok {
					devices[id] = d.DeepCopy()
				}
			}
		}
		for _, objs := range []any{c.Slices, c.Classes, c.Allocated, c.TaintRules, c.Nodes} {
			scramble(reflect.ValueOf(objs))
		}
		if after := allocateOn(s, call); !reflect.DeepEqual(after, before) {
			t.Fatalf("after the inputs changed the snapshot answered\n%+v\nbefore\n%+v", after, before)
		}
		for id, want := range devices {
			if got, ok := s.Device(id); !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("device %v changed with its input:\n%+v\nwant\n%+v", id, got, want)
			}
		}
	})
}
