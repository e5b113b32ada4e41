package pods

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// TestNodeIndexBoundsShapes records more shapes than maxShapes: the index keeps at most maxShapes, and
// a shape it keeps still skips its full nodes.
func TestNodeIndexBoundsShapes(t *testing.T) {
	snap := allocator.NewSnapshot(allocator.Options{})
	for i := range 3 {
		if err := snap.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	c := New(snap, Options{})
	nodes := c.nodeList(snap)
	rev := snap.Revision()
	for k := range maxShapes + 10 {
		v := c.fullIdx.lookup(rev, nodes, fmt.Sprint(k))
		if v == nil {
			t.Fatal("no view of the index at the snapshot's revision")
		}
		c.fullIdx.record(v, rev, []int{0})
	}
	if n := len(c.fullIdx.shapes); n > maxShapes {
		t.Fatalf("index holds %d shapes, want at most %d", n, maxShapes)
	}
	last := c.fullIdx.lookup(rev, nodes, fmt.Sprint(maxShapes+9))
	if !last.skip(0) || last.skip(1) || last.first != 1 {
		t.Fatalf("last shape: skip(0)=%v skip(1)=%v first=%d, want true false 1", last.skip(0), last.skip(1), last.first)
	}
}
