package allocator_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
)

// TestCountersFollowAllocatedState: the shared counters a call starts from are what the allocated state
// leaves, after every change of it: allocating a partition takes the room of the whole device, freeing it
// gives the room back, and a fork and its parent do not see each other's changes.
func TestCountersFollowAllocatedState(t *testing.T) {
	ctx := context.Background()
	n := node(node1, nil)
	s := allocator.NewSnapshot(allocator.Options{})
	for _, c := range []*resourceapi.DeviceClass{anyClass, sizeClass("half"), sizeClass("whole")} {
		if err := s.AddOrUpdateClass(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, sl := range partitionedPool(partition("p-a", "half", "4Gi"), partition("p-b", "half", "4Gi"), partition("whole", "whole", "8Gi")) {
		if err := s.AddOrUpdateSlice(sl); err != nil {
			t.Fatal(err)
		}
	}
	whole := []*resourceapi.ResourceClaim{claim("c", exact("w", "whole", 1))}
	fits := func(s *allocator.Snapshot, want bool, when string) {
		t.Helper()
		got, err := s.Fits(ctx, n, whole)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: whole device fits %v, want %v", when, got, want)
		}
	}
	if err := s.AddOrUpdateClaim(allocatedClaim("other", result(driverA, "pool-1", "p-a"))); err != nil {
		t.Fatal(err)
	}
	fits(s, false, "a partition allocated")
	if err := s.DeleteClaim("default", "other"); err != nil {
		t.Fatal(err)
	}
	fits(s, true, "the partition freed")
	f := s.Fork()
	fits(f, true, "fork, nothing allocated")
	if err := f.AddOrUpdateClaim(allocatedClaim("other", result(driverA, "pool-1", "p-b"))); err != nil {
		t.Fatal(err)
	}
	fits(f, false, "fork, a partition allocated")
	// A change that frees nothing: the parent has made as many changes as the fork.
	if err := s.AddOrUpdateClass(anyClass); err != nil {
		t.Fatal(err)
	}
	fits(s, true, "parent of a fork that allocated a partition")
	if err := f.DeleteClaim("default", "other"); err != nil {
		t.Fatal(err)
	}
	fits(f, true, "fork, the partition freed")
	if err := s.AddOrUpdateClaim(allocatedClaim("other", result(driverA, "pool-1", "p-a"))); err != nil {
		t.Fatal(err)
	}
	fits(s, false, "parent, a partition allocated")
	fits(f, true, "fork, after its parent allocated a partition")
}

// TestCountersPreparedFromScratch: after any sequence of allocating and freeing partitions, on a
// snapshot and on forks committed into it or discarded, the counter state prepared for the allocated
// state equals capacity.Counters recomputed from the allocated devices, device by device and counter by
// counter; calls in between use (and so prepare) the state of every revision.
func TestCountersPreparedFromScratch(t *testing.T) {
	ctx := context.Background()
	n := node(node1, nil)
	parts := []resourceapi.Device{
		partition("p-a", "half", "4Gi", "mig"), partition("p-b", "half", "4Gi", "mig"),
		partition("p-c", "half", "2Gi"), partition("whole", "whole", "8Gi"),
	}
	all := allocator.AllFeatures() // compatibility groups included
	rapid.Check(t, func(t *rapid.T) {
		s := allocator.NewSnapshot(allocator.Options{Features: &all})
		for _, c := range []*resourceapi.DeviceClass{anyClass, sizeClass("half"), sizeClass("whole")} {
			if err := s.AddOrUpdateClass(c); err != nil {
				t.Fatal(err)
			}
		}
		for _, sl := range partitionedPool(parts...) {
			if err := s.AddOrUpdateSlice(sl); err != nil {
				t.Fatal(err)
			}
		}
		var fork *allocator.Snapshot
		check := func(x *allocator.Snapshot, when string) {
			if diff, err := allocator.CountersFromScratch(x, n); err != nil || diff != "" {
				t.Fatalf("%s: %s %v", when, diff, err)
			}
			// A call through the prepared state, as a filter pass makes.
			if _, err := x.Fits(ctx, n, []*resourceapi.ResourceClaim{claim("probe", exact("r", "half", 1))}); err != nil {
				t.Fatal(err)
			}
		}
		for step := range rapid.IntRange(1, 12).Draw(t, "steps") {
			target := s
			if fork != nil && rapid.Bool().Draw(t, "onFork") {
				target = fork
			}
			name := fmt.Sprintf("c%d", rapid.IntRange(0, 3).Draw(t, "claim"))
			switch op := rapid.IntRange(0, 4).Draw(t, "op"); op {
			case 0, 1:
				var results []resourceapi.DeviceRequestAllocationResult
				for _, d := range parts {
					if rapid.Bool().Draw(t, "takes") {
						results = append(results, result(driverA, "pool-1", d.Name))
					}
				}
				if len(results) == 0 {
					_ = target.DeleteClaim("default", name)
				} else if err := target.AddOrUpdateClaim(allocatedClaim(name, results...)); err != nil {
					t.Fatal(err)
				}
			case 2:
				_ = target.DeleteClaim("default", name) // absent claims are fine
			case 3:
				if fork == nil {
					fork = s.Fork()
				} else if err := fork.Commit(); err == nil {
					fork = nil
				} else {
					_ = fork.Discard()
					fork = nil
				}
			case 4:
				if fork != nil {
					_ = fork.Discard()
					fork = nil
				}
			}
			check(s, fmt.Sprintf("step %d, snapshot", step))
			if fork != nil {
				check(fork, fmt.Sprintf("step %d, fork", step))
			}
		}
	})
}

// TestCountersPreparedPerPool: a claim allocated or freed on one node's pool prepares that pool's
// counters again and leaves every other pool's as they were (the state changed, the other pool's
// allocated devices did not), in the snapshot and in a fork; the values stay what the allocated state
// leaves (CountersFromScratch).
func TestCountersPreparedPerPool(t *testing.T) {
	ctx := context.Background()
	nodes := []*v1.Node{node(node1, nil), node("node-2", nil)}
	s := allocator.NewSnapshot(allocator.Options{})
	for _, c := range []*resourceapi.DeviceClass{anyClass, sizeClass("half"), sizeClass("whole")} {
		if err := s.AddOrUpdateClass(c); err != nil {
			t.Fatal(err)
		}
	}
	parts := []resourceapi.Device{partition("p-a", "half", "4Gi"), partition("p-b", "half", "4Gi"), partition("whole", "whole", "8Gi")}
	for i, n := range nodes {
		for _, sl := range partitionedPool(parts...) {
			sl.Name = fmt.Sprintf("%s-%d", sl.Name, i)
			sl.Spec.NodeName = &n.Name
			sl.Spec.Pool.Name = fmt.Sprintf("pool-%d", i+1)
			if err := s.AddOrUpdateSlice(sl); err != nil {
				t.Fatal(err)
			}
		}
	}
	prepare := func(x *allocator.Snapshot, n *v1.Node) *bool {
		t.Helper()
		if diff, err := allocator.CountersFromScratch(x, n); err != nil || diff != "" {
			t.Fatalf("%s: %s %v", n.Name, diff, err)
		}
		ids, err := allocator.PreparedCounters(x, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 1 || ids[0] == nil {
			t.Fatalf("%s: prepared %v, want one pool with devices", n.Name, ids)
		}
		return ids[0]
	}
	step := func(x *allocator.Snapshot, when string, change func() error) {
		t.Helper()
		before := []*bool{prepare(x, nodes[0]), prepare(x, nodes[1])}
		if err := change(); err != nil {
			t.Fatal(err)
		}
		after := []*bool{prepare(x, nodes[0]), prepare(x, nodes[1])}
		if before[0] != after[0] {
			t.Errorf("%s: node-1's pool, unchanged, was prepared again", when)
		}
		if before[1] == after[1] {
			t.Errorf("%s: node-2's pool, changed, kept what was prepared before", when)
		}
	}
	step(s, "a claim allocated on node-2", func() error {
		return s.AddOrUpdateClaim(allocatedClaim("c", result(driverA, "pool-2", "p-b")))
	})
	step(s, "the claim freed", func() error { return s.DeleteClaim("default", "c") })
	f := s.Fork()
	step(f, "fork: a claim allocated on node-2", func() error {
		return f.AddOrUpdateClaim(allocatedClaim("c", result(driverA, "pool-2", "p-b")))
	})
	// The parent did not change: its state is found to hold what its pools had before the fork.
	whole := []*resourceapi.ResourceClaim{claim("probe", exact("r", "whole", 1))}
	if fits, err := s.Fits(ctx, nodes[1], whole); err != nil || !fits {
		t.Errorf("parent after the fork's allocation: the whole device fits %v, %v; want true", fits, err)
	}
	if fits, err := f.Fits(ctx, nodes[1], whole); err != nil || fits {
		t.Errorf("fork after its allocation: the whole device fits %v, %v; want false", fits, err)
	}
	if fits, err := s.Fits(ctx, nodes[1], whole); err != nil || !fits {
		t.Errorf("parent again after the fork's call: the whole device fits %v, %v; want true", fits, err)
	}
}
