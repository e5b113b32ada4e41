package allocator

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/inventory"
)

// TestCounterBlocksSharedByIdenticalNodes: DGX H100 nodes in dynamic MIG publish the same devices under
// their own names, in maps of their own; their pools share one compiled block per GPU slice, and a node
// whose one device consumes differently keeps a block of its own for that GPU alone, compiled from its
// own consumption.
func TestCounterBlocksSharedByIdenticalNodes(t *testing.T) {
	tmpl, err := inventory.Profile("dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSnapshot(Options{NoCopy: true})
	var nodes []*v1.Node
	var changed *resourceapi.Device
	for i := range 3 {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		slices, err := tmpl.Slices(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			// The last device of the last GPU's slice draws one more memory byte than its twins.
			devs := slices[len(slices)-1].Spec.Devices
			changed = &devs[len(devs)-1]
			c := changed.ConsumesCounters[0].Counters[inventory.CounterMemory]
			c.Value.Add(resource.MustParse("1"))
			changed.ConsumesCounters[0].Counters[inventory.CounterMemory] = c
		}
		for _, sl := range slices {
			if err := s.AddOrUpdateSlice(sl); err != nil {
				t.Fatal(err)
			}
		}
	}
	var layouts []*counterLayout
	for _, n := range nodes {
		err := s.do(context.Background(), n, nil, func(a *allocation) (bool, error) {
			pools, err := a.gatherPools(n)
			if err != nil {
				return false, err
			}
			if len(pools) != 1 || pools[0].layout == nil || !pools[0].layout.dense {
				return false, fmt.Errorf("node %s: want one pool with dense counters, got %d pools", n.Name, len(pools))
			}
			layouts = append(layouts, pools[0].layout)
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	first := layouts[0].bySlice
	if len(first) != 8 {
		t.Fatalf("node-0: %d consuming slices, want 8", len(first))
	}
	for n, l := range layouts[1:] {
		for i, sc := range l.bySlice {
			shared := &sc.devs[0] == &first[i].devs[0]
			last := n+1 == 2 && i == len(first)-1
			if shared == last {
				t.Errorf("node-%d, slice %s: shares node-0's block %v, want %v", n+1, sc.e.name(), shared, !last)
			}
		}
	}
	// The block of its own holds the changed consumption: more memory than its twin on node-0.
	own := layouts[2].bySlice[len(first)-1].devs
	twin := first[len(first)-1].devs
	k := len(own) - 1
	if !equalBlocks(own[:k], twin[:k]) || equalBlocks(own[k:], twin[k:]) {
		t.Errorf("node-2's own block differs from node-0's in other devices than %s", changed.Name)
	}
}

// TestPropCounterBlocksIntern: interning returns a block equal to the one given, which later changes to
// the given one (working memory) do not reach, the same block for equal ones and never one block for
// two that differ.
func TestPropCounterBlocksIntern(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var table counterBlocks
		var given, got [][]devCounters
		for range rapid.IntRange(1, 12).Draw(t, "blocks") {
			b := drawBlock(t)
			want := cloneBlock(b)
			c := table.intern(b)
			if !equalBlocks(c, want) {
				t.Fatalf("interned block differs from the one given")
			}
			for i := range b { // the caller reuses its working memory
				for j := range b[i].amounts {
					b[i].amounts[j].v++
				}
			}
			if !equalBlocks(c, want) {
				t.Fatalf("a change to the given block reached the interned one")
			}
			given, got = append(given, want), append(got, c)
		}
		for i := range given {
			for j := range i {
				same := &got[i][0] == &got[j][0]
				if eq := equalBlocks(given[i], given[j]); same != eq {
					t.Fatalf("blocks %d and %d: equal %v, interned as one %v", j, i, eq, same)
				}
			}
		}
	})
}

// TestCounterBlocksBounded: a table that has seen more distinct blocks than it holds starts over and
// still returns equal blocks.
func TestCounterBlocksBounded(t *testing.T) {
	var table counterBlocks
	for i := range 3 * maxCounterBlocks {
		b := []devCounters{{amounts: []counterAmount{{idx: 0, v: int64(i)}}}}
		if c := table.intern(b); !equalBlocks(c, b) || &c[0] == &b[0] {
			t.Fatalf("block %d: interned %v, want a copy of %v", i, c, b)
		}
		if len(table.byHash) > maxCounterBlocks {
			t.Fatalf("block %d: the table holds %d blocks, more than %d", i, len(table.byHash), maxCounterBlocks)
		}
	}
}

// drawBlock draws a small block from few values, so that equal blocks are drawn often.
func drawBlock(t *rapid.T) []devCounters {
	devs := make([]devCounters, rapid.IntRange(1, 3).Draw(t, "devices"))
	for i := range devs {
		for range rapid.IntRange(0, 2).Draw(t, "draws") {
			sd := setDraw{set: int32(rapid.IntRange(0, 1).Draw(t, "set"))}
			groups := rapid.SliceOfN(rapid.Int32Range(0, 1), 0, 2).Draw(t, "groups")
			if len(groups) > 0 {
				sd.n, sd.pairs = int32(len(groups)), append(groups, groups[0])
			}
			devs[i].sets = append(devs[i].sets, sd)
		}
		for range rapid.IntRange(0, 2).Draw(t, "amounts") {
			devs[i].amounts = append(devs[i].amounts, counterAmount{idx: int32(rapid.IntRange(0, 1).Draw(t, "idx")), v: int64(rapid.IntRange(0, 1).Draw(t, "v"))})
		}
	}
	return devs
}

// TestCounterBlocksHashSmallBlocks: small blocks that differ hash apart (the fold once mapped an empty
// device and a device with one amount {0, 1} to one hash, and the second replaced the first in the
// table, so that a block equal to the first was no longer shared).
func TestCounterBlocksHashSmallBlocks(t *testing.T) {
	var blocks [][]devCounters
	for _, set := range []int32{0, 1} {
		blocks = append(blocks, []devCounters{{sets: []setDraw{{set: set}}}})
	}
	blocks = append(blocks, []devCounters{{}}, []devCounters{{}, {}})
	for idx := range int32(3) {
		for v := range int64(3) {
			blocks = append(blocks, []devCounters{{amounts: []counterAmount{{idx: idx, v: v}}}})
		}
	}
	seen := map[uint64]int{}
	for i, b := range blocks {
		h := hashBlock(b)
		if j, ok := seen[h]; ok {
			t.Fatalf("blocks %d (%v) and %d (%v) hash alike", j, blocks[j], i, b)
		}
		seen[h] = i
	}
}
