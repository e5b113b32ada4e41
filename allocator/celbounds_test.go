package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/celenv"
)

// A class selector that doubles an attribute value (type dyn, so "+" is
// dispatched at run time) runs into the cost limit after 17 doublings of
// its 64 characters (8 MiB): the allocation fails with the cost-limit
// error, as Kubernetes fails a claim whose selector errs, instead of
// building a string of 64 MiB (20 doublings) or running out of memory.
// Validation refuses such a class on add (its estimated cost is over the
// limit), so the snapshot here trusts its objects, as it does those of an
// informer: the bound at run time must hold without validation.
func TestAllocateStopsADoublingClassSelectorAtTheCostLimit(t *testing.T) {
	var expr strings.Builder
	expr.WriteString(`cel.bind(s0, device.attributes["gpu.example.com"].model, `)
	const n = 20
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&expr, "cel.bind(s%d, s%d + s%d, ", i, i-1, i-1)
	}
	fmt.Fprintf(&expr, "s%d.size() > 0", n)
	expr.WriteString(strings.Repeat(")", n+1))

	snap := allocator.NewSnapshot(allocator.Options{TrustAPIServer: true})
	if err := snap.AddOrUpdateSlice(gpuSlice("node-a", strings.Repeat("H", resourceapi.DeviceAttributeMaxValueLength), 2)); err != nil {
		t.Fatal(err)
	}
	if err := snap.AddOrUpdateClass(&resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: expr.String()},
		}}},
	}); err != nil {
		t.Fatal(err)
	}
	_, err := snap.Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, []*resourceapi.ResourceClaim{gpuClaim("train", 1)})
	if !errors.Is(err, celenv.ErrCostLimit) {
		t.Fatalf("got %v, want the cost-limit error", err)
	}
}
