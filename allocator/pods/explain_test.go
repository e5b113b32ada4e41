package pods_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/fuzz"
)

// modelGPUs publishes n GPUs of a model on the node.
func modelGPUs(nodeName, model string, n int) *resourceapi.ResourceSlice {
	s := gpus(nodeName, n)
	for i := range s.Spec.Devices {
		m := model
		s.Spec.Devices[i].Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: &m}}
	}
	return s
}

// rackCluster has three nodes with A100s, two with H100s that a DeviceTaintRule takes out for a
// firmware rollout, and a cordoned node; the class gpu-h100 selects H100s and claim default/train wants
// one.
func rackCluster(t testing.TB) *pods.Cluster {
	snap := allocator.NewSnapshot(allocator.Options{})
	add := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"a-1", "a-2", "a-3"} {
		add(snap.AddOrUpdateNode(node(n, nil)))
		add(snap.AddOrUpdateSlice(modelGPUs(n, "A100", 2)))
	}
	for _, n := range []string{"h-1", "h-2"} {
		add(snap.AddOrUpdateNode(node(n, nil)))
		add(snap.AddOrUpdateSlice(modelGPUs(n, "H100", 2)))
	}
	cordoned := node("h-3", nil)
	cordoned.Spec.Taints = []v1.Taint{{Key: "node.kubernetes.io/unschedulable", Effect: v1.TaintEffectNoSchedule}}
	add(snap.AddOrUpdateNode(cordoned))
	add(snap.AddOrUpdateSlice(modelGPUs("h-3", "H100", 2)))
	add(snap.AddOrUpdateClass(&resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-h100"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["` + driver + `"].model == "H100"`},
		}}},
	}))
	d := driver
	add(snap.AddOrUpdateTaintRule(&resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "firmware-rollout"},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &d},
			Taint:          resourceapi.DeviceTaint{Key: "maintenance.example.com/firmware", Effect: resourceapi.DeviceTaintEffectNoSchedule},
		},
	}))
	train := claim("train", 1)
	train.Spec.Devices.Requests[0].Exactly.DeviceClassName = "gpu-h100"
	add(snap.AddOrUpdateClaim(train))
	return pods.New(snap, pods.Options{})
}

func TestExplainGroupsNodesByTheirMainReason(t *testing.T) {
	c := rackCluster(t)
	e, err := c.Explain(context.Background(), pod("train", "gpu=claim:train"))
	if err != nil {
		t.Fatal(err)
	}
	want := []pods.ReasonGroup{
		{Reason: `claim default/train, request "gpu": class gpu-h100 matched no device`, Nodes: 3, Examples: []string{"a-1", "a-2", "a-3"}},
		{Reason: `claim default/train, request "gpu": 2 of 2 matching devices tainted maintenance.example.com/firmware:NoSchedule by DeviceTaintRule firmware-rollout`,
			Nodes: 2, Examples: []string{"h-1", "h-2"}},
		{Reason: "node(s) had untolerated taint {node.kubernetes.io/unschedulable: }", Nodes: 1, Examples: []string{"h-3"}},
	}
	if !reflect.DeepEqual(e.Groups, want) {
		t.Errorf("groups\n got %+v\nwant %+v", e.Groups, want)
	}
	if len(e.FitsOn) != 0 || len(e.Nodes) != 6 {
		t.Errorf("fits on %v, %d nodes", e.FitsOn, len(e.Nodes))
	}
	if e.Nodes[0].Claims == nil || e.Nodes[5].Claims != nil {
		t.Errorf("claims explained on a-1: %v, on the cordoned h-3: %v", e.Nodes[0].Claims != nil, e.Nodes[5].Claims != nil)
	}
	if !strings.HasPrefix(e.String(), "3 nodes: claim default/train") {
		t.Errorf("message %q", e.String())
	}
	if _, err := json.Marshal(e); err != nil {
		t.Error(err)
	}
	// Place agrees: the pod fits nowhere.
	if _, err := c.Place(context.Background(), pod("train", "gpu=claim:train")); err == nil {
		t.Error("placed a pod the explanation says fits nowhere")
	}
}

func TestExplainMessageStaysShort(t *testing.T) {
	e := &pods.Explanation{}
	for i := range 100 {
		e.Groups = append(e.Groups, pods.ReasonGroup{Reason: strings.Repeat("x", 50) + string(rune('a'+i%26)), Nodes: 1})
	}
	msg := e.String()
	if len(msg) > 1100 || !strings.HasSuffix(msg, " nodes more") {
		t.Errorf("message of %d bytes: %q", len(msg), msg[len(msg)-40:])
	}
}

// TestPropExplainAgreesWithPlace: on generated clusters a pod fits on some node of the explanation
// exactly when Place places it, the chosen node among them; the groups count every other node once.
func TestPropExplainAgreesWithPlace(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(propOptions()).Draw(t, "cluster")
		ops := drawOps(t, c)
		if !ops[0].place {
			return
		}
		cl := newCluster(t, c)
		p := pod("pod-0", ops[0].claims...)
		p.Namespace = fuzz.Namespace
		e, eerr := cl.Explain(ctx, p)
		pl, perr := cl.Place(ctx, p)
		switch {
		case perr == nil:
			if eerr != nil || !slices.Contains(e.FitsOn, pl.Node) {
				t.Fatalf("placed on %s; explanation %v, %v", pl.Node, eerr, e)
			}
		case errors.Is(perr, pods.ErrNoNode):
			if eerr != nil || len(e.FitsOn) > 0 {
				t.Fatalf("fits nowhere: %v; explanation %v, %v", perr, eerr, e)
			}
		default:
			return
		}
		n := len(e.FitsOn)
		for _, g := range e.Groups {
			n += g.Nodes
		}
		if n != len(e.Nodes) || n != len(cl.Snapshot().Nodes()) {
			t.Fatalf("groups and fitting nodes count %d nodes, there are %d", n, len(cl.Snapshot().Nodes()))
		}
		// Grouping only merges: nodes with one reason are one group, and a group of one node reads as
		// that node's reason (the group's wording follows the claims' headline).
		reasons := map[string]string{}
		for _, ne := range e.Nodes {
			if !ne.Fits {
				reasons[ne.Node] = ne.Reason
			}
		}
		distinct := map[string]bool{}
		for _, r := range reasons {
			distinct[r] = true
		}
		if len(e.Groups) > len(distinct) {
			t.Fatalf("%d groups for %d distinct reasons", len(e.Groups), len(distinct))
		}
		for _, g := range e.Groups {
			if g.Nodes == 1 && g.Reason != reasons[g.Examples[0]] {
				t.Fatalf("group of node %s reads %q, the node %q", g.Examples[0], g.Reason, reasons[g.Examples[0]])
			}
		}
	})
}
