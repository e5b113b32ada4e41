package pods_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// TestPropPreferOrdersDevices: through a stream of placements on nodes with 1–4 GPUs, a Place with
// Options.Cost and a Prefer that names a drawn order of the chosen node's GPUs fits the pod exactly
// where FirstFit does, on the node the Cost chooses, with the first GPUs of that order that are free,
// and every placement verifies.
func TestPropPreferOrdersDevices(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		var nodes []*v1.Node
		weight := map[string]float64{}
		order := map[string][]allocator.DeviceID{}
		base := cluster(t, pods.Options{}, 0).Snapshot()
		var published []*resourceapi.ResourceSlice
		for i := range rapid.IntRange(1, 4).Draw(rt, "nodes") {
			n := node(fmt.Sprintf("n%d", i), nil)
			nodes = append(nodes, n)
			must(t, base.AddOrUpdateNode(n))
			weight[n.Name] = float64(rapid.IntRange(0, 2).Draw(rt, n.Name+"-weight"))
			s := gpus(n.Name, rapid.IntRange(1, 4).Draw(rt, n.Name+"-gpus"))
			published = append(published, s)
			must(t, base.AddOrUpdateSlice(s))
			var ids []allocator.DeviceID
			for _, d := range s.Spec.Devices {
				ids = append(ids, allocator.DeviceID{Driver: driver, Pool: n.Name, Device: d.Name})
			}
			order[n.Name] = rapid.Permutation(ids).Draw(rt, n.Name+"-order")
		}
		cost := func(in pods.CostInput) (float64, error) { return weight[in.Node.Name], nil }
		prefer := func(in pods.CostInput) ([]allocator.DeviceID, error) { return order[in.Node.Name], nil }
		c := pods.New(base, pods.Options{Cost: cost, Prefer: prefer, NameSuffix: fixedSuffixes()})
		ff := pods.New(base, pods.Options{NameSuffix: fixedSuffixes()})
		for size := int64(1); size <= 3; size++ {
			must(t, c.AddOrUpdateTemplate(template(fmt.Sprintf("gpus-%d", size), size)))
			must(t, ff.AddOrUpdateTemplate(template(fmt.Sprintf("gpus-%d", size), size)))
		}
		snap := c.Snapshot()
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			size := rapid.IntRange(1, 3).Draw(rt, fmt.Sprintf("size-%d", step))
			p := pod(fmt.Sprintf("pod-%d", step), fmt.Sprintf("gpu=template:gpus-%d", size))
			want := lightestFit(t, snap, size, weight)
			_, ffErr := ff.Place(ctx, p)
			pl, err := c.Place(ctx, p)
			if (err == nil) != (ffErr == nil) {
				rt.Fatalf("%s: with Prefer %v, FirstFit %v", p.Name, err, ffErr)
			}
			if want == "" {
				continue
			}
			if err != nil {
				rt.Fatalf("%s: %v, but fits on %s", p.Name, err, want)
			}
			if pl.Node != want {
				rt.Fatalf("%s placed on %s (weights %v), want %s", p.Name, pl.Node, weight, want)
			}
			var free []string
			for _, id := range order[pl.Node] {
				if !snap.DeviceUse(id).Held() {
					free = append(free, id.Device)
				}
			}
			var got []string
			for _, r := range pl.Claims[0].Claim.Status.Allocation.Devices.Results {
				got = append(got, r.Device)
			}
			if fmt.Sprint(got) != fmt.Sprint(free[:size]) {
				rt.Fatalf("%s took %v, want the first free of the preference %v", p.Name, got, free)
			}
			verifyAndAssume(rt, c, published, nodes, p, pl)
		}
	})
}

