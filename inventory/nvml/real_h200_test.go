package nvml_test

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/inventory"
)

// The slices examples/discover published in dynamic MIG mode on a real NVIDIA H200 (driver 580.159.04,
// MIG disabled, recorded by scripts/gpu-discover; testdata/real-h200/README.md) schedule as the card's
// own MIG profile table says (nvidia-smi mig -lgip, in the recording): 7 instances of 1g.18gb, 4 of
// 1g.35gb, 3 of 2g.35gb, 2 of 3g.71gb, 1 of 4g.71gb and 1 of 7g.141gb fit alone, one more of each does
// not, and placements share the GPU's memory slices.
func TestRealH200DynamicMIGSchedulesAsItsProfileTable(t *testing.T) {
	objs, err := manifest.Load([]string{"testdata/real-h200/dynamic-mig.yaml"}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range objs.Slices {
		if err := inventory.ValidateSlice(s); err != nil {
			t.Fatalf("slice %s: %v", s.Name, err)
		}
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm"}}
	fits := func(t *testing.T, reqs ...want) bool {
		t.Helper()
		snap := allocator.NewSnapshot(allocator.Options{})
		for _, s := range objs.Slices {
			if err := snap.AddOrUpdateSlice(s); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range classes {
			if err := snap.AddOrUpdateClass(c); err != nil {
				t.Fatal(err)
			}
		}
		_, err := snap.Allocate(context.Background(), node, []*resourceapi.ResourceClaim{claim(reqs...)})
		if err != nil && !errors.Is(err, allocator.ErrUnsatisfiable) {
			t.Fatal(err)
		}
		return err == nil
	}
	for _, p := range []struct {
		profile string
		max     int64
	}{{"1g.18gb", 7}, {"1g.18gb+me", 1}, {"1g.35gb", 4}, {"2g.35gb", 3}, {"3g.71gb", 2}, {"4g.71gb", 1}, {"7g.141gb", 1}} {
		if !fits(t, want{"mig.nvidia.com", p.profile, p.max}) {
			t.Errorf("%d × %s do not fit, the card lists %d", p.max, p.profile, p.max)
		}
		if fits(t, want{"mig.nvidia.com", p.profile, p.max + 1}) {
			t.Errorf("%d × %s fit, the card lists %d", p.max+1, p.profile, p.max)
		}
	}
	if !fits(t, want{"mig.nvidia.com", "4g.71gb", 1}, want{"mig.nvidia.com", "3g.71gb", 1}) {
		t.Error("4g.71gb next to 3g.71gb do not fit")
	}
	if fits(t, want{"gpu.nvidia.com", "", 1}, want{"mig.nvidia.com", "1g.18gb", 1}) {
		t.Error("the whole GPU fits next to a MIG device")
	}
}
