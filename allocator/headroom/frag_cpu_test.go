package headroom_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

func cpus(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }

// A node whose free CPU or memory cannot hold a shape counts all its free GPUs as fragments for it, as
// the paper does (its case of a task the node cannot run), and a CPU-only shape finds every free GPU a
// fragment.
func TestFragmentationCPUMemory(t *testing.T) {
	// a: 4 CPUs, 2 whole GPUs, one held by a pod of 3 CPUs: 1 CPU and 1 GPU free. b: 32 CPUs, 2 GPUs free.
	specs := []string{"a 4 2 0", "b 32 2 0"}
	c := cluster(pods.Options{}, specs...)
	p := pod("busy", "3", "one-gpu")
	p.Spec.NodeName = "a"
	pl, err := c.Place(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	must(c.Assume(pl))
	inv, err := headroom.NewInventory(slicesOf(specs...))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mix  []headroom.Shape
		a, b float64
	}{
		// One GPU and 2 CPUs: a has the GPU but not the CPUs, so its free GPU is a fragment (F_a = 1);
		// on b it fits and can use both GPUs (F_b = 0).
		{"cpu", []headroom.Shape{{Name: "m", Weight: 1, Requests: []headroom.Request{whole(1)}, CPU: cpus(2)}}, 1, 0},
		// One GPU and 1 CPU fits on both.
		{"cpu fits", []headroom.Shape{{Name: "m", Weight: 1, Requests: []headroom.Request{whole(1)}, CPU: cpus(1)}}, 0, 0},
		// 300Gi of memory fits on no node of 256Gi: every free GPU is a fragment.
		{"memory", []headroom.Shape{{Name: "m", Weight: 1, Requests: []headroom.Request{whole(1)}, Memory: resource.MustParse("300Gi")}}, 1, 2},
		// A CPU-only shape uses no GPU: every free GPU is a fragment for it, F_n = ½·free + ½·F_n(GPU).
		{"cpu only", []headroom.Shape{{Name: "cpu", Weight: 0.5, CPU: cpus(1)}, {Name: "m", Weight: 0.5, Requests: []headroom.Request{whole(1)}, CPU: cpus(1)}}, 0.5, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := inv.Fragmentation(c, tc.mix)
			if err != nil {
				t.Fatal(err)
			}
			if !near(rep.Nodes[0].F, tc.a) || !near(rep.Nodes[1].F, tc.b) {
				t.Fatalf("F_a %v F_b %v, want %v and %v", rep.Nodes[0].F, rep.Nodes[1].F, tc.a, tc.b)
			}
		})
	}
}

// FGD counts the CPU a placement takes: a pod of 2 CPUs and a GPU on a (2 CPUs, 2 GPUs) would leave a's
// other GPU without CPU for the mix's tasks (growth 1), on b (8 CPUs) nothing (growth 0), so FGD takes
// b where FirstFit takes a.
func TestFGDCountsCPU(t *testing.T) {
	specs := []string{"a 2 2 0", "b 8 2 0"}
	mix := []headroom.Shape{{Name: "m", Weight: 1, Requests: []headroom.Request{whole(1)}, CPU: cpus(1)}}
	inv, err := headroom.NewInventory(slicesOf(specs...))
	if err != nil {
		t.Fatal(err)
	}
	cost, _, err := inv.FGD(mix)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts pods.Options
		want string
	}{{pods.Options{Cost: cost}, "b"}, {pods.Options{}, "a"}} {
		c := cluster(tc.opts, specs...)
		p, err := c.Place(context.Background(), pod("p", "2", "one-gpu"))
		if err != nil {
			t.Fatal(err)
		}
		if p.Node != tc.want {
			t.Errorf("with Cost %v: placed on %s, want %s", tc.opts.Cost != nil, p.Node, tc.want)
		}
	}
}

func TestFragmentationNegativeCPU(t *testing.T) {
	inv, _ := headroom.NewInventory(slicesOf("a 1 1 0"))
	c := cluster(pods.Options{}, "a 1 1 0")
	mix := []headroom.Shape{{Name: "m", Weight: 1, CPU: resource.MustParse("-1")}}
	if _, err := inv.Fragmentation(c, mix); err == nil || err.Error() != "headroom: mix[0] m: cpu: must not be negative" {
		t.Fatalf("err = %v", err)
	}
	if _, err := inv.Fragmentation(nil, mix); err == nil || err.Error() != "headroom: nil Cluster" {
		t.Fatalf("nil cluster: err = %v", err)
	}
}
