package allocator

import (
	"math/bits"
	"slices"
	"sync"
)

// counterBlocks interns the compiled counter consumption of slices (counterLayout.bySlice): a slice
// whose devices compile to the same lists as a block already held shares that block instead of keeping
// its own. The nodes of a fleet are mostly alike, and so are their compiled blocks, since counters are
// numbered by name rather than in map order: 200 DGX H100 nodes in dynamic MIG compile to 8 distinct
// blocks (one per GPU slice of 29 devices) where every pool kept its own before, about 10 MB of a first
// pass's 26. Blocks are immutable. The table is shared by a snapshot and its forks (it hangs off their
// poolCache) and bounded: when full it starts over, the blocks staying with the pools that use them.
type counterBlocks struct {
	mu     sync.Mutex
	byHash map[uint64][]devCounters
}

// maxCounterBlocks bounds the distinct blocks a table holds: a fleet has few node shapes, and a table
// that fills up (slices changing over a long life) is emptied rather than grown.
const maxCounterBlocks = 256

// intern returns a block equal to devs that outlives it: one held already, or a copy of devs, then held.
// devs may be working memory (compileBuf). A nil table copies.
func (t *counterBlocks) intern(devs []devCounters) []devCounters {
	if t == nil {
		return cloneBlock(devs)
	}
	h := hashBlock(devs)
	t.mu.Lock()
	defer t.mu.Unlock()
	if held, ok := t.byHash[h]; ok && equalBlocks(held, devs) {
		return held
	}
	c := cloneBlock(devs)
	if t.byHash == nil || len(t.byHash) >= maxCounterBlocks {
		t.byHash = make(map[uint64][]devCounters)
	}
	t.byHash[h] = c // a different block of the same hash is replaced: it stays with its pools
	return c
}

// hashBlock hashes everything equalBlocks compares.
func hashBlock(devs []devCounters) uint64 {
	h := uint64(len(devs))
	for i := range devs {
		d := &devs[i]
		h = fold(h, uint64(len(d.sets))<<32|uint64(len(d.amounts)))
		for j := range d.sets {
			sd := &d.sets[j]
			h = fold(h, uint64(uint32(sd.set))<<32|uint64(uint32(sd.n)))
			h = fold(h, uint64(len(sd.pairs)))
			for _, p := range sd.pairs {
				h = fold(h, uint64(uint32(p)))
			}
		}
		for _, a := range d.amounts {
			h = fold(fold(h, uint64(uint32(a.idx))), uint64(a.v))
		}
	}
	return h
}

// fold folds x into h: x is mixed on its own first (murmur3's 64-bit steps), so that no pattern of inputs
// cancels out (a plain (h^x)·k is 0 whenever x equals h, and small blocks then collide).
func fold(h, x uint64) uint64 {
	x *= 0x87c37b91114253d5
	x = bits.RotateLeft64(x, 31)
	x *= 0x4cf5ad432745937f
	h ^= x
	return bits.RotateLeft64(h, 27)*5 + 0x52dce729
}

// equalBlocks reports whether two blocks compile to the same lists.
func equalBlocks(x, y []devCounters) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		a, b := &x[i], &y[i]
		if len(a.sets) != len(b.sets) || !slices.Equal(a.amounts, b.amounts) {
			return false
		}
		for j := range a.sets {
			p, q := &a.sets[j], &b.sets[j]
			if p.set != q.set || p.n != q.n || !slices.Equal(p.pairs, q.pairs) {
				return false
			}
		}
	}
	return true
}

// cloneBlock copies a block into four allocations: the block and one array each for its draws, its
// amounts and its draws' groups.
func cloneBlock(devs []devCounters) []devCounters {
	nDraws, nAmounts, nGroups := 0, 0, 0
	for i := range devs {
		d := &devs[i]
		nDraws += len(d.sets)
		nAmounts += len(d.amounts)
		for j := range d.sets {
			nGroups += len(d.sets[j].pairs)
		}
	}
	out := make([]devCounters, len(devs))
	draws := make([]setDraw, nDraws)
	amounts := make([]counterAmount, nAmounts)
	var groups []int32
	if nGroups > 0 {
		groups = make([]int32, nGroups)
	}
	for i := range devs {
		d, o := &devs[i], &out[i]
		if k := len(d.sets); k > 0 {
			o.sets, draws = draws[:k:k], draws[k:]
			for j := range d.sets {
				sd := d.sets[j]
				if g := len(sd.pairs); g > 0 {
					copy(groups, sd.pairs)
					sd.pairs, groups = groups[:g:g], groups[g:]
				}
				o.sets[j] = sd
			}
		}
		if k := len(d.amounts); k > 0 {
			copy(amounts, d.amounts)
			o.amounts, amounts = amounts[:k:k], amounts[k:]
		}
	}
	return out
}
