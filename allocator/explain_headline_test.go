package allocator_test

import (
	"testing"

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
