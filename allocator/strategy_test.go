package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// migProfiles are the partition profiles of a GPU with seven memory slices, as MIG places them: the
// number of slices and the slices a partition may start at.
var migProfiles = []struct {
	slices int
	starts []int
}{{1, []int{0, 1, 2, 3, 4, 5, 6}}, {2, []int{0, 2, 4}}, {3, []int{0, 4}}, {4, []int{0}}, {7, []int{0}}}

// migPartition is partition gpu-G-part-S-START of counter set gpu-G, consuming memory slices
// START … START+S-1.
func migPartition(gpu, slices, start int) resourceapi.Device {
	d := device(fmt.Sprintf("gpu-%d-part-%d-%d", gpu, slices, start), map[string]any{
		"slices": slices,
		"parent": fmt.Sprintf("gpu-%d", gpu),
	})
	used := map[string]resourceapi.Counter{}
	for s := start; s < start+slices; s++ {
		used[fmt.Sprintf("memory-slice-%d", s)] = resourceapi.Counter{Value: quantity("1")}
	}
	d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: fmt.Sprintf("gpu-%d", gpu), Counters: used}}
	return d
}

// migPool is pool-1 on node-1: a counter slice with one counter set of seven memory slices per GPU, and a
// device slice with every partition placement of every GPU, GPU by GPU, in profile order (reversed with
// wholeFirst, so that the whole GPU comes first).
func migPool(gpus int, wholeFirst bool) []*resourceapi.ResourceSlice {
	counters := withPool(nodeSlice("s-counters", node1, driverA, "pool-1"), 1, 2)
	var devs []resourceapi.Device
	for g := 0; g < gpus; g++ {
		set := resourceapi.CounterSet{Name: fmt.Sprintf("gpu-%d", g), Counters: map[string]resourceapi.Counter{}}
		for s := 0; s < 7; s++ {
			set.Counters[fmt.Sprintf("memory-slice-%d", s)] = resourceapi.Counter{Value: quantity("1")}
		}
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, set)
		for i := range migProfiles {
			p := migProfiles[i]
			if wholeFirst {
				p = migProfiles[len(migProfiles)-1-i]
			}
			for _, start := range p.starts {
				devs = append(devs, migPartition(g, p.slices, start))
			}
		}
	}
	return []*resourceapi.ResourceSlice{counters, withPool(nodeSlice("s-devices", node1, driverA, "pool-1", devs...), 1, 2)}
}

// sliceClass selects the partitions of one profile.
func sliceClass(slices int) *resourceapi.DeviceClass {
	return class(fmt.Sprintf("slices-%d", slices), fmt.Sprintf(`device.attributes["%s"].slices == %d`, driverA, slices))
}

// migClasses are anyClass and one class per profile.
func migClasses() []*resourceapi.DeviceClass {
	out := []*resourceapi.DeviceClass{anyClass}
	for _, p := range migProfiles {
		out = append(out, sliceClass(p.slices))
	}
	return out
}

// allocateWith allocates the claims on node-1 in a snapshot with the given strategy.
func allocateWith(t *testing.T, strategy allocator.Strategy, sc scenario) ([]resourceapi.AllocationResult, error) {
	t.Helper()
	return strategySnapshot(t, strategy, sc).Allocate(context.Background(), node(node1, nil), sc.claims)
}

