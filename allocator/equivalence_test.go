package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
)

const eqDriver = "gpu.example.com"

// eqFleet is a generated fleet: nodes built from a few templates, each device with an attribute of its
// own (uuid) that only some selectors read.
type eqFleet struct {
	snap  *allocator.Snapshot
	nodes []*v1.Node
	// index maps a node's device name to its position in the node's template.
	index []map[string]int
}

// eqTemplate is a node's devices: model and numa per device, and optionally shared counters that the
// devices consume from.
type eqTemplate struct {
	models   []string
	numa     []int
	memory   []int // memory counter drawn per device, 0 without counters
	counters bool
}

func drawTemplate(t *rapid.T, label string) eqTemplate {
	n := rapid.IntRange(1, 4).Draw(t, label+"-devices")
	tpl := eqTemplate{counters: rapid.Bool().Draw(t, label+"-counters")}
	for i := range n {
		tpl.models = append(tpl.models, rapid.SampledFrom([]string{"a", "b"}).Draw(t, fmt.Sprintf("%s-model-%d", label, i)))
		tpl.numa = append(tpl.numa, rapid.IntRange(0, 1).Draw(t, fmt.Sprintf("%s-numa-%d", label, i)))
		m := 0
		if tpl.counters {
			m = rapid.IntRange(1, 4).Draw(t, fmt.Sprintf("%s-mem-%d", label, i))
		}
		tpl.memory = append(tpl.memory, m)
	}
	return tpl
}

