package allocator_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// A DeviceClass whose selector does not compile is reported when it is added; from an API server
// (TrustAPIServer) it is kept, and, as in Kubernetes, only the claims that use it fail.
func TestAddOrUpdateClassReportsCompileErrors(t *testing.T) {
	ctx := context.Background()
	for _, trusted := range []bool{false, true} {
		s := allocator.NewSnapshot(allocator.Options{TrustAPIServer: trusted})
		if err := s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool", devices("gpu-0")...)); err != nil {
			t.Fatal(err)
		}
		if err := s.AddOrUpdateClass(class("good")); err != nil {
			t.Fatal(err)
		}
		err := s.AddOrUpdateClass(class("bad", `device.driver == "`+driverA+`"`, `device.driver ==`))
		var ie *allocator.InputError
		if !errors.As(err, &ie) || !errors.Is(err, allocator.ErrInvalidInput) {
			t.Fatalf("trusted=%v: adding the class: got %v, want an *InputError", trusted, err)
		}
		if ie.Object != "DeviceClass bad" || ie.Field != "spec.selectors[1].cel.expression" || ie.NodeDependent {
			t.Errorf("trusted=%v: error names %q %q (node dependent %v), want DeviceClass bad, spec.selectors[1].cel.expression", trusted, ie.Object, ie.Field, ie.NodeDependent)
		}
		kept := len(s.Classes()) == 2
		if kept != trusted {
			t.Errorf("trusted=%v: class kept %v, want %v", trusted, kept, trusted)
		}
		_, err = s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{claim("uses-bad", exact("r", "bad", 1))})
		if want := "spec.selectors[1].cel.expression"; trusted && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("allocating with the bad class: got %v, want an error naming %s", err, want)
		}
		if _, err := s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{claim("uses-good", exact("r", "good", 1))}); err != nil {
			t.Errorf("trusted=%v: a claim of another class: %v", trusted, err)
		}
	}
}

// InputError.NodeDependent tells an error caused by one of the node's devices from input that fails on
// every node.
func TestInputErrorNodeDependent(t *testing.T) {
	ctx := context.Background()
	s := allocator.NewSnapshot(allocator.Options{})
	for _, sl := range []*resourceapi.ResourceSlice{
		nodeSlice("s1", node1, driverA, "pool-1", device("gpu-0", map[string]any{"model": "a"})),
		nodeSlice("s2", node2, driverA, "pool-2", device("gpu-0", nil)),
	} {
		if err := s.AddOrUpdateSlice(sl); err != nil {
			t.Fatal(err)
		}
	}
	// The selector reads an attribute that only node-1's device has: a runtime error on node-2.
	if err := s.AddOrUpdateClass(class("model-a", `device.attributes["`+driverA+`"].model == "a"`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		node          string
		claim         *resourceapi.ResourceClaim
		wantErr       bool
		nodeDependent bool
	}{
		{"the selector evaluates on every device of node-1", node1, claim("c", exact("r", "model-a", 1)), false, false},
		{"the selector fails on node-2's device", node2, claim("c", exact("r", "model-a", 1)), true, true},
		{"a missing class fails on every node", node1, claim("c", exact("r", "missing", 1)), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Allocate(ctx, node(tc.node, nil), []*resourceapi.ResourceClaim{tc.claim})
			if !tc.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *allocator.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InputError", err)
			}
			if ie.NodeDependent != tc.nodeDependent {
				t.Errorf("NodeDependent %v, want %v (%v)", ie.NodeDependent, tc.nodeDependent, err)
			}
		})
	}
}

// The zero Snapshot is an empty snapshot with the default options, whichever method is called first.
func TestZeroSnapshot(t *testing.T) {
	ctx := context.Background()
	var empty allocator.Snapshot
	if got, want := empty.Features(), allocator.DefaultFeatures(); got != want {
		t.Errorf("features of the zero Snapshot: %+v, want %+v", got, want)
	}
	if n := len(empty.Nodes()); n != 0 {
		t.Errorf("zero Snapshot has %d nodes", n)
	}
	if err := empty.Discard(); err == nil {
		t.Error("Discard of the zero Snapshot (not a fork) succeeded")
	}
	var fresh allocator.Snapshot
	if rev := fresh.Revision(); rev.Changes != 0 {
		t.Errorf("revision of the zero Snapshot: %+v", rev)
	}
	if nc, err := (&allocator.Snapshot{}).NodeClasses(ctx, nil); err != nil || nc == nil {
		t.Errorf("node classes of the zero Snapshot: %v, %v", nc, err)
	}

	var s allocator.Snapshot
	if err := s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool", devices("gpu-0")...)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddOrUpdateClass(class("gpu")); err != nil {
		t.Fatal(err)
	}
	results, err := s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1))})
	if err != nil || len(results) != 1 || results[0].Devices.Results[0].Device != "gpu-0" {
		t.Fatalf("allocate on the zero Snapshot: %v %v", results, err)
	}
	fork := s.Fork()
	if ok, err := fork.Fits(ctx, node(node1, nil), []*resourceapi.ResourceClaim{claim("d", exact("r", "gpu", 2))}); ok || err != nil {
		t.Errorf("two devices of one fit on a fork of the zero Snapshot: %v %v", ok, err)
	}
}
