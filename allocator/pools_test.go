package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

func TestAllocatePools(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	one := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}
	runAll(t, []scenario{{
		name: "slices of an older pool generation are ignored",
		slices: []*resourceapi.ResourceSlice{
			withPool(nodeSlice("s-old", node1, driverA, "pool-1", devices("dev-old")...), 1, 1),
			withPool(nodeSlice("s-new", node1, driverA, "pool-1", devices("dev-new")...), 2, 1),
		},
		classes: classes, claims: one,
		want: [][]string{{"req=pool-1/dev-new"}},
	}, {
		name: "an incomplete pool is skipped and the next pool used",
		slices: []*resourceapi.ResourceSlice{
			withPool(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1")...), 1, 2),
			nodeSlice("s2", node1, driverA, "pool-2", devices("dev-2")...),
		},
		classes: classes, claims: one,
		want: [][]string{{"req=pool-2/dev-2"}},
	}, {
		name: "only an incomplete pool: does not fit",
		slices: []*resourceapi.ResourceSlice{
			withPool(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1")...), 1, 2),
		},
		classes: classes, claims: one,
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "slices of a pool are visited by name, not by arrival",
		slices: []*resourceapi.ResourceSlice{
			withPool(nodeSlice("s-b", node1, driverA, "pool-1", devices("dev-b")...), 1, 2),
			withPool(nodeSlice("s-a", node1, driverA, "pool-1", devices("dev-a")...), 1, 2),
		},
		classes: classes, claims: one,
		want: [][]string{{"req=pool-1/dev-a"}},
	}, {
		name: "pools are visited by driver, then pool name",
		slices: []*resourceapi.ResourceSlice{
			nodeSlice("s1", node1, driverB, "pool-a", devices("dev-1")...),
			nodeSlice("s2", node1, driverA, "pool-z", devices("dev-2")...),
			nodeSlice("s3", node1, driverA, "pool-b", devices("dev-3")...),
		},
		classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 3))},
		want:    [][]string{{"req=pool-b/dev-3", "req=pool-z/dev-2", "req=" + driverB + "/pool-a/dev-1"}},
	}, {
		name: "a pool whose other slices are on other nodes is complete",
		slices: []*resourceapi.ResourceSlice{
			withPool(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1")...), 1, 2),
			withPool(nodeSlice("s2", node2, driverA, "pool-1", devices("dev-2")...), 1, 2),
		},
		classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		want:    [][]string{{"req=pool-1/dev-1"}},
	}, {
		name: "a newer generation elsewhere makes an incomplete pool obsolete",
		slices: []*resourceapi.ResourceSlice{
			withPool(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1")...), 1, 2),
			withPool(nodeSlice("s2", node2, driverA, "pool-1", devices("dev-2")...), 2, 2),
		},
		classes: classes, claims: one,
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "duplicate device names make a pool invalid: does not fit, naming the reason",
		slices: []*resourceapi.ResourceSlice{
			withPool(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1")...), 1, 2),
			withPool(nodeSlice("s2", node1, driverA, "pool-1", devices("dev-1")...), 1, 2),
		},
		classes: classes, claims: one,
		wantErr:     allocator.ErrUnsatisfiable,
		wantErrText: "duplicate device name dev-1",
	}, {
		name: "an invalid pool is skipped when another pool fits",
		slices: []*resourceapi.ResourceSlice{
			withPool(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1")...), 1, 2),
			withPool(nodeSlice("s2", node1, driverA, "pool-1", devices("dev-1")...), 1, 2),
			nodeSlice("s3", node1, driverA, "pool-2", devices("dev-2")...),
		},
		classes: classes, claims: one,
		want: [][]string{{"req=pool-2/dev-2"}},
	}, {
		name: "pools with binding conditions are visited last",
		slices: []*resourceapi.ResourceSlice{
			nodeSlice("s1", node1, driverA, "pool-a", resourceapi.Device{
				Name: "dev-bound", BindingConditions: []string{"attached"}, BindingFailureConditions: []string{"failed"},
			}),
			nodeSlice("s2", node1, driverA, "pool-b", devices("dev-plain")...),
		},
		classes: classes, claims: one,
		want: [][]string{{"req=pool-b/dev-plain"}},
	}, {
		name:    "no slices: does not fit",
		classes: classes, claims: one,
		wantErr: allocator.ErrUnsatisfiable,
	}})
}

// The reason given for an invalid pool is the same on every call and whatever order the maps of the input
// were filled in: a device that draws on five counters its counter set does not have is reported for the
// first of them by name.
func TestInvalidPoolReasonIsDeterministic(t *testing.T) {
	names := []string{"e", "c", "a", "d", "b"}
	const want = "counter a not found in counter set gpu-0"
	for rotation := range names {
		counters := map[string]resourceapi.Counter{}
		for i := range names {
			counters[names[(rotation+i)%len(names)]] = resourceapi.Counter{Value: quantity("1Gi")}
		}
		d := device("p", nil)
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: counters}}
		for run := range 20 {
			s := allocator.NewSnapshot(allocator.Options{})
			for _, sl := range partitionedPool(d) {
				must(t, s.AddOrUpdateSlice(sl))
			}
			must(t, s.AddOrUpdateClass(anyClass))
			_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))})
			var ue *allocator.UnsatisfiableError
			if !errors.As(err, &ue) || len(ue.Reasons) == 0 || !strings.HasSuffix(ue.Reasons[len(ue.Reasons)-1], want) {
				t.Fatalf("insertion order %d, run %d: got %v, want a last reason ending in %q", rotation, run, err, want)
			}
		}
	}
}

