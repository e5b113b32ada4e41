package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// TestMatchAttributeShortGroup: a claim for 12 GPUs that share a NUMA node, on a node of two NUMA nodes
// of 12 GPUs whose first has 11 free, does not try the first NUMA node's GPUs: the search takes the next
// NUMA node's first 12 GPUs, as FirstFit did before, without first taking GPUs of the short NUMA node
// that every GPU of the next one then disagrees with. For each type of attribute (int, string,
// version) and both the standard numaNode and a driver's own attribute.
func TestMatchAttributeShortGroup(t *testing.T) {
	const budget = 20 // the search takes 15 steps with the bound, 26 without
	for _, tc := range []struct {
		name string
		attr string // as published by the driver
		want string // as the constraint names it
		val  func(group int) any
	}{
		{"numaNode", "resource.kubernetes.io/numaNode", "resource.kubernetes.io/numaNode", func(g int) any { return g }},
		{"int", "numa", driverA + "/numa", func(g int) any { return g }},
		{"string", "numa", driverA + "/numa", func(g int) any { return fmt.Sprintf("numa-%d", g) }},
		{"version", "numa", driverA + "/numa", func(g int) any { return version(fmt.Sprintf("%d.0.0", g)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := allocator.NewSnapshot(allocator.Options{StepBudget: budget})
			if err := s.AddOrUpdateClass(anyClass); err != nil {
				t.Fatal(err)
			}
			var devs []resourceapi.Device
			for i := range 24 {
				devs = append(devs, device(fmt.Sprintf("gpu-%02d", i), map[string]any{tc.attr: tc.val(i / 12), "serial": i}))
			}
			if err := s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool-1", devs...)); err != nil {
				t.Fatal(err)
			}
			// gpu-00 is in use: NUMA node 0 has eleven free GPUs, twelve are asked.
			if err := s.AddOrUpdateClaim(allocatedClaim("held", result(driverA, "pool-1", "gpu-00"))); err != nil {
				t.Fatal(err)
			}
			// The selector reads every device's serial, so no two GPUs are interchangeable for the request.
			c := withConstraints(claim("c", exact("req", "any", 12, fmt.Sprintf(`device.attributes[%q].serial >= 0`, driverA))), matchAttr(tc.want))
			res, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
			if errors.Is(err, allocator.ErrSearchBudget) {
				t.Fatalf("not decided in %d steps: %v", budget, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for i := 12; i < 24; i++ {
				want = append(want, fmt.Sprintf("req=pool-1/gpu-%02d", i))
			}
			if got, want := fmt.Sprint(describe(res)), fmt.Sprint([][]string{want}); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
			fits, err := s.Fits(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
			if err != nil || !fits {
				t.Errorf("Fits: %v, %v; want true", fits, err)
			}
		})
	}
}
