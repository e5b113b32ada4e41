package allocator_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// TestHeadlineOfASearchThatGaveUp: an explanation whose only obstacle is a search that ran out of its
// step budget has a headline (it cut " (…)" that the gave-up wording has not and panicked), without the
// steps, so that nodes where the search gave up share it.
func TestHeadlineOfASearchThatGaveUp(t *testing.T) {
	for _, tc := range []struct {
		reason allocator.Reason
		want   string
	}{
		{allocator.ReasonSearchGaveUp, "search gave up"},
		{allocator.ReasonNoCombination, "no combination of the candidates satisfies every request together"},
	} {
		e := &allocator.Explanation{Node: "n", Obstacles: []allocator.Obstacle{{Reason: tc.reason, Steps: 7}}}
		if got := e.Headline(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.reason, got, tc.want)
		}
	}
}

// TestHeadlineOfAShortRequest: a node with fewer matching devices than the request needs says so, not
// which claims hold some of them (freeing them would not make the request fit); a node where enough
// devices match names every claim holding them, counting all the devices they hold, not only the first
// claim's.
func TestHeadlineOfAShortRequest(t *testing.T) {
	const drv = "gpu.example.com"
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		devices []string
		held    map[string][]string // claim name → devices it holds
		needs   int64
		want    string
	}{
		{"fewer match than needed, some held", []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, map[string][]string{"a": {"gpu-0"}, "b": {"gpu-1", "gpu-2"}}, 8,
			`claim default/big, request "gpus": needs 8 devices, the node has 4 matching`},
		{"fewer match than needed, none held", []string{"gpu-0"}, nil, 2,
			`claim default/big, request "gpus": needs 2 devices, the node has 1 matching`},
		{"two claims hold one device each", []string{"gpu-0", "gpu-1"}, map[string][]string{"a": {"gpu-0"}, "b": {"gpu-1"}}, 2,
			`claim default/big, request "gpus": 2 of 2 matching devices allocated to ResourceClaim default/a and 1 other`},
		{"one claim holds one device", []string{"gpu-0", "gpu-1"}, map[string][]string{"a": {"gpu-0"}}, 2,
			`claim default/big, request "gpus": 1 of 2 matching devices allocated to ResourceClaim default/a`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := allocator.NewSnapshot(allocator.Options{})
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(s.AddOrUpdateClass(class("gpu")))
			must(s.AddOrUpdateSlice(nodeSlice("n-gpus", "n", drv, "n", devices(tc.devices...)...)))
			for _, name := range []string{"a", "b"} {
				var rs []resourceapi.DeviceRequestAllocationResult
				for _, d := range tc.held[name] {
					rs = append(rs, result(drv, "n", d))
				}
				if len(rs) > 0 {
					must(s.AddOrUpdateClaim(allocatedClaim(name, rs...)))
				}
			}
			e, err := s.Explain(ctx, node("n", nil), []*resourceapi.ResourceClaim{claim("big", exact("gpus", "gpu", tc.needs))})
			must(err)
			if got := e.Headline(); got != tc.want {
				t.Errorf("headline %q\n          want %q", got, tc.want)
			}
		})
	}
}