// strategySnapshot is the snapshot of the scenario with the given strategy.
func strategySnapshot(t *testing.T, strategy allocator.Strategy, sc scenario) *allocator.Snapshot {
	t.Helper()
	s := allocator.NewSnapshot(allocator.Options{Strategy: strategy})
	for _, o := range sc.slices {
		if err := s.AddOrUpdateSlice(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range sc.classes {
		if err := s.AddOrUpdateClass(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range sc.allocated {
		if err := s.AddOrUpdateClaim(o); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestStrategiesChoose(t *testing.T) {
	parentMatch := func(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
		return withConstraints(c, matchAttr(driverA+"/parent"))
	}
	tests := []struct {
		scenario
		firstFit, bestFit, spread [][]string
	}{{
		scenario: scenario{
			name:   "on an empty GPU BestFit puts one slice at the last slice, keeping slices 0-3 for a four-slice partition",
			slices: migPool(1, false), classes: migClasses(),
			claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "slices-1", 1))},
		},
		firstFit: [][]string{{"req=pool-1/gpu-0-part-1-0"}},
		bestFit:  [][]string{{"req=pool-1/gpu-0-part-1-6"}},
		spread:   [][]string{{"req=pool-1/gpu-0-part-1-0"}},
	}, {
		scenario: scenario{
			name:   "BestFit fills the partly used GPU, where the placement rules out fewest others; Spread takes the untouched GPU",
			slices: migPool(2, false), classes: migClasses(),
			allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "gpu-1-part-2-0"))},
			claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "slices-2", 1))},
		},
		firstFit: [][]string{{"req=pool-1/gpu-0-part-2-0"}},
		bestFit:  [][]string{{"req=pool-1/gpu-1-part-2-2"}},
		spread:   [][]string{{"req=pool-1/gpu-0-part-2-0"}},
	}, {
		scenario: scenario{
			name:   "Spread takes the least used GPU; BestFit the used one, at a slice that blocks only one two-slice placement",
			slices: migPool(2, false), classes: migClasses(),
			allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "gpu-0-part-1-6"))},
			claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "slices-1", 1))},
		},
		firstFit: [][]string{{"req=pool-1/gpu-0-part-1-0"}},
		bestFit:  [][]string{{"req=pool-1/gpu-0-part-1-4"}},
		spread:   [][]string{{"req=pool-1/gpu-1-part-1-0"}},
	}, {
		scenario: scenario{
			name:   "BestFit takes the smallest partition before a whole GPU listed first",
			slices: migPool(1, true), classes: migClasses(),
			claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		},
		firstFit: [][]string{{"req=pool-1/gpu-0-part-7-0"}},
		bestFit:  [][]string{{"req=pool-1/gpu-0-part-1-6"}},
		spread:   [][]string{{"req=pool-1/gpu-0-part-7-0"}},
	}, {
		scenario: scenario{
			name:   "BestFit backtracks from the partly used GPU when the constraint cannot be met there",
			slices: migPool(2, false), classes: migClasses(),
			allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "gpu-1-part-1-6"))},
			claims: []*resourceapi.ResourceClaim{parentMatch(claim("c",
				exact("four", "slices-4", 1), exact("three", "slices-3", 1)))},
		},
		firstFit: [][]string{{"four=pool-1/gpu-0-part-4-0", "three=pool-1/gpu-0-part-3-4"}},
		bestFit:  [][]string{{"four=pool-1/gpu-0-part-4-0", "three=pool-1/gpu-0-part-3-4"}},
		spread:   [][]string{{"four=pool-1/gpu-0-part-4-0", "three=pool-1/gpu-0-part-3-4"}},
	}, {
		scenario: scenario{
			name:   "two devices of one request: BestFit packs both onto the partly used GPU, Spread onto the empty one",
			slices: migPool(2, false), classes: migClasses(),
			allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "gpu-1-part-4-0"))},
			claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "slices-1", 2))},
		},
		firstFit: [][]string{{"req=pool-1/gpu-0-part-1-0", "req=pool-1/gpu-0-part-1-1"}},
		bestFit:  [][]string{{"req=pool-1/gpu-1-part-1-6", "req=pool-1/gpu-1-part-1-4"}},
		spread:   [][]string{{"req=pool-1/gpu-0-part-1-0", "req=pool-1/gpu-0-part-1-1"}},
	}, {
		scenario: scenario{
			name:   "no strategy makes a claim fit that does not",
			slices: migPool(1, false), classes: migClasses(),
			allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "gpu-0-part-1-0"))},
			claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "slices-4", 1))},
			wantErr:   allocator.ErrUnsatisfiable,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, st := range []struct {
				strategy allocator.Strategy
				want     [][]string
			}{{allocator.FirstFit, tt.firstFit}, {allocator.BestFit, tt.bestFit}, {allocator.Spread, tt.spread}} {
				res, err := allocateWith(t, st.strategy, tt.scenario)
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Errorf("%s: want error wrapping %v, got %v", st.strategy, tt.wantErr, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", st.strategy, err)
				}
				if got := describe(res); !reflect.DeepEqual(got, st.want) {
					t.Errorf("%s:\n got %q\nwant %q", st.strategy, got, st.want)
				}
			}
		})
	}
}

