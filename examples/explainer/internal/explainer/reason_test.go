package explainer

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// testCluster is two nodes with devices d0, d1 (a100, NUMA 0 and 1) and d2 (t4), the class of each
// model, d2 of node n1 tainted by a rule, and the claims given.
func testCluster(t *testing.T, claims ...*resourceapi.ResourceClaim) *pods.Cluster {
	t.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, n := range []string{"n1", "n2"} {
		if err := snap.AddOrUpdateNode(node(n)); err != nil {
			t.Fatal(err)
		}
		if err := snap.AddOrUpdateSlice(slice("s-"+n, n, 1, dev{"d0", "a100", 0}, dev{"d1", "a100", 1}, dev{"d2", "t4", 0})); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{"a100", "t4", "h100"} {
		if err := snap.AddOrUpdateClass(class(m, m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := snap.AddOrUpdateTaintRule(taintRule("broken", "n1", "d2")); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if err := snap.AddOrUpdateClaim(c); err != nil {
			t.Fatal(err)
		}
	}
	return pods.New(snap, pods.Options{})
}

func allocatedClaim(name, nodeName string, devices ...string) *resourceapi.ResourceClaim {
	c := claim("ns", name, "a100", int64(len(devices)), false)
	c.Status.Allocation = allocation(nodeName, devices...)
	return c
}

func TestExplainReasons(t *testing.T) {
	for _, tc := range []struct {
		name           string
		claims         []*resourceapi.ResourceClaim
		pod            *v1.Pod
		fits           bool
		reason, inText string
	}{
		{name: "fits", claims: []*resourceapi.ResourceClaim{claim("ns", "c", "a100", 1, false)}, pod: pod("ns", "p", "c", "", ""),
			fits: true, reason: ReasonFits, inText: "fits on 2 nodes"},
		{name: "class matches no device", claims: []*resourceapi.ResourceClaim{claim("ns", "c", "h100", 1, false)}, pod: pod("ns", "p", "c", "", ""),
			reason: string(allocator.ReasonClassSelector), inText: "class h100 matched no device"},
		// One group per node, of one node each: the first by its text is the dominant one.
		{name: "tainted on one node, too few on the other", claims: []*resourceapi.ResourceClaim{claim("ns", "c", "t4", 1, false),
			allocatedClaim("h", "n2", "d2")}, pod: pod("ns", "p", "c", "", ""),
			reason: string(allocator.ReasonAllocated), inText: "allocated to ResourceClaim ns/h; 1 node: claim ns/c, request \"gpu\": 1 of 1 matching device tainted live.example/broken:NoSchedule by DeviceTaintRule broken"},
		{name: "devices in use", claims: []*resourceapi.ResourceClaim{claim("ns", "c", "a100", 1, false),
			allocatedClaim("h1", "n1", "d0", "d1"), allocatedClaim("h2", "n2", "d0", "d1")}, pod: pod("ns", "p", "c", "", ""),
			reason: string(allocator.ReasonAllocated), inText: "allocated to ResourceClaim ns/h1"},
		{name: "more devices than any node has", claims: []*resourceapi.ResourceClaim{claim("ns", "c", "a100", 3, false), allocatedClaim("h1", "n1", "d0")},
			pod: pod("ns", "p", "c", "", ""), reason: ReasonTooFewDevices,
			inText: `does not fit even on an empty node: claim ns/c, request "gpu" needs 3 devices, no node has more than 2 matching (n1); ` +
				`2 nodes: claim ns/c, request "gpu": needs 3 devices, the node has 2 matching`},
		{name: "fits once the holders release their devices", claims: []*resourceapi.ResourceClaim{claim("ns", "c", "a100", 2, false),
			allocatedClaim("h1", "n1", "d0"), allocatedClaim("h2", "n2", "d1")}, pod: pod("ns", "p", "c", "", ""),
			reason: string(allocator.ReasonAllocated), inText: "would fit on 2 nodes (n1 and n2) once claims ns/h1 and ns/h2 release their devices; 2 nodes: "},
		{name: "constraint", claims: []*resourceapi.ResourceClaim{claim("ns", "c", "a100", 2, true)}, pod: pod("ns", "p", "c", "", ""),
			reason: string(allocator.ReasonConstraint), inText: "matchAttribute on " + testDriver + "/numa"},
		{name: "extended resource no class maps", pod: pod("ns", "p", "", "", "example.com/tpu"),
			reason: ReasonExtendedResourceClass, inText: "extended resource example.com/tpu: no DeviceClass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Explain(context.Background(), testCluster(t, tc.claims...), tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if res.Fits != tc.fits || res.Reason != tc.reason || !strings.Contains(res.Message, tc.inText) {
				t.Errorf("got fits %v, reason %s, %q; want fits %v, reason %s, containing %q", res.Fits, res.Reason, res.Message, tc.fits, tc.reason, tc.inText)
			}
		})
	}
}

// The dominant reason of a taint is the taint, not the class selector that removed more devices (the
// devices of other models): dralloc's explanation words it so.
func TestExplainTaintIsTheReason(t *testing.T) {
	snap := allocator.NewSnapshot(allocator.Options{})
	if err := snap.AddOrUpdateNode(node("n1")); err != nil {
		t.Fatal(err)
	}
	if err := snap.AddOrUpdateSlice(slice("s", "n1", 1, dev{"d0", "a100", 0}, dev{"d1", "a100", 1}, dev{"d2", "t4", 0})); err != nil {
		t.Fatal(err)
	}
	for _, o := range []error{snap.AddOrUpdateClass(class("t4", "t4")), snap.AddOrUpdateTaintRule(taintRule("broken", "n1", "d2")),
		snap.AddOrUpdateClaim(claim("ns", "c", "t4", 1, false))} {
		if o != nil {
			t.Fatal(o)
		}
	}
	res, err := Explain(context.Background(), pods.New(snap, pods.Options{}), pod("ns", "p", "c", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != string(allocator.ReasonTaint) || !strings.Contains(res.Message, "by DeviceTaintRule broken") {
		t.Errorf("reason %s, %q; want %s naming DeviceTaintRule broken", res.Reason, res.Message, allocator.ReasonTaint)
	}
}

// Explain's Result is what the controller writes: the message of the Event and the metrics' reason.
func ExampleExplain() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateNode(node("n1"))
	_ = snap.AddOrUpdateSlice(slice("s", "n1", 1, dev{"d0", "a100", 0}))
	_ = snap.AddOrUpdateClass(class("h100", "h100"))
	_ = snap.AddOrUpdateClaim(claim("default", "train", "h100", 1, false))
	res, err := Explain(context.Background(), pods.New(snap, pods.Options{}), pod("default", "trainer", "train", "", ""))
	fmt.Println(res.Reason, err)
	fmt.Println(res.Message)
	// Output:
	// ClassSelectorFalse <nil>
	// 1 node: claim default/train, request "gpu": class h100 matched no device
}
