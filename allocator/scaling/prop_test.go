package scaling_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
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

// TestPropScaleDownAnswersHold: when ScaleDown says a node is removable, its pods are placed for real on
// the other nodes where it says; when it names a blocker, the pods before it move as it says and the
// blocker then fits nowhere.
func TestPropScaleDownAnswersHold(t *testing.T) {
	h100 := small(t, "dgxh100")
	nodes := []inventory.Instance{instance(t, h100, "node-0"), instance(t, h100, "node-1"), instance(t, h100, "node-2")}
	rapid.Check(t, func(rt *rapid.T) {
		c := newCluster(rt, nodes)
		var onVictim []*v1.Pod
		for i := range rapid.IntRange(0, 6).Draw(rt, "pods") {
			var p *v1.Pod
			name := fmt.Sprintf("p%d", i)
			if rapid.Bool().Draw(rt, "by claim") {
				p = claimPod(name, "one-gpu")
			} else {
				p = extPod(name, rapid.Int64Range(1, 2).Draw(rt, "gpus"))
			}
			p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": fmt.Sprintf("node-%d", rapid.IntRange(0, 2).Draw(rt, "node"))}
			if _, err := c.Place(context.Background(), p); err != nil {
				continue // the chosen node is full
			}
			bound := bind(rt, c, p)
			if bound.Spec.NodeName == "node-0" {
				bound.Spec.NodeSelector = nil
				onVictim = append(onVictim, bound)
			}
		}
		p, err := scaling.New(c, nil, scaling.Options{})
		must(rt, err)
		r, err := p.ScaleDown(context.Background(), "node-0", onVictim)
		must(rt, err)
		f := c.Fork()
		defer f.Snapshot().Discard()
		for _, pod := range onVictim {
			must(rt, f.Remove(pod))
		}
		must(rt, f.Snapshot().DeleteNode("node-0"))
		replace := func(i int) *v1.Pod {
			pod := onVictim[i].DeepCopy()
			pod.Spec.NodeName, pod.Status = "", v1.PodStatus{}
			return pod
		}
		for i, m := range r.Moves {
			pl, err := f.Place(context.Background(), replace(i))
			if err != nil || pl.Node != m.Node {
				rt.Fatalf("move %s to %s: placing it for real gives %v, %v", m.Pod, m.Node, pl, err)
			}
			must(rt, f.Assume(pl))
		}
		if r.Removable != (len(r.Moves) == len(onVictim)) {
			rt.Fatalf("removable=%v with %d of %d pods moved", r.Removable, len(r.Moves), len(onVictim))
		}
		if !r.Removable {
			if _, err := f.Place(context.Background(), replace(len(r.Moves))); err == nil {
				rt.Fatalf("blocker %s fits after the moves", r.Blocker)
			}
		}
	})
}
