package pods_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// smallNodesCluster has nodes with 2, 3 and 4 GPUs: on n-2 claim a holds one, on n-3 claim b holds all
// three, on n-4 claims c and d hold two each. Claim big asks for the given number of GPUs.
func smallNodesCluster(t *testing.T, want int64) *pods.Cluster {
	snap := allocator.NewSnapshot(allocator.Options{})
	must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	for _, n := range []struct {
		node string
		gpus int
		held map[string][]int
	}{
		{"n-2", 2, map[string][]int{"a": {0}}},
		{"n-3", 3, map[string][]int{"b": {0, 1, 2}}},
		{"n-4", 4, map[string][]int{"c": {0, 1}, "d": {2, 3}}},
	} {
		must(t, snap.AddOrUpdateNode(node(n.node, nil)))
		must(t, snap.AddOrUpdateSlice(gpus(n.node, n.gpus)))
		for holder, devs := range n.held {
			c := claim(holder, int64(len(devs)))
			c.Status.Allocation = &resourceapi.AllocationResult{}
			for _, d := range devs {
				c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
					Request: "gpu", Driver: driver, Pool: n.node, Device: fmt.Sprintf("gpu-%d", d)})
			}
			must(t, snap.AddOrUpdateClaim(c))
		}
	}
	must(t, snap.AddOrUpdateClaim(claim("big", want)))
	return pods.New(snap, pods.Options{})
}

// TestExplainTellsTooFewFromInUse: a pod asking 8 GPUs where no node has more than 4 does not fit even on
// an empty node, whatever other claims hold; asking 3, it fits on n-3 and n-4 once the claims holding
// their GPUs release them (n-2 has only 2), and the explanation names those claims.
func TestExplainTellsTooFewFromInUse(t *testing.T) {
	ctx := context.Background()
	ref := allocator.RequestRef{Claim: "default/big", Request: "gpu"}

	e, err := smallNodesCluster(t, 8).Explain(ctx, pod("train", "gpu=claim:big"))
	must(t, err)
	wantGroups := []pods.ReasonGroup{{Reason: `claim default/big, request "gpu": needs 8 devices, the nodes have at most 4 matching`,
		Nodes: 3, Examples: []string{"n-2", "n-3", "n-4"}}}
	if !reflect.DeepEqual(e.Groups, wantGroups) {
		t.Errorf("8 GPUs: groups\n%s\nwant\n%s", groupLines(e.Groups), groupLines(wantGroups))
	}
	if want := []pods.RequestShortfall{{Request: ref, Needs: 8, Most: 4, Node: "n-4"}}; !reflect.DeepEqual(e.TooFew, want) {
		t.Errorf("8 GPUs: too few %+v, want %+v", e.TooFew, want)
	}
	if len(e.FitsOnceFreed) != 0 || len(e.Holders) != 0 {
		t.Errorf("8 GPUs: fits once %v are freed on %v", e.Holders, e.FitsOnceFreed)
	}
	if got, want := e.Nodes[2].Reason, `claim default/big, request "gpu": needs 8 devices, the node has 4 matching`; got != want {
		t.Errorf("8 GPUs: n-4 %q, want %q", got, want)
	}
	if got, want := e.String(), `does not fit even on an empty node: claim default/big, request "gpu" needs 8 devices, no node has more than 4 matching (n-4); `+
		`3 nodes: claim default/big, request "gpu": needs 8 devices, the nodes have at most 4 matching`; got != want {
		t.Errorf("8 GPUs: message\n %q\nwant %q", got, want)
	}

	e, err = smallNodesCluster(t, 3).Explain(ctx, pod("train", "gpu=claim:big"))
	must(t, err)
	wantGroups = []pods.ReasonGroup{
		{Reason: `claim default/big, request "gpu": 3–4 of the matching devices allocated to ResourceClaim default/b and 2 others`,
			Nodes: 2, Examples: []string{"n-3", "n-4"}},
		{Reason: `claim default/big, request "gpu": needs 3 devices, the node has 2 matching`, Nodes: 1, Examples: []string{"n-2"}},
	}
	if !reflect.DeepEqual(e.Groups, wantGroups) {
		t.Errorf("3 GPUs: groups\n%s\nwant\n%s", groupLines(e.Groups), groupLines(wantGroups))
	}
	if len(e.TooFew) != 0 {
		t.Errorf("3 GPUs: too few %+v", e.TooFew)
	}
	if want := []string{"n-3", "n-4"}; !reflect.DeepEqual(e.FitsOnceFreed, want) {
		t.Errorf("3 GPUs: fits once freed on %v, want %v", e.FitsOnceFreed, want)
	}
	if want := []string{"default/b", "default/c", "default/d"}; !reflect.DeepEqual(e.Holders, want) {
		t.Errorf("3 GPUs: holders %v, want %v", e.Holders, want)
	}
	if got, want := e.Nodes[2].Reason, `claim default/big, request "gpu": 4 of 4 matching devices allocated to ResourceClaim default/c and 1 other`; got != want {
		t.Errorf("3 GPUs: n-4 %q, want %q", got, want)
	}
	if got, want := e.String(), `would fit on 2 nodes (n-3 and n-4) once claims default/b, default/c and default/d release their devices; `+
		`2 nodes: claim default/big, request "gpu": 3–4 of the matching devices allocated to ResourceClaim default/b and 2 others; `+
		`1 node: claim default/big, request "gpu": needs 3 devices, the node has 2 matching`; got != want {
		t.Errorf("3 GPUs: message\n %q\nwant %q", got, want)
	}
}