// An invalid pool's reason names the first consumption, in device order and then the order a device
// lists them, that draws on an undefined counter set or counter, whichever kind of fault comes first.
// The pool is checked as its counters are compiled, in one pass over the consumptions.
func TestInvalidPoolReasonIsTheFirstFault(t *testing.T) {
	memory := map[string]resourceapi.Counter{"memory": {Value: quantity("1Gi")}}
	unknownSet := resourceapi.DeviceCounterConsumption{CounterSet: "gpu-9", Counters: memory}
	unknownCounter := resourceapi.DeviceCounterConsumption{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: quantity("1Gi")}, "engines": {Value: quantity("1")}}}
	fine := resourceapi.DeviceCounterConsumption{CounterSet: "gpu-0", Counters: memory}
	for _, tc := range []struct {
		name  string
		draws [][]resourceapi.DeviceCounterConsumption // per device, in order
		want  string
	}{
		{"an unknown set first", [][]resourceapi.DeviceCounterConsumption{{fine}, {unknownSet}, {unknownCounter}}, "counter set gpu-9 not found"},
		{"an unknown counter first", [][]resourceapi.DeviceCounterConsumption{{fine}, {unknownCounter}, {unknownSet}}, "counter engines not found in counter set gpu-0"},
		{"an unknown counter first within a device", [][]resourceapi.DeviceCounterConsumption{{fine}, {unknownCounter, unknownSet}}, "counter engines not found in counter set gpu-0"},
		{"an unknown set first within a device", [][]resourceapi.DeviceCounterConsumption{{fine}, {unknownSet, unknownCounter}}, "counter set gpu-9 not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var devs []resourceapi.Device
			for i, draws := range tc.draws {
				d := device(fmt.Sprintf("p-%d", i), nil)
				d.ConsumesCounters = draws
				devs = append(devs, d)
			}
			s := allocator.NewSnapshot(allocator.Options{})
			for _, sl := range partitionedPool(devs...) {
				must(t, s.AddOrUpdateSlice(sl))
			}
			must(t, s.AddOrUpdateClass(anyClass))
			_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))})
			var ue *allocator.UnsatisfiableError
			if !errors.As(err, &ue) || len(ue.Reasons) == 0 || !strings.HasSuffix(ue.Reasons[len(ue.Reasons)-1], tc.want) {
				t.Fatalf("got %v, want a last reason ending in %q", err, tc.want)
			}
		})
	}
}

// The pools a node sees are cached across calls, and with network-attached slices that select nodes by
// label the answer depends on the node's labels: a caller that relabels its Node object and passes the same
// object again must be answered for the new labels.
func TestRelabelledNodeSeesItsNewPools(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateClass(anyClass))
	must(t, s.AddOrUpdateSlice(nodeSlice("local", node1, driverA, "local", devices("gpu-0")...)))
	must(t, s.AddOrUpdateSlice(networkSlice("fabric-a", "fabric-a", labelSelector("zone", "a"), devices("nic-a")...)))
	ctx := context.Background()
	n := node(node1, map[string]string{"zone": "a"})
	two := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))}
	for _, step := range []struct {
		zone string
		fits bool
	}{{"a", true}, {"b", false}, {"a", true}} {
		n.Labels["zone"] = step.zone
		if ok, err := s.Fits(ctx, n, two); err != nil || ok != step.fits {
			t.Errorf("zone %s: fits %v (%v), want %v", step.zone, ok, err, step.fits)
		}
	}
}

// BenchmarkFitsNetworkAttached asks Fits of a node that sees a local pool and a network-attached pool
// selected by label: the cached pools are looked up by the node's name and labels, allocating nothing.
func BenchmarkFitsNetworkAttached(b *testing.B) {
	s := allocator.NewSnapshot(allocator.Options{})
	for _, err := range []error{
		s.AddOrUpdateClass(anyClass),
		s.AddOrUpdateSlice(nodeSlice("local", node1, driverA, "local", manyDevices(8)...)),
		s.AddOrUpdateSlice(networkSlice("fabric", "fabric", labelSelector("zone", "a"), devices("nic-0", "nic-1")...)),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	labels := map[string]string{"zone": "a", "kubernetes.io/hostname": node1, "node.kubernetes.io/instance-type": "gpu-8x"}
	for i := range 12 {
		labels[fmt.Sprintf("example.com/label-%d", i)] = "value"
	}
	n := node(node1, labels)
	claims := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 9))}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := s.Fits(ctx, n, claims); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
