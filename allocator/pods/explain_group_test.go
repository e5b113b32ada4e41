package pods_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// TestExplainGroupsByReasonNotByCounts: 200 nodes each short of GPUs because other claims hold 1 to 8
// of their 8 (a different claim on each node) fail for one reason and are one group, with the counts as
// a range and the holders as the first and how many others; nodes blocked by two different
// DeviceTaintRules, or by a node taint, are groups of their own.
func TestExplainGroupsByReasonNotByCounts(t *testing.T) {
	snap := allocator.NewSnapshot(allocator.Options{})
	must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	const n = 200
	for i := range n {
		name := fmt.Sprintf("n-%03d", i)
		must(t, snap.AddOrUpdateNode(node(name, nil)))
		must(t, snap.AddOrUpdateSlice(gpus(name, 8)))
		holder := claim(fmt.Sprintf("holder-%03d", i), int64(i%8+1))
		holder.Status.Allocation = &resourceapi.AllocationResult{}
		for d := range i%8 + 1 {
			holder.Status.Allocation.Devices.Results = append(holder.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
				Request: "gpu", Driver: driver, Pool: name, Device: fmt.Sprintf("gpu-%d", d)})
		}
		must(t, snap.AddOrUpdateClaim(holder))
	}
	for _, rule := range []string{"rule-a", "rule-b"} {
		name := "t-" + rule
		must(t, snap.AddOrUpdateNode(node(name, nil)))
		must(t, snap.AddOrUpdateSlice(gpus(name, 8)))
		must(t, snap.AddOrUpdateTaintRule(&resourceapi.DeviceTaintRule{
			ObjectMeta: metav1.ObjectMeta{Name: rule},
			Spec: resourceapi.DeviceTaintRuleSpec{
				DeviceSelector: &resourceapi.DeviceTaintSelector{Pool: ptr(name)},
				Taint:          resourceapi.DeviceTaint{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
			},
		}))
	}
	cordoned := node("z-cordoned", nil)
	cordoned.Spec.Taints = []v1.Taint{{Key: "node.kubernetes.io/unschedulable", Effect: v1.TaintEffectNoSchedule}}
	must(t, snap.AddOrUpdateNode(cordoned))
	must(t, snap.AddOrUpdateClaim(claim("big", 8)))
	c := pods.New(snap, pods.Options{})

	e, err := c.Explain(context.Background(), pod("train", "gpu=claim:big"))
	must(t, err)
	want := []pods.ReasonGroup{
		{Reason: `claim default/big, request "gpu": 1–8 of 8 matching devices allocated to ResourceClaim default/holder-000 and 199 others`,
			Nodes: n, Examples: []string{"n-000", "n-001", "n-002"}},
		{Reason: `claim default/big, request "gpu": 8 of 8 matching devices tainted example.com/maintenance:NoSchedule by DeviceTaintRule rule-a`,
			Nodes: 1, Examples: []string{"t-rule-a"}},
		{Reason: `claim default/big, request "gpu": 8 of 8 matching devices tainted example.com/maintenance:NoSchedule by DeviceTaintRule rule-b`,
			Nodes: 1, Examples: []string{"t-rule-b"}},
		{Reason: "node(s) had untolerated taint {node.kubernetes.io/unschedulable: }", Nodes: 1, Examples: []string{"z-cordoned"}},
	}
	if !reflect.DeepEqual(e.Groups, want) {
		t.Errorf("%d groups:\n%s\nwant\n%s", len(e.Groups), groupLines(e.Groups), groupLines(want))
	}
	// Each node keeps its own reason, with its own counts and holder.
	if got, want := e.Nodes[9].Reason, `claim default/big, request "gpu": 2 of 8 matching devices allocated to ResourceClaim default/holder-009`; got != want {
		t.Errorf("n-009: %q, want %q", got, want)
	}
	// Each n-i node has 8 GPUs and the pod needs 8: it fits on every one of them once its holder lets go.
	if len(e.FitsOnceFreed) != n || len(e.Holders) != n || len(e.TooFew) != 0 {
		t.Errorf("fits once freed on %d nodes, %d holders, too few %v", len(e.FitsOnceFreed), len(e.Holders), e.TooFew)
	}
	wantMsg := "would fit on 200 nodes (n-000, n-001, n-002 and 197 more) once claims default/holder-000, default/holder-001, " +
		"default/holder-002 and 197 others release their devices; 200 nodes: "
	if msg := e.String(); !strings.HasPrefix(msg, wantMsg) || strings.Contains(msg, "nodes more") {
		t.Errorf("message %q", msg)
	}
}

func groupLines(gs []pods.ReasonGroup) string {
	var b strings.Builder
	for i, g := range gs {
		if i == 10 {
			fmt.Fprintf(&b, "  … %d more groups\n", len(gs)-i)
			break
		}
		fmt.Fprintf(&b, "  %d %q %v\n", g.Nodes, g.Reason, g.Examples)
	}
	return b.String()
}

// TestExplainOfASearchThatGaveUp: under a step budget too small for the search, Explain says the search
// gave up on the node (the claims' headline panicked on it).
func TestExplainOfASearchThatGaveUp(t *testing.T) {
	snap := allocator.NewSnapshot(allocator.Options{StepBudget: 2})
	must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	for _, n := range []string{"n-1", "n-2"} {
		must(t, snap.AddOrUpdateNode(node(n, nil)))
		must(t, snap.AddOrUpdateSlice(gpus(n, 8)))
	}
	must(t, snap.AddOrUpdateClaim(claim("big", 6)))
	e, err := pods.New(snap, pods.Options{}).Explain(context.Background(), pod("train", "gpu=claim:big"))
	must(t, err)
	if got, want := e.String(), "2 nodes: search gave up"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
