package allocator_test

import (
	"context"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// TestRequestSelectorsFollowTheClaim: a request's selector is compiled from the claim as it is at each
// call, whatever earlier calls compiled. The claim is changed in place between calls, through more
// expressions than the scratch remembers, one of them invalid, and every answer is the new
// expression's.
func TestRequestSelectorsFollowTheClaim(t *testing.T) {
	ctx := context.Background()
	s := allocator.NewSnapshot(allocator.Options{})
	if err := s.AddOrUpdateSlice(nodeSlice("s1", node1, driverA, "pool-1", device("gpu-0", map[string]any{"model": "m3"}))); err != nil {
		t.Fatal(err)
	}
	if err := s.AddOrUpdateClass(class("gpu")); err != nil {
		t.Fatal(err)
	}
	c := claim("c", exact("r", "gpu", 1, "true"))
	sel := &c.Spec.Devices.Requests[0].Exactly.Selectors[0].CEL.Expression
	n := node(node1, nil)
	for round := range 3 {
		for m := range 8 {
			*sel = fmt.Sprintf(`device.attributes["%s"].model == "m%d"`, driverA, m)
			fits, err := s.Fits(ctx, n, []*resourceapi.ResourceClaim{c})
			if err != nil {
				t.Fatalf("round %d, model m%d: %v", round, m, err)
			}
			if want := m == 3; fits != want {
				t.Errorf("round %d, selector %s: fits %v, want %v", round, *sel, fits, want)
			}
		}
		*sel = `device.attributes["` + driverA + `"].model ==`
		if _, err := s.Fits(ctx, n, []*resourceapi.ResourceClaim{c}); err == nil {
			t.Errorf("round %d: invalid selector %q accepted", round, *sel)
		}
	}
}