// slices are the node's slices: with counters, a slice of them and one of devices in one pool.
func (tpl eqTemplate) slices(nodeName, prefix string, taintFirst bool) []*resourceapi.ResourceSlice {
	s := nodeSlice(nodeName+"-gpus", nodeName, eqDriver, nodeName)
	out := []*resourceapi.ResourceSlice{s}
	if tpl.counters {
		c := withPool(nodeSlice(nodeName+"-counters", nodeName, eqDriver, nodeName), 1, 2)
		c.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu", Counters: map[string]resourceapi.Counter{"memory": {Value: quantity("4")}}}}
		withPool(s, 1, 2)
		out = append(out, c)
	}
	for i := range tpl.models {
		d := device(fmt.Sprintf("%sdev-%d", prefix, i), map[string]any{"model": tpl.models[i], "numa": tpl.numa[i], "uuid": fmt.Sprintf("%s-%d", nodeName, i)})
		if tpl.counters {
			d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu", Counters: map[string]resourceapi.Counter{"memory": {Value: quantity(fmt.Sprint(tpl.memory[i]))}}}}
		}
		if taintFirst && i == 0 {
			d.Taints = []resourceapi.DeviceTaint{{Key: "broken", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	return out
}

func drawFleet(t *rapid.T) eqFleet {
	snap := allocator.NewSnapshot(allocator.Options{})
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*resourceapi.DeviceClass{
		class("any"),
		class("model-a", `device.attributes["gpu.example.com"].model == "a"`),
		class("first-uuid", `device.attributes["gpu.example.com"].uuid.endsWith("-0")`),
		class("node-1", `device.attributes["gpu.example.com"].uuid.startsWith("node-1-")`),
	} {
		must(snap.AddOrUpdateClass(c))
	}
	templates := []eqTemplate{drawTemplate(t, "t0")}
	if rapid.Bool().Draw(t, "second-template") {
		templates = append(templates, drawTemplate(t, "t1"))
	}
	f := eqFleet{snap: snap}
	n := rapid.IntRange(2, 6).Draw(t, "nodes")
	for i := range n {
		name := fmt.Sprintf("node-%d", i)
		tpl := templates[rapid.IntRange(0, len(templates)-1).Draw(t, name+"-template")]
		prefix := ""
		if rapid.Bool().Draw(t, name+"-own-names") {
			prefix = name + "-"
		}
		sl := tpl.slices(name, prefix, rapid.IntRange(0, 4).Draw(t, name+"-tainted") == 0)
		s := sl[0]
		nd := node(name, nil)
		must(snap.AddOrUpdateNode(nd))
		for _, s := range sl {
			must(snap.AddOrUpdateSlice(s))
		}
		f.nodes = append(f.nodes, nd)
		index := map[string]int{}
		for di, d := range s.Spec.Devices {
			index[d.Name] = di
		}
		f.index = append(f.index, index)
		// Partly used nodes: some devices allocated, by claims or by a DeviceTaintRule's taint.
		for di, d := range s.Spec.Devices {
			switch rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("%s-use-%d", name, di)) {
			case 0:
				must(snap.AddOrUpdateClaim(allocatedClaim(fmt.Sprintf("used-%s-%d", name, di), result(eqDriver, name, d.Name))))
			case 1:
				must(snap.AddOrUpdateTaintRule(&resourceapi.DeviceTaintRule{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rule-%s-%d", name, di)},
					Spec: resourceapi.DeviceTaintRuleSpec{
						DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr(eqDriver), Pool: ptr(name), Device: ptr(d.Name)},
						Taint:          resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
					},
				}))
			}
		}
	}
	return f
}

func drawClaims(t *rapid.T) []*resourceapi.ResourceClaim {
	classes := []string{"any", "model-a", "first-uuid", "node-1"}
	var reqs []resourceapi.DeviceRequest
	for i := range rapid.IntRange(1, 2).Draw(t, "requests") {
		name := fmt.Sprintf("r%d", i)
		cls := rapid.SampledFrom(classes).Draw(t, name+"-class")
		count := int64(rapid.IntRange(1, 3).Draw(t, name+"-count"))
		if rapid.IntRange(0, 3).Draw(t, name+"-kind") == 0 {
			reqs = append(reqs, firstAvailable(name, sub("big", cls, count+1), sub("small", rapid.SampledFrom(classes).Draw(t, name+"-alt"), count)))
			continue
		}
		var sels []string
		if rapid.IntRange(0, 3).Draw(t, name+"-selector") == 0 {
			sels = append(sels, `device.attributes["gpu.example.com"].numa == 0`)
		}
		r := exact(name, cls, count, sels...)
		if rapid.IntRange(0, 4).Draw(t, name+"-tolerate") == 0 {
			r.Exactly.Tolerations = []resourceapi.DeviceToleration{{Key: "maintenance", Operator: resourceapi.DeviceTolerationOpExists}}
		}
		reqs = append(reqs, r)
	}
	c := claim("claim", reqs...)
	if rapid.Bool().Draw(t, "match-numa") {
		c = withConstraints(c, matchAttr(eqDriver+"/numa"))
	}
	return []*resourceapi.ResourceClaim{c}
}

// classOutcome is an allocation on one node with names replaced by positions: per result the request and
// the device's index in its node's template.
type classOutcome struct {
	fits    bool
	err     bool
	devices []string
}

func (f eqFleet) outcome(t *rapid.T, ctx context.Context, i int, claims []*resourceapi.ResourceClaim) classOutcome {
	fits, ferr := f.snap.Fits(ctx, f.nodes[i], claims)
	res, err := f.snap.Allocate(ctx, f.nodes[i], claims)
	var o classOutcome
	switch {
	case err == nil:
		o.fits = true
		for _, r := range res {
			for _, d := range r.Devices.Results {
				if d.Pool != f.nodes[i].Name {
					t.Fatalf("node %s: result names pool %s", f.nodes[i].Name, d.Pool)
				}
				di, ok := f.index[i][d.Device]
				if !ok {
					t.Fatalf("node %s: result names device %s, which is not the node's", f.nodes[i].Name, d.Device)
				}
				o.devices = append(o.devices, fmt.Sprintf("%s:%d", d.Request, di))
			}
			sel := r.NodeSelector
			if sel == nil || len(sel.NodeSelectorTerms) != 1 || len(sel.NodeSelectorTerms[0].MatchFields) != 1 || sel.NodeSelectorTerms[0].MatchFields[0].Values[0] != f.nodes[i].Name {
				t.Fatalf("node %s: allocation not pinned to the node: %v", f.nodes[i].Name, sel)
			}
		}
	case errors.Is(err, allocator.ErrUnsatisfiable):
	default:
		o.err = true
	}
	if (ferr != nil) != o.err || ferr == nil && fits != o.fits {
		t.Fatalf("node %s: Fits %v, %v; Allocate %v", f.nodes[i].Name, fits, ferr, err)
	}
	return o
}

// TestPropNodeClassesAnswerAlike: nodes of one class get the same answer from Fits and the same allocation
// from Allocate but for names (each node's own devices and pool), on fleets of nodes built from a few
// templates, with device names of their own or shared, partly used, tainted by the slice or by rules, and
// claims whose selectors may read a per-node attribute.
func TestPropNodeClassesAnswerAlike(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		f := drawFleet(t)
		claims := drawClaims(t)
		nc, err := f.snap.NodeClasses(ctx, claims)
		if err != nil {
			t.Fatal(err)
		}
		first := map[int]int{}
		for i, n := range f.nodes {
			cls, err := nc.Class(n)
			if err != nil {
				t.Fatal(err)
			}
			j, ok := first[cls]
			if !ok {
				first[cls] = i
				continue
			}
			oi, oj := f.outcome(t, ctx, i, claims), f.outcome(t, ctx, j, claims)
			if oi.fits != oj.fits || oi.err != oj.err || !slices.Equal(oi.devices, oj.devices) {
				t.Fatalf("nodes %s and %s are in class %d but answer %+v and %+v", n.Name, f.nodes[j].Name, cls, oi, oj)
			}
		}
	})
}

