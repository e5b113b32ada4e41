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
	"github.com/dralloc/dralloc/inventory"
)

// mixedNode is a DGX node of the shipped profile, published in mode, with classes "gpu" (whole GPUs)
// and "mig" (MIG devices) and, on the last GPU, the given number of 1g.10gb partitions held by an
// allocated claim (none when the mode publishes no partitions).
func mixedNode(t testing.TB, profile string, mode inventory.Mode, budget, used int) (*allocator.Snapshot, *v1.Node) {
	t.Helper()
	return mixedNodeWith(t, profile, mode, allocator.Options{NoCopy: true, StepBudget: budget}, used)
}

// mixedNodeWith is mixedNode with a snapshot made with opts.
func mixedNodeWith(t testing.TB, profile string, mode inventory.Mode, opts allocator.Options, used int, held ...string) (*allocator.Snapshot, *v1.Node) {
	t.Helper()
	tmpl, err := inventory.Profile(profile)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Mode = mode
	published, err := tmpl.Slices("node-0", 1)
	if err != nil {
		t.Fatal(err)
	}
	s := allocator.NewSnapshot(opts)
	var driver, pool, last string
	var partitions []string
	for _, sl := range published {
		if err := s.AddOrUpdateSlice(sl); err != nil {
			t.Fatal(err)
		}
		driver, pool = sl.Spec.Driver, sl.Spec.Pool.Name
		for _, d := range sl.Spec.Devices {
			if p := d.Attributes[inventory.AttrProfile].StringValue; p != nil && *p == "1g.10gb" {
				parent := d.Name[:len(d.Name)-len("-mig-1g10gb-0-0")]
				if parent != last {
					last, partitions = parent, nil
				}
				partitions = append(partitions, d.Name)
			}
		}
	}
	for _, c := range []*resourceapi.DeviceClass{
		class("gpu", `device.driver == "`+driver+`" && device.attributes["`+driver+`"].type == "gpu"`),
		class("mig", `device.driver == "`+driver+`" && device.attributes["`+driver+`"].type == "mig"`),
	} {
		if err := s.AddOrUpdateClass(c); err != nil {
			t.Fatal(err)
		}
	}
	if used > 0 || len(held) > 0 {
		var results []resourceapi.DeviceRequestAllocationResult
		for _, name := range append(partitions[:used:used], held...) {
			results = append(results, result(driver, pool, name))
		}
		if err := s.AddOrUpdateClaim(allocatedClaim("held", results...)); err != nil {
			t.Fatal(err)
		}
	}
	return s, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}
}

// oneG asks for n MIG devices of a 1g profile (any memory size, with or without media engines).
func oneG(name string, n int64) resourceapi.DeviceRequest {
	return exact(name, "mig", n, `device.attributes["gpu.nvidia.com"].profile.startsWith("1g.")`)
}

// mixedClaims are two claims for seven whole GPUs (in requests of 2, 1, 2 and 2) and five 1g partitions.
func mixedClaims() []*resourceapi.ResourceClaim {
	return []*resourceapi.ResourceClaim{
		claim("a", exact("gpus", "gpu", 2), exact("gpu", "gpu", 1), oneG("mig", 3)),
		claim("b", exact("gpus", "gpu", 2), exact("more", "gpu", 2), oneG("mig", 2)),
	}
}

// TestMixedWholeAndPartitionsDecidedSoon: on a DGX H100 in dynamic MIG whose last GPU has one 1g.10gb
// partition in use, two claims ask for seven whole GPUs (in requests of 2, 1, 2 and 2) and five 1g
// partitions. Seven whole GPUs take every GPU but the partly used one (a whole GPU draws all of its
// GPU's counters), and every 1g profile draws one of a GPU's five decoders (as go-nvml's mock H100
// publishes them), so that one has decoders left for four 1g devices only: the claims cannot fit, and
// counting the GPUs' counters says so without trying every way to place the partitions. With no
// partition in use the five fit on the last GPU.
func TestMixedWholeAndPartitionsDecidedSoon(t *testing.T) {
	s, node := mixedNode(t, "dgxh100", inventory.ModeDynamicMIG, 5000, 1)
	claims := mixedClaims()
	_, err := s.Allocate(context.Background(), node, claims)
	if !errors.Is(err, allocator.ErrUnsatisfiable) {
		t.Fatalf("Allocate: %v, want an error wrapping ErrUnsatisfiable within 5000 steps", err)
	}
	s, node = mixedNode(t, "dgxh100", inventory.ModeDynamicMIG, 5000, 0)
	if _, err := s.Allocate(context.Background(), node, claims); err != nil {
		t.Fatalf("Allocate with no partition in use: %v, want an allocation", err)
	}
}

// TestWholeDevicesNeedUntouchedCounterSets: on a DGX H100 in dynamic MIG whose GPUs 6 and 7 each have
// one 1g.10gb partition in use (on memory slices 0 and 6), six whole GPUs and one 7g.80gb partition
// (which, as a whole GPU, draws all seven copy engines, all eight memory slices, … of its GPU) need
// seven untouched GPUs, and there are six. Summed over the GPUs every counter has room (7×7 copy
// engines needed, 6×7 + 2×6 left; memory slice 0 is free on seven GPUs, and so is
// memory slice 6), and the whole GPUs and the 7g partitions are different devices (twelve candidates for seven), so neither that sum nor
// the pigeonhole count sees it; a set with less than all of a counter left holds none of them, so the
// sets hold six. (Counters are tried by name: the first is copy-engines, seven a GPU, one a 1g.)
func TestWholeDevicesNeedUntouchedCounterSets(t *testing.T) {
	s, node := mixedNodeWith(t, "dgxh100", inventory.ModeDynamicMIG, allocator.Options{NoCopy: true, StepBudget: 5000}, 0,
		"gpu-6-mig-1g10gb-0-0", "gpu-7-mig-1g10gb-0-6")
	claims := []*resourceapi.ResourceClaim{
		claim("a", exact("gpus", "gpu", 2), exact("more", "gpu", 2), exact("last", "gpu", 2)),
		claim("b", exact("big", "mig", 1, `device.attributes["gpu.nvidia.com"].profile == "7g.80gb"`)),
	}
	_, err := s.Allocate(context.Background(), node, claims)
	want := "ResourceClaim default/b: together with the requests before it, needs 7 devices that draw at least 7 of counter copy-engines each, the counter sets of pool gpu.nvidia.com/node-0 have room for 6 of them"
	if !errors.Is(err, allocator.ErrUnsatisfiable) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Allocate: %v, want an error wrapping ErrUnsatisfiable with %q", err, want)
	}
}

// BenchmarkMixedWholeAndPartitions: Fits for mixedClaims on a DGX H100 in dynamic MIG with one 1g.10gb
// partition of the last GPU in use (they do not fit) and with none (they fit).
func BenchmarkMixedWholeAndPartitions(b *testing.B) {
	for _, used := range []int{1, 0} {
		b.Run(fmt.Sprintf("used=%d", used), func(b *testing.B) {
			s, node := mixedNode(b, "dgxh100", inventory.ModeDynamicMIG, 0, used)
			claims := mixedClaims()
			ctx := context.Background()
			want := used == 0
			b.ReportAllocs()
			for b.Loop() {
				if fits, err := s.Fits(ctx, node, claims); err != nil || fits != want {
					b.Fatalf("Fits: %v, %v; want %v", fits, err, want)
				}
			}
		})
	}
}
