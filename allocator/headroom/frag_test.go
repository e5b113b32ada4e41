package headroom_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// slicesOf is the GPU slices of cluster specs ("name cpus gpus shares").
func slicesOf(specs ...string) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	for _, s := range specs {
		var name, cpus string
		var n int
		var shares int64
		_, _ = fmt.Sscan(s, &name, &cpus, &n, &shares)
		if n > 0 {
			out = append(out, gpus(name, n, shares))
		}
	}
	return out
}

// placeOn places and assumes a pod with the template on the node (spec.nodeName pins it there).
func placeOn(t *testing.T, c *pods.Cluster, name, node, tmpl string) {
	t.Helper()
	p := pod(name, "1", tmpl)
	p.Spec.NodeName = node
	pl, err := c.Place(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Assume(pl); err != nil {
		t.Fatal(err)
	}
}

func whole(n int64) headroom.Request { return headroom.Request{Count: n} }
func share(q int64) headroom.Request {
	return headroom.Request{Capacity: "shares", Amount: *resource.NewQuantity(q, resource.DecimalSI)}
}

func TestFragmentation(t *testing.T) {
	// a: two GPUs shared by "shares" of 1000; b: two whole GPUs. a/gpu-0 holds a share of 500, b/gpu-0 a
	// whole claim: a has 0.5 + 1 = 1.5 GPUs free, b has 1.
	specs := []string{"a 32 2 1000", "b 32 2 0"}
	c := cluster(pods.Options{}, specs...)
	placeOn(t, c, "half", "a", "half-gpu")
	placeOn(t, c, "one", "b", "one-gpu")
	inv, err := headroom.NewInventory(slicesOf(specs...))
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		f        float64
		stranded int
		sfree    float64
	}
	for _, tc := range []struct {
		name     string
		mix      []headroom.Shape
		a, b     node
		f, total float64
	}{
		{
			// One whole GPU fits on a only on gpu-1: gpu-0's 0.5 is fragmented for it (F_a(m1) = 0.5); on b
			// it uses gpu-1 (0). A share of 300 fits on both GPUs of a (500 and 1000 left) and on b's free
			// GPU, which it takes whole (0). F_a = ½·0.5 + ½·0 = 0.25, F_b = 0.
			name: "whole and shares", mix: []headroom.Shape{{Name: "m1", Weight: 0.5, Requests: []headroom.Request{whole(1)}}, {Name: "m2", Weight: 0.5, Requests: []headroom.Request{share(300)}}},
			a: node{f: 0.25}, b: node{}, f: 0.25,
		},
		{
			// Two whole GPUs fit nowhere (a has one whole free GPU, b one): all free capacity is
			// fragmented and stranded, F_a = 1.5, F_b = 1.
			name: "two whole GPUs", mix: []headroom.Shape{{Name: "m", Weight: 1, Requests: []headroom.Request{whole(2)}}},
			a: node{f: 1.5, stranded: 2, sfree: 1.5}, b: node{f: 1, stranded: 1, sfree: 1}, f: 2.5,
		},
		{
			// A share of 600 fits on a's gpu-1 only (gpu-0 has 500 left: 0.5 stranded) and on b's gpu-1
			// whole. F_a = 0.5, F_b = 0.
			name: "share larger than a GPU's rest", mix: []headroom.Shape{{Name: "m", Weight: 1, Requests: []headroom.Request{share(600)}}},
			a: node{f: 0.5, stranded: 1, sfree: 0.5}, b: node{}, f: 0.5,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := inv.Fragmentation(c, tc.mix)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Nodes) != 2 {
				t.Fatalf("nodes %+v", rep.Nodes)
			}
			for i, want := range []node{tc.a, tc.b} {
				got := rep.Nodes[i]
				if !near(got.F, want.f) || got.StrandedDevices != want.stranded || !near(got.StrandedFree, want.sfree) {
					t.Errorf("%s: got F %v stranded %d (%v), want %+v", got.Node, got.F, got.StrandedDevices, got.StrandedFree, want)
				}
			}
			if !near(rep.F, tc.f) || !near(rep.Free, 2.5) {
				t.Errorf("F %v free %v, want %v and 2.5", rep.F, rep.Free, tc.f)
			}
		})
	}
}

func near(x, y float64) bool { return math.Abs(x-y) < 1e-9 }

func TestFragmentationBadInput(t *testing.T) {
	inv, _ := headroom.NewInventory(slicesOf("a 1 1 0"))
	c := cluster(pods.Options{}, "a 1 1 0")
	for _, tc := range []struct {
		name string
		mix  []headroom.Shape
		want string
	}{
		{"empty", nil, "headroom: mix: must have at least one shape"},
		{"weights", []headroom.Shape{{Name: "m", Weight: 0.5, Requests: []headroom.Request{whole(1)}}}, "headroom: mix: weights must sum to 1, got 0.5"},
		{"negative", []headroom.Shape{{Name: "m", Weight: -1, Requests: []headroom.Request{whole(1)}}}, "headroom: mix[0] m: weight: must be at least 0, got -1"},
		{"count", []headroom.Shape{{Name: "m", Weight: 1, Requests: []headroom.Request{whole(0)}}}, "headroom: mix[0] m: requests[0].count: must be at least 1, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := inv.Fragmentation(c, tc.mix); err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	s := gpus("a", 1, 0)
	s.Spec.NodeName = nil
	if _, err := headroom.NewInventory([]*resourceapi.ResourceSlice{s}); err == nil || !strings.Contains(err.Error(), "ResourceSlice a-gpus: spec.nodeName") {
		t.Fatalf("slice without node: %v", err)
	}
}

func TestShapeOf(t *testing.T) {
	c := cluster(pods.Options{}, "a 1 1 0")
	s, err := headroom.ShapeOf(c, pod("p", "1", "third-gpu"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Requests) != 1 || s.Requests[0].Capacity != "shares" || s.Requests[0].Amount.Value() != 300 || s.CPU.Cmp(resource.MustParse("1")) != 0 {
		t.Fatalf("shape %+v", s)
	}
	s, _ = headroom.ShapeOf(c, pod("p", "1", "two-gpus"), 1)
	if len(s.Requests) != 1 || s.Requests[0].Count != 2 || s.Requests[0].Capacity != "" {
		t.Fatalf("shape %+v", s)
	}
}