// A Prefer that leads the allocation into more dead ends than the snapshot's step budget allows does not
// turn the pod the Cost rated as fitting into "search budget exhausted": it is placed with the devices
// BestFit takes. Node-a has gpu-0 .. gpu-2 of one model and odd-0 .. odd-19 of a model each; the pod's
// claim asks for 3 GPUs of one model. BestFit takes gpu-0 .. gpu-2 in 6 steps; preferring the odd devices
// the search spends a step on each before it reaches gpu-0, 26 in all, beyond the budget of 10.
func TestPreferDeadEndsBeyondBudget(t *testing.T) {
	snap := allocator.NewSnapshot(allocator.Options{StepBudget: 10})
	n := node("node-a", nil)
	must(t, snap.AddOrUpdateNode(n))
	s := gpus(n.Name, 3)
	model := func(m string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: &m}}
	}
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].Attributes = model("H100")
	}
	var deadEnds []allocator.DeviceID
	for i := range 20 {
		name := fmt.Sprintf("odd-%d", i)
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: name, Attributes: model(fmt.Sprintf("M%d", i))})
		deadEnds = append(deadEnds, allocator.DeviceID{Driver: driver, Pool: n.Name, Device: name})
	}
	must(t, snap.AddOrUpdateSlice(s))
	must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	c := pods.New(snap, pods.Options{
		Cost:       func(pods.CostInput) (float64, error) { return 0, nil },
		Prefer:     func(pods.CostInput) ([]allocator.DeviceID, error) { return deadEnds, nil },
		NameSuffix: fixedSuffixes(),
	})
	tmpl := template("three-of-a-model", 3)
	tmpl.Spec.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: ptr(resourceapi.FullyQualifiedName(driver + "/model"))}}
	must(t, c.AddOrUpdateTemplate(tmpl))
	pl, err := c.Place(context.Background(), pod("train", "gpu=template:three-of-a-model"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range pl.Claims[0].Claim.Status.Allocation.Devices.Results {
		got = append(got, r.Device)
	}
	if pl.Node != "node-a" || fmt.Sprint(got) != "[gpu-0 gpu-1 gpu-2]" {
		t.Errorf("placed on %s with %v, want node-a with [gpu-0 gpu-1 gpu-2]", pl.Node, got)
	}
}

// A Prefer that fails stops the placement with its error.
func TestPreferError(t *testing.T) {
	boom := errors.New("boom")
	c := exampleCluster(pods.Options{
		Cost:   func(pods.CostInput) (float64, error) { return 0, nil },
		Prefer: func(pods.CostInput) ([]allocator.DeviceID, error) { return nil, boom },
	})
	_, err := c.Place(context.Background(), pod("p", "gpu=template:one-gpu"))
	if !errors.Is(err, boom) || err.Error() != "Pod default/p: node node-a: prefer: boom" {
		t.Fatalf("err = %v", err)
	}
}

// A Prefer names the devices the pod's claims take first on the node the Cost chose: here gpu-2 of
// node-b, where BestFit alone would take gpu-0.
func ExamplePrefer() {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, name := range []string{"node-a", "node-b"} {
		_ = snap.AddOrUpdateNode(node(name, nil))
		_ = snap.AddOrUpdateSlice(gpus(name, 4))
	}
	_ = snap.AddOrUpdateClass(gpuClass("gpu", "example.com/gpu"))
	cost := func(in pods.CostInput) (float64, error) {
		if in.Node.Name == "node-b" {
			return 0, nil
		}
		return 1, nil
	}
	prefer := func(in pods.CostInput) ([]allocator.DeviceID, error) {
		return []allocator.DeviceID{{Driver: driver, Pool: in.Node.Name, Device: "gpu-2"}}, nil
	}
	c := pods.New(snap, pods.Options{Cost: cost, Prefer: prefer, NameSuffix: fixedSuffixes()})
	_ = c.AddOrUpdateTemplate(template("one-gpu", 1))
	p, err := c.Place(context.Background(), pod("train", "gpu=template:one-gpu"))
	if err != nil {
		panic(err)
	}
	r := p.Claims[0].Claim.Status.Allocation.Devices.Results[0]
	fmt.Println(p.Node, r.Device)
	// Output: node-b gpu-2
}
