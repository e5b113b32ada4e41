package allocator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
)

// TestNodeClassesRemembered: the classes a call found are remembered in the snapshot for the next call,
// and every kind of change that tells a node apart (or no longer does) is seen by the next call on the
// snapshot, and by none on another state (a fork, its parent).
func TestNodeClassesRemembered(t *testing.T) {
	ctx := context.Background()
	const netDriver = "net.example.com"
	tpl := eqTemplate{models: []string{"a", "a", "b"}, numa: []int{0, 1, 1}, memory: []int{0, 0, 0}}
	// A fleet of three identical nodes in zone a, and with shared a network-attached pool every node
	// in zone a sees (then a node's class depends on its labels, else only on its name).
	var shared bool
	newFleet := func(t *testing.T) (*allocator.Snapshot, []*v1.Node) {
		snap := allocator.NewSnapshot(allocator.Options{})
		for _, c := range []*resourceapi.DeviceClass{class("model-a", `device.attributes["gpu.example.com"].model == "a"`), class("net", `device.driver == "`+netDriver+`"`)} {
			if err := snap.AddOrUpdateClass(c); err != nil {
				t.Fatal(err)
			}
		}
		var nodes []*v1.Node
		for i := range 3 {
			name := fmt.Sprintf("node-%d", i)
			n := node(name, map[string]string{"zone": "a"})
			if err := snap.AddOrUpdateNode(n); err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, n)
			for _, s := range tpl.slices(name, name+"-", false) {
				if err := snap.AddOrUpdateSlice(s); err != nil {
					t.Fatal(err)
				}
			}
		}
		net := nodeSlice("net", "", netDriver, "net", devices("nic-0")...)
		net.Spec.NodeName = nil
		net.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}},
		}}}
		if shared {
			if err := snap.AddOrUpdateSlice(net); err != nil {
				t.Fatal(err)
			}
		}
		return snap, nodes
	}
	claims := func() []*resourceapi.ResourceClaim {
		if shared {
			return []*resourceapi.ResourceClaim{claim("c", exact("gpus", "model-a", 2), exact("nic", "net", 1))}
		}
		return []*resourceapi.ResourceClaim{claim("c", exact("gpus", "model-a", 2))}
	}
	classes := func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) []int {
		t.Helper()
		claims := claims()
		nc, err := snap.NodeClasses(ctx, claims)
		if err != nil {
			t.Fatal(err)
		}
		out, err := nc.AppendClasses(nil, nodes)
		if err != nil {
			t.Fatal(err)
		}
		// Class, node by node, agrees with AppendClasses on a second classification.
		nc, err = snap.NodeClasses(ctx, claims)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range nodes {
			if c, err := nc.Class(n); err != nil || c != out[i] {
				t.Fatalf("Class(%s) = %d, %v; AppendClasses gave %d", n.Name, c, err, out[i])
			}
		}
		return out
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	expect := func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node, want ...int) {
		t.Helper()
		if got := classes(t, snap, nodes); !slices.Equal(got, want) {
			t.Errorf("classes %v, want %v", got, want)
		}
	}
	used := func(name, nodeName string) *resourceapi.ResourceClaim {
		return allocatedClaim(name, result(eqDriver, nodeName, nodeName+"-dev-0"))
	}
	type change struct {
		name string
		// change changes the snapshot (or the nodes) after a first classification, then undo undoes it;
		// want are the classes after the change.
		change, undo func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node)
		want         []int
		// labels: the change is seen only where a slice selects nodes by label.
		labels bool
	}
	changes := []change{
		{
			name: "a slice update",
			change: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				s := tpl.slices("node-1", "node-1-", false)[0]
				s.Spec.Devices = s.Spec.Devices[1:]
				must(t, snap.AddOrUpdateSlice(s))
			},
			undo: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				must(t, snap.AddOrUpdateSlice(tpl.slices("node-1", "node-1-", false)[0]))
			},
			want: []int{0, 1, 0},
		},
		{
			name: "a slice deleted",
			change: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				must(t, snap.DeleteSlice("node-1-gpus"))
			},
			undo: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				must(t, snap.AddOrUpdateSlice(tpl.slices("node-1", "node-1-", false)[0]))
			},
			want: []int{0, 1, 0},
		},
		{
			name: "a claim allocated, then freed",
			change: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				must(t, snap.AddOrUpdateClaim(used("used", "node-1")))
			},
			undo: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				must(t, snap.DeleteClaim("default", "used"))
			},
			want: []int{0, 1, 0},
		},
		{
			name:   "a node's labels changed in the snapshot",
			labels: true,
			change: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				nodes[1] = node("node-1", map[string]string{"zone": "b"})
				must(t, snap.AddOrUpdateNode(nodes[1]))
			},
			undo: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				nodes[1] = node("node-1", map[string]string{"zone": "a"})
				must(t, snap.AddOrUpdateNode(nodes[1]))
			},
			want: []int{0, 1, 0},
		},
		{
			name:   "a node's labels changed in the object passed again, the snapshot unchanged",
			labels: true,
			change: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				nodes[1].Labels["zone"] = "b"
			},
			undo: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				nodes[1].Labels["zone"] = "a"
			},
			want: []int{0, 1, 0},
		},
		{
			name: "a taint rule added, then deleted",
			change: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				must(t, snap.AddOrUpdateTaintRule(&resourceapi.DeviceTaintRule{
					ObjectMeta: metav1.ObjectMeta{Name: "rule"},
					Spec: resourceapi.DeviceTaintRuleSpec{
						DeviceSelector: &resourceapi.DeviceTaintSelector{Pool: ptr("node-0")},
						Taint:          resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
					},
				}))
			},
			undo: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				must(t, snap.DeleteTaintRule("rule"))
			},
			want: []int{0, 1, 1},
		},
		{
			name: "a device class changed",
			change: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				must(t, snap.AddOrUpdateClass(class("model-a", `device.attributes["gpu.example.com"].model == "a" && !device.attributes["gpu.example.com"].uuid.startsWith("node-2-")`)))
			},
			undo: func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node) {
				must(t, snap.AddOrUpdateClass(class("model-a", `device.attributes["gpu.example.com"].model == "a"`)))
			},
			want: []int{0, 0, 1},
		},
	}
	for _, shared = range []bool{true, false} {
		for _, tc := range changes {
			if tc.labels && !shared {
				continue
			}
			t.Run(fmt.Sprintf("%s, shared pool %v", tc.name, shared), func(t *testing.T) {
				snap, nodes := newFleet(t)
				expect(t, snap, nodes, 0, 0, 0)
				tc.change(t, snap, nodes)
				expect(t, snap, nodes, tc.want...)
				tc.undo(t, snap, nodes)
				expect(t, snap, nodes, 0, 0, 0)
			})
		}
		t.Run(fmt.Sprintf("a fork and its parent each see their own changes, shared pool %v", shared), func(t *testing.T) {
			snap, nodes := newFleet(t)
			expect(t, snap, nodes, 0, 0, 0)
			fork := snap.Fork()
			expect(t, fork, nodes, 0, 0, 0)
			must(t, fork.AddOrUpdateClaim(used("in-fork", "node-1")))
			expect(t, fork, nodes, 0, 1, 0)
			expect(t, snap, nodes, 0, 0, 0)
			must(t, snap.AddOrUpdateClaim(used("in-parent", "node-2")))
			expect(t, snap, nodes, 0, 0, 1)
			expect(t, fork, nodes, 0, 1, 0)
			// A fork of the fork frees what the fork allocated.
			inner := fork.Fork()
			must(t, inner.DeleteClaim("default", "in-fork"))
			expect(t, inner, nodes, 0, 0, 0)
			expect(t, fork, nodes, 0, 1, 0)
			must(t, inner.Discard())
			must(t, fork.Commit())
			expect(t, snap, nodes, 0, 1, 1)
		})
	}
	t.Run("a node's declared features changed in the object passed again, where devices skip node operations", func(t *testing.T) {
		snap := allocator.NewSnapshot(allocator.Options{Features: ptr(allocator.AllFeatures())})
		must(t, snap.AddOrUpdateClass(class("model-a", `device.attributes["gpu.example.com"].model == "a"`)))
		var nodes []*v1.Node
		for i := range 3 {
			name := fmt.Sprintf("node-%d", i)
			nodes = append(nodes, node(name, nil))
			s := tpl.slices(name, name+"-", false)[0]
			s.Spec.SkipNodeOperations = []resourceapi.SkipNodeOperation{resourceapi.SkipNodeOperationAll}
			must(t, snap.AddOrUpdateSlice(s))
		}
		claims := []*resourceapi.ResourceClaim{claim("c", exact("gpus", "model-a", 2))}
		classes := func() []int {
			nc, err := snap.NodeClasses(ctx, claims)
			must(t, err)
			out, err := nc.AppendClasses(nil, nodes)
			must(t, err)
			return out
		}
		if got := classes(); !slices.Equal(got, []int{0, 0, 0}) {
			t.Errorf("classes %v, want [0 0 0]", got)
		}
		nodes[2].Status.DeclaredFeatures = []string{"DRAOptionalNodeOperations"}
		if got := classes(); !slices.Equal(got, []int{0, 0, 1}) {
			t.Errorf("classes %v, want [0 0 1]", got)
		}
		if fits, err := snap.Fits(ctx, nodes[2], claims); err != nil || !fits {
			t.Errorf("Fits on the declaring node: %v, %v", fits, err)
		}
		if fits, err := snap.Fits(ctx, nodes[0], claims); err != nil || fits {
			t.Errorf("Fits on a node that does not declare the feature: %v, %v", fits, err)
		}
	})
}