// TestAllocateWithStrategy: AllocateWith on a snapshot made with another strategy chooses what a snapshot
// made with the call's strategy chooses (a scenario of TestStrategiesChoose), and the snapshot's next
// Allocate is back to its own strategy.
func TestAllocateWithStrategy(t *testing.T) {
	strategies := []allocator.Strategy{allocator.FirstFit, allocator.BestFit, allocator.Spread}
	sc := scenario{
		slices: migPool(2, false), classes: migClasses(),
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "gpu-1-part-4-0"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "slices-1", 2))},
	}
	want := map[allocator.Strategy][][]string{
		allocator.FirstFit: {{"req=pool-1/gpu-0-part-1-0", "req=pool-1/gpu-0-part-1-1"}},
		allocator.BestFit:  {{"req=pool-1/gpu-1-part-1-6", "req=pool-1/gpu-1-part-1-4"}},
		allocator.Spread:   {{"req=pool-1/gpu-0-part-1-0", "req=pool-1/gpu-0-part-1-1"}},
	}
	ctx := context.Background()
	n := node(node1, nil)
	for _, own := range strategies {
		for _, call := range strategies {
			s := strategySnapshot(t, own, sc)
			res, err := s.AllocateWith(ctx, call, n, sc.claims)
			if err != nil {
				t.Fatalf("%s snapshot, AllocateWith %s: %v", own, call, err)
			}
			if got := describe(res); !reflect.DeepEqual(got, want[call]) {
				t.Errorf("%s snapshot, AllocateWith %s:\n got %q\nwant %q", own, call, got, want[call])
			}
			res, err = s.Allocate(ctx, n, sc.claims)
			if err != nil {
				t.Fatalf("%s snapshot, Allocate after AllocateWith %s: %v", own, call, err)
			}
			if got := describe(res); !reflect.DeepEqual(got, want[own]) {
				t.Errorf("%s snapshot, Allocate after AllocateWith %s:\n got %q\nwant %q", own, call, got, want[own])
			}
		}
		s := strategySnapshot(t, own, sc)
		for _, bad := range []allocator.Strategy{-1, 3} {
			if _, err := s.AllocateWith(ctx, bad, n, sc.claims); !errors.Is(err, allocator.ErrInvalidInput) {
				t.Errorf("%s snapshot, AllocateWith %s: got %v, want an error wrapping ErrInvalidInput", own, bad, err)
			}
		}
	}
}

func TestStrategyOptions(t *testing.T) {
	tests := []struct {
		name     string
		strategy allocator.Strategy
		want     string
		valid    bool
	}{
		{"the zero strategy is FirstFit", allocator.Strategy(0), "FirstFit", true},
		{"BestFit is accepted", allocator.BestFit, "BestFit", true},
		{"Spread is accepted", allocator.Spread, "Spread", true},
		{"an unknown strategy is rejected as invalid input", allocator.Strategy(9), "Strategy(9)", false},
		{"a negative strategy is rejected as invalid input", allocator.Strategy(-1), "Strategy(-1)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.strategy.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			s := allocator.NewSnapshot(allocator.Options{Strategy: tt.strategy})
			if err := s.AddOrUpdateClass(anyClass); err != nil {
				t.Fatal(err)
			}
			_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))})
			if tt.valid && !errors.Is(err, allocator.ErrUnsatisfiable) {
				t.Errorf("want does-not-fit on an empty node, got %v", err)
			}
			if !tt.valid && !errors.Is(err, allocator.ErrInvalidInput) {
				t.Errorf("want error wrapping ErrInvalidInput, got %v", err)
			}
		})
	}
}
