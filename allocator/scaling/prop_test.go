package scaling_test

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/inventory"
)

// small keeps the first two GPUs of a profile, so that plans need many nodes.
func small(t tb, name string) inventory.Template {
	p := profile(t, name)
	p.Name = "small-" + name
	p.Node.GPUs = p.Node.GPUs[:2]
	return p
}

// TestPropScaleUpAnswersFit: whatever a scale-up plan says fits does fit when its nodes are added for
// real (their Node and instantiated slices in the snapshot) and the pods placed in order, and every
// type that did not take an unplaced unit says why.
func TestPropScaleUpAnswersFit(t *testing.T) {
	a100, h100 := small(t, "dgxa100"), small(t, "dgxh100")
	running := instance(t, h100, "node-0")
	rapid.Check(t, func(rt *rapid.T) {
		types := []scaling.NodeType{
			{Template: a100, Cost: rapid.Float64Range(0, 3).Draw(rt, "a100 cost"), Max: rapid.IntRange(0, 4).Draw(rt, "a100 max")},
			{Template: h100, Cost: rapid.Float64Range(0, 3).Draw(rt, "h100 cost"), Max: rapid.IntRange(0, 4).Draw(rt, "h100 max")},
		}
		var pending []scaling.Pending
		for i := range rapid.IntRange(1, 8).Draw(rt, "pending") {
			name := fmt.Sprintf("p%d", i)
			switch rapid.IntRange(0, 3).Draw(rt, "kind") {
			case 0:
				pending = append(pending, single(extPod(name, rapid.Int64Range(1, 3).Draw(rt, "gpus"))))
			case 1:
				pending = append(pending, single(claimPod(name, "mig-devices")))
			case 2:
				pending = append(pending, single(claimPod(name, "two-gpus")))
			case 3:
				pending = append(pending, gang(name, rapid.IntRange(1, 3).Draw(rt, "gang size"), "one-gpu"))
			}
		}
		var nodes []inventory.Instance
		if rapid.Bool().Draw(rt, "a running node") {
			nodes = append(nodes, running)
		}
		c := newCluster(rt, nodes, gangsOf(pending)...)
		p, err := scaling.New(c, types, scaling.Options{})
		must(rt, err)
		plan, err := p.ScaleUp(context.Background(), pending)
		must(rt, err)
		checkPlan(rt, c, pending, plan)
		for _, u := range plan.Unplaced {
			for _, tf := range u.Types {
				if tf.Reason == "" {
					rt.Errorf("%s: type %s without a reason", u.Pending, tf.Type)
				}
			}
		}
	})
}