// TestNodeClasses: what puts nodes in one class and what tells them apart.
func TestNodeClasses(t *testing.T) {
	ctx := context.Background()
	tpl := eqTemplate{models: []string{"a", "a", "b"}, numa: []int{0, 1, 1}, memory: []int{0, 0, 0}}
	newFleet := func(t *testing.T, n int) (*allocator.Snapshot, []*v1.Node) {
		snap := allocator.NewSnapshot(allocator.Options{})
		for _, c := range []*resourceapi.DeviceClass{class("model-a", `device.attributes["gpu.example.com"].model == "a"`), class("node-1", `device.attributes["gpu.example.com"].uuid.startsWith("node-1-")`)} {
			if err := snap.AddOrUpdateClass(c); err != nil {
				t.Fatal(err)
			}
		}
		var nodes []*v1.Node
		for i := range n {
			name := fmt.Sprintf("node-%d", i)
			nodes = append(nodes, node(name, nil))
			for _, s := range tpl.slices(name, name+"-", false) {
				if err := snap.AddOrUpdateSlice(s); err != nil {
					t.Fatal(err)
				}
			}
		}
		return snap, nodes
	}
	classes := func(t *testing.T, snap *allocator.Snapshot, nodes []*v1.Node, claims ...*resourceapi.ResourceClaim) []int {
		nc, err := snap.NodeClasses(ctx, claims)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, n := range nodes {
			c, err := nc.Class(n)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		return out
	}
	modelA := claim("c", exact("r", "model-a", 2))
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, snap *allocator.Snapshot)
		claims []*resourceapi.ResourceClaim
		want   []int
	}{
		{name: "identical nodes differing in names and an attribute nothing reads are one class", claims: []*resourceapi.ResourceClaim{modelA}, want: []int{0, 0, 0}},
		{name: "a selector reading the per-node attribute tells its node apart", claims: []*resourceapi.ResourceClaim{claim("c", exact("r", "node-1", 1))}, want: []int{0, 1, 0}},
		{name: "a constraint on the per-node attribute tells every node apart", claims: []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("r", "model-a", 2)), matchAttr(eqDriver+"/uuid"))}, want: []int{0, 1, 2}},
		{name: "a constraint on an attribute equal on every node keeps them together", claims: []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("r", "model-a", 2)), matchAttr(eqDriver+"/numa"))}, want: []int{0, 0, 0}},
		{name: "a device in use tells its node apart", change: func(t *testing.T, snap *allocator.Snapshot) {
			if err := snap.AddOrUpdateClaim(allocatedClaim("used", result(eqDriver, "node-2", "node-2-dev-0"))); err != nil {
				t.Fatal(err)
			}
		}, claims: []*resourceapi.ResourceClaim{modelA}, want: []int{0, 0, 1}},
		{name: "a DeviceTaintRule tells its node apart", change: func(t *testing.T, snap *allocator.Snapshot) {
			if err := snap.AddOrUpdateTaintRule(&resourceapi.DeviceTaintRule{
				ObjectMeta: metav1.ObjectMeta{Name: "rule"},
				Spec: resourceapi.DeviceTaintRuleSpec{
					DeviceSelector: &resourceapi.DeviceTaintSelector{Pool: ptr("node-0")},
					Taint:          resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
				},
			}); err != nil {
				t.Fatal(err)
			}
		}, claims: []*resourceapi.ResourceClaim{modelA}, want: []int{0, 1, 1}},
		{name: "a request for all devices is not classified", claims: []*resourceapi.ResourceClaim{claim("c", allOf("r", "model-a"))}, want: []int{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, nodes := newFleet(t, 3)
			if tc.change != nil {
				tc.change(t, snap)
			}
			if got := classes(t, snap, nodes, tc.claims...); !slices.Equal(got, tc.want) {
				t.Errorf("classes %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a change of the snapshot after NodeClasses leaves every node alone", func(t *testing.T) {
		snap, nodes := newFleet(t, 2)
		nc, err := snap.NodeClasses(ctx, []*resourceapi.ResourceClaim{modelA})
		if err != nil {
			t.Fatal(err)
		}
		if err := snap.AddOrUpdateClaim(allocatedClaim("used", result(eqDriver, "node-1", "node-1-dev-0"))); err != nil {
			t.Fatal(err)
		}
		a, _ := nc.Class(nodes[0])
		b, _ := nc.Class(nodes[1])
		if a == b {
			t.Errorf("both nodes in class %d after the snapshot changed", a)
		}
	})
}
