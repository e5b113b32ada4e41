package scaling_test

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/inventory"
)

func TestScaleDown(t *testing.T) {
	h100 := profile(t, "dgxh100")
	for _, tc := range []struct {
		name string
		// GPUs of the pods on node-1 (to be removed) and on node-2
		on1, on2  []int64
		removable bool
		blocker   string
	}{
		{"an empty node is removable", nil, []int64{8}, true, ""},
		{"pods move into the other node's free GPUs", []int64{2, 2}, []int64{4}, true, ""},
		// node-2 has 2 free: the first pod moves, the second has nowhere to go.
		{"the second pod finds no room", []int64{2, 2}, []int64{6}, false, "default/one-1"},
		// Removing the pod frees 8 GPUs on node-1, but node-1 goes away; node-2 has 7.
		{"freed devices of the removed node do not count", []int64{8}, []int64{1}, false, "default/one-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, []inventory.Instance{instance(t, h100, "node-1"), instance(t, h100, "node-2")})
			// Fill node-2 first by cordoning node-1 with a selector, as a test fixture.
			var onNode1 []*v1.Pod
			for i, n := range tc.on2 {
				p := extPod("two-"+string(rune('0'+i)), n)
				p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "node-2"}
				bind(t, c, p)
			}
			for i, n := range tc.on1 {
				p := extPod("one-"+string(rune('0'+i)), n)
				p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "node-1"}
				bound := bind(t, c, p)
				bound.Spec.NodeSelector = nil // the moved pod may go anywhere
				onNode1 = append(onNode1, bound)
			}
			before := len(c.Snapshot().Claims(""))
			p, err := scaling.New(c, nil, scaling.Options{})
			must(t, err)
			r, err := p.ScaleDown(context.Background(), "node-1", onNode1)
			must(t, err)
			if r.Removable != tc.removable || r.Blocker != tc.blocker {
				t.Fatalf("removable=%v blocker %q (%s), want %v %q", r.Removable, r.Blocker, r.Reason, tc.removable, tc.blocker)
			}
			if len(c.Snapshot().Claims("")) != before || len(c.Snapshot().Nodes()) != 2 {
				t.Error("ScaleDown changed the cluster")
			}
			// Verify the answer by doing it: without node-1, every move is placed for real.
			f := c.Fork()
			defer f.Snapshot().Discard()
			for _, pod := range onNode1 {
				must(t, f.Remove(pod))
			}
			must(t, f.Snapshot().DeleteNode("node-1"))
			for i, m := range r.Moves {
				pod := onNode1[i].DeepCopy()
				pod.Spec.NodeName, pod.Status = "", v1.PodStatus{}
				pl, err := f.Place(context.Background(), pod)
				if err != nil || pl.Node != m.Node || m.Node == "node-1" {
					t.Fatalf("move %s to %s: placing it for real: %v", m.Pod, m.Node, err)
				}
				must(t, f.Assume(pl))
			}
		})
	}
}

func TestScaleDownRejectsPodsOfAnotherNode(t *testing.T) {
	p, err := scaling.New(newCluster(t, nil), nil, scaling.Options{})
	must(t, err)
	pod := extPod("elsewhere", 1)
	pod.Spec.NodeName = "node-2"
	_, err = p.ScaleDown(context.Background(), "node-1", []*v1.Pod{pod})
	if err == nil || err.Error() != `Pod default/elsewhere: spec.nodeName: bound to "node-2", not to "node-1"` {
		t.Errorf("err = %v", err)
	}
}

// TestScaleDownOfAnUnknownNodeIsAnError: a node the cluster does not hold cannot be removed, and
// saying it can (nothing to move, nothing blocks) would let an autoscaler act on a typo or on a
// node deleted meanwhile.
func TestScaleDownOfAnUnknownNodeIsAnError(t *testing.T) {
	c := newCluster(t, []inventory.Instance{instance(t, profile(t, "dgxh100"), "node-1")})
	p, err := scaling.New(c, nil, scaling.Options{})
	must(t, err)
	for name, want := range map[string]string{"node-9": "Node node-9: node not in the cluster", "": `Node "": node not in the cluster`} {
		r, err := p.ScaleDown(context.Background(), name, nil)
		if r != nil || !errors.Is(err, scaling.ErrUnknownNode) || !errors.Is(err, allocator.ErrInvalidInput) || err.Error() != want {
			t.Errorf("ScaleDown(%q) = %+v, %v; want an error naming the node, wrapping ErrUnknownNode", name, r, err)
		}
	}
	if r, err := p.ScaleDown(context.Background(), "node-1", nil); err != nil || !r.Removable {
		t.Errorf("ScaleDown(node-1) = %+v, %v; want removable", r, err)
	}
}