// TestPropRememberedNodeClassesAnswerAlike: classes found again from what an earlier call remembered,
// after a few changes of the snapshot or of a fork of it (devices allocated and freed, taint rules), still
// put together only nodes that get the same answer from Fits and the same allocation but for names, in
// the state that changed and in the one that did not.
func TestPropRememberedNodeClassesAnswerAlike(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		f := drawFleet(t)
		claims := drawClaims(t)
		alike := func(f eqFleet) {
			nc, err := f.snap.NodeClasses(ctx, claims)
			if err != nil {
				t.Fatal(err)
			}
			classes, err := nc.AppendClasses(nil, f.nodes)
			if err != nil {
				t.Fatal(err)
			}
			first := map[int]int{}
			for i, cls := range classes {
				j, ok := first[cls]
				if !ok {
					first[cls] = i
					continue
				}
				oi, oj := f.outcome(t, ctx, i, claims), f.outcome(t, ctx, j, claims)
				if oi.fits != oj.fits || oi.err != oj.err || !slices.Equal(oi.devices, oj.devices) {
					t.Fatalf("nodes %s and %s are in class %d but answer %+v and %+v", f.nodes[i].Name, f.nodes[j].Name, cls, oi, oj)
				}
			}
		}
		alike(f)
		changed := f
		if rapid.Bool().Draw(t, "fork") {
			changed.snap = f.snap.Fork()
		}
		for i := range rapid.IntRange(1, 3).Draw(t, "changes") {
			n := rapid.IntRange(0, len(f.nodes)-1).Draw(t, fmt.Sprintf("change-%d-node", i))
			name := f.nodes[n].Name
			want := rapid.IntRange(0, len(f.index[n])-1).Draw(t, fmt.Sprintf("change-%d-device", i))
			var dev string
			for d, di := range f.index[n] {
				if di == want {
					dev = d
				}
			}
			var err error
			switch rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("change-%d-kind", i)) {
			case 0:
				err = changed.snap.AddOrUpdateClaim(allocatedClaim(fmt.Sprintf("new-%d", i), result(eqDriver, name, dev)))
			case 1:
				err = changed.snap.DeleteClaim("default", fmt.Sprintf("used-%s-%d", name, f.index[n][dev]))
			case 2:
				err = changed.snap.AddOrUpdateTaintRule(&resourceapi.DeviceTaintRule{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("new-rule-%d", i)},
					Spec: resourceapi.DeviceTaintRuleSpec{
						DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr(eqDriver), Pool: ptr(name), Device: ptr(dev)},
						Taint:          resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
					},
				})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		alike(changed)
		alike(f)
	})
}
