package headroom_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// TestPropCountKindsAgree: Count, which fills one node of each kind and counts the others alike, gives
// exactly the Result and error of placing every copy, on random fleets of a few kinds of nodes (CPUs,
// whole or shared GPUs, a taint, a zone label) partly used by pods placed before, sometimes with
// network-attached GPUs any node can get, for pods with or without a claim, a toleration and a node
// selector, under random Max and budgets.
func TestPropCountKindsAgree(t *testing.T) {
	ctx := context.Background()
	templates := []string{"", "one-gpu", "two-gpus", "half-gpu", "third-gpu"}
	rapid.Check(t, func(rt *rapid.T) {
		type kind struct {
			cpus    string
			gpus    int
			shares  int64
			tainted bool
			zone    string
		}
		// Kinds differ from the first in one thing each, so that a Count that overlooks it shows.
		kinds := []kind{{
			cpus:    rapid.SampledFrom([]string{"4", "8", "16"}).Draw(rt, "cpus"),
			gpus:    rapid.IntRange(0, 4).Draw(rt, "gpus"),
			shares:  rapid.SampledFrom([]int64{0, 1000}).Draw(rt, "shares"),
			tainted: rapid.Bool().Draw(rt, "tainted"),
			zone:    rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "zone"),
		}}
		for range rapid.IntRange(0, 2).Draw(rt, "more-kinds") {
			k := kinds[0]
			switch rapid.IntRange(0, 4).Draw(rt, "differs-in") {
			case 0:
				k.cpus = rapid.SampledFrom([]string{"4", "8", "16"}).Draw(rt, "other-cpus")
			case 1:
				k.gpus = rapid.IntRange(0, 4).Draw(rt, "other-gpus")
			case 2:
				k.shares = 1000 - k.shares
			case 3:
				k.tainted = !k.tainted
			case 4:
				k.zone = map[string]string{"a": "b", "b": "a"}[k.zone]
			}
			kinds = append(kinds, k)
		}
		snap := allocator.NewSnapshot(allocator.Options{})
		for i := range rapid.IntRange(2, 12).Draw(rt, "nodes") {
			k := kinds[rapid.IntRange(0, len(kinds)-1).Draw(rt, "kind")]
			name := fmt.Sprintf("n%02d", i)
			n := node(name, k.cpus)
			n.Labels = map[string]string{"zone": k.zone, "kubernetes.io/hostname": name}
			if k.tainted {
				n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
			}
			must(snap.AddOrUpdateNode(n))
			if k.gpus > 0 {
				must(snap.AddOrUpdateSlice(gpus(name, k.gpus, k.shares)))
			}
		}
		if rapid.Bool().Draw(rt, "network") {
			net := gpus("net", rapid.IntRange(1, 3).Draw(rt, "network-gpus"), 0)
			net.Spec.NodeName, net.Spec.AllNodes = nil, ptr(true)
			must(snap.AddOrUpdateSlice(net))
		}
		must(snap.AddOrUpdateClass(gpuClass()))
		c := pods.New(snap, pods.Options{NameSuffix: suffixes()})
		addTemplates(c)
		nodes := snap.Nodes()
		tolerate := func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
		}
		for i := range rapid.IntRange(0, 6).Draw(rt, "used") {
			p := pod(fmt.Sprintf("before-%d", i), rapid.SampledFrom([]string{"1", "2"}).Draw(rt, "before-cpu"), rapid.SampledFrom(templates).Draw(rt, "before-template"))
			tolerate(p)
			pl, err := c.PlaceOnNode(ctx, p, nodes[rapid.IntRange(0, len(nodes)-1).Draw(rt, "before-node")].Name)
			if err == nil {
				must(c.Assume(pl))
			}
		}
		// A few pods on each fleet.
		for i := range 3 {
			p := pod(fmt.Sprintf("w%d", i), rapid.SampledFrom([]string{"1", "3"}).Draw(rt, "cpu"), rapid.SampledFrom(templates).Draw(rt, "template"))
			if rapid.Bool().Draw(rt, "tolerates") {
				tolerate(p)
			}
			if rapid.Bool().Draw(rt, "selects") {
				p.Spec.NodeSelector = map[string]string{"zone": "a"}
			}
			opts := headroom.Options{}
			if rapid.IntRange(0, 3).Draw(rt, "max") == 0 {
				opts.Max = rapid.IntRange(1, 30).Draw(rt, "max-copies")
			}
			if rapid.IntRange(0, 3).Draw(rt, "budget") == 0 {
				opts.Budget = rapid.IntRange(1, 40).Draw(rt, "budget-placements")
			}
			got, gotErr := headroom.Count(ctx, c, p, opts)
			want, wantErr := headroom.CountEveryCopy(ctx, c, p, opts)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				rt.Fatalf("%s: error %v, placing every copy %v", p.Name, gotErr, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				rt.Fatalf("%s: Count %+v, placing every copy %+v", p.Name, got, want)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// suffixes is a deterministic NameSuffix.
func suffixes() func() string {
	k := 0
	return func() string { k++; return fmt.Sprintf("s%04d", k) }
}
