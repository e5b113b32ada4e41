package allocator

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/dralloc/dralloc/celenv"
)

// Devices of different slices whose maps the copier shared share their CEL view's values and their
// plain consumption; each view keeps its device's name (errors name the right device), and a snapshot
// that keeps the caller's objects (NoCopy) shares nothing.
func TestDerivedSharedBetweenEqualDevices(t *testing.T) {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	missing, err := env.Compile(`device.attributes["gpu.example.com"].nothere == 1`)
	if err != nil {
		t.Fatal(err)
	}
	for _, noCopy := range []bool{false, true} {
		s := NewSnapshot(Options{NoCopy: noCopy})
		for _, node := range []string{"node-a", "node-b"} {
			if err := s.AddOrUpdateSlice(gpuSlice(node, 2)); err != nil {
				t.Fatal(err)
			}
		}
		a, b := s.st.slices["node-a-gpu"].devices()[1], s.st.slices["node-b-gpu"].devices()[1]
		va, vb := a.view(), b.view()
		if va.Name() != "gpu.example.com/gpu-1" || vb.Name() != "gpu.example.com/gpu-1" || va == vb {
			t.Fatalf("NoCopy %v: views %q and %q, the same view %v", noCopy, va.Name(), vb.Name(), va == vb)
		}
		var ev *celenv.EvalError
		if _, err := missing.Matches(context.Background(), vb); !errors.As(err, &ev) || ev.Device != "gpu.example.com/gpu-1" {
			t.Fatalf("NoCopy %v: error %v, want one naming gpu.example.com/gpu-1", noCopy, err)
		}
		ca, _ := a.plainConsumed()
		cb, _ := b.plainConsumed()
		if shared := reflect.ValueOf(ca).Pointer() == reflect.ValueOf(cb).Pointer(); shared == noCopy {
			t.Errorf("NoCopy %v: plain consumption shared: %v", noCopy, shared)
		}
		if !reflect.DeepEqual(ca, cb) || len(ca) == 0 {
			t.Errorf("NoCopy %v: plain consumption %v and %v", noCopy, ca, cb)
		}
		// A view shared is a name and a pointer; one prepared anew converts every attribute.
		c := s.st.slices["node-b-gpu"].devices()[0]
		allocs := testing.AllocsPerRun(10, func() { c.slice.derived.view(c.id.Driver, c.api) })
		if shared := allocs <= 3; shared == noCopy {
			t.Errorf("NoCopy %v: preparing the view of a device like another takes %v allocations", noCopy, allocs)
		}
	}
}
