package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// Counting before the search decides shapes where every request has enough candidates on its own, but a
// constraint or the requests together cannot be served: the Kubernetes allocator tries every combination
// of the requests before them first (8 claims of one GPU each on 10 GPUs that all differ: 1.8 million).
// The answer is the same, "does not fit", within a few steps, and with a reason.
func TestCountingDecidesBeforeSearching(t *testing.T) {
	gpus := func(numa func(i int) int, more map[string]any) []resourceapi.Device {
		var devs []resourceapi.Device
		for i := range 10 {
			attrs := map[string]any{"kind": "gpu", "serial": i}
			if numa != nil {
				attrs["numa"] = numa(i)
			}
			devs = append(devs, device(fmt.Sprintf("gpu-%d", i), attrs))
		}
		for i := range 4 {
			attrs := map[string]any{"kind": "nic", "serial": 100 + i, "numa": 0}
			for k, v := range more {
				attrs[k] = v
			}
			devs = append(devs, device(fmt.Sprintf("nic-%d", i), attrs))
		}
		return devs
	}
	singles := func(last *resourceapi.ResourceClaim) []*resourceapi.ResourceClaim {
		var claims []*resourceapi.ResourceClaim
		for i := range 8 {
			// The distinct serials keep the GPUs from being interchangeable.
			claims = append(claims, withConstraints(claim(fmt.Sprintf("c%d", i), exact("gpu", "gpu", 1)), distinctAttr(driverA+"/serial")))
		}
		return append(claims, last)
	}
	for _, tc := range []struct {
		name    string
		devs    []resourceapi.Device
		claims  []*resourceapi.ResourceClaim
		wantErr string
	}{
		{
			name:    "three GPUs on one NUMA node where every NUMA node has two",
			devs:    gpus(func(i int) int { return i / 2 }, nil),
			claims:  singles(withConstraints(claim("last", exact("gpus", "gpu", 3)), matchAttr(driverA+"/numa"))),
			wantErr: "spec.devices.constraints[0].matchAttribute: no value of " + driverA + "/numa is shared by enough free matching devices",
		},
		{
			name:    "a GPU and a NIC on one NUMA node where no GPU has one",
			devs:    gpus(nil, nil),
			claims:  singles(withConstraints(claim("last", exact("gpu", "gpu", 1), exact("nic", "nic", 1)), matchAttr(driverA+"/numa"))),
			wantErr: "spec.devices.constraints[0].matchAttribute: no value of " + driverA + "/numa is shared by enough free matching devices",
		},
		{
			name:    "three GPUs on distinct NUMA nodes where there are two",
			devs:    gpus(func(i int) int { return i % 2 }, nil),
			claims:  singles(withConstraints(claim("last", exact("gpus", "gpu", 3)), distinctAttr(driverA+"/numa"))),
			wantErr: "spec.devices.constraints[0].distinctAttribute: too few free matching devices with distinct values of " + driverA + "/numa",
		},
		{
			name:    "three GPUs on one of two NUMA nodes of five, after eight claims of one GPU: eleven of ten",
			devs:    gpus(func(i int) int { return i % 2 }, nil),
			claims:  singles(withConstraints(claim("last", exact("gpus", "gpu", 3)), matchAttr(driverA+"/numa"))),
			wantErr: "ResourceClaim default/last: together with the requests before it, needs 11 distinct devices of 10 that match and are free",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := allocator.NewSnapshot(allocator.Options{StepBudget: 2000})
			must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, node1, tc.devs...)))
			for _, kind := range []string{"gpu", "nic"} {
				must(t, s.AddOrUpdateClass(class(kind, `device.attributes["`+driverA+`"].kind == "`+kind+`"`)))
			}
			_, err := s.Allocate(context.Background(), node(node1, nil), tc.claims)
			if !errors.Is(err, allocator.ErrUnsatisfiable) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want does not fit because %s", err, tc.wantErr)
			}
			if fits, err := s.Fits(context.Background(), node(node1, nil), tc.claims); fits || err != nil {
				t.Fatalf("Fits: got %v, %v, want false", fits, err)
			}
		})
	}
}

// Devices the node may not take are not counted as candidates: with DRAOptionalNodeOperations on, a slice
// that skips node operations serves only nodes that declare the feature. Two claims need 17 of the 16
// GPUs this node may take; the two of the skipping slice do not make up the difference.
func TestCountingLeavesOutDevicesThatSkipNodeOperations(t *testing.T) {
	f := allocator.DefaultFeatures()
	f.DRAOptionalNodeOperations = true
	s := allocator.NewSnapshot(allocator.Options{StepBudget: 2000, Features: &f})
	var devs []resourceapi.Device
	for i := range 16 {
		devs = append(devs, device(fmt.Sprintf("gpu-%d", i), map[string]any{"serial": i}))
	}
	must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool-1", devs...)))
	skip := nodeSlice("skip", node1, driverA, "pool-2", device("gpu-16", map[string]any{"serial": 16}), device("gpu-17", map[string]any{"serial": 17}))
	skip.Spec.SkipNodeOperations = []resourceapi.SkipNodeOperation{resourceapi.SkipNodeOperationAll}
	must(t, s.AddOrUpdateSlice(skip))
	must(t, s.AddOrUpdateClass(anyClass))
	claims := []*resourceapi.ResourceClaim{
		withConstraints(claim("a", exact("gpus", "any", 8)), distinctAttr(driverA+"/serial")),
		claim("b", exact("gpus", "any", 9)),
	}
	_, err := s.Allocate(context.Background(), node(node1, nil), claims)
	if want := "needs 17 distinct devices of 16"; !errors.Is(err, allocator.ErrUnsatisfiable) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want does not fit because it %s", err, want)
	}
}

// A request with a derived attribute no longer keeps counting from deciding: its derived values are
// evaluated on every candidate first (where the search would evaluate them), and as none fails, a later
// claim without candidates fails at once, as it would after every combination of the first.
func TestCountingAfterDerivedAttributes(t *testing.T) {
	f := allocator.DefaultFeatures()
	f.DRADerivedAttributes = true
	s := allocator.NewSnapshot(allocator.Options{StepBudget: 2000, Features: &f})
	var devs []resourceapi.Device
	for i := range 16 {
		devs = append(devs, device(fmt.Sprintf("gpu-%d", i), map[string]any{"kind": "gpu", "serial": i}))
	}
	must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool-1", devs...)))
	for _, kind := range []string{"gpu", "nic"} {
		must(t, s.AddOrUpdateClass(class(kind, `device.attributes["`+driverA+`"].kind == "`+kind+`"`)))
	}
	for _, tc := range []struct {
		name, expr, want string
		wantErr          error
	}{
		{"derived values evaluate on every GPU: the NIC claim fails before searching", `device.attributes["` + driverA + `"].serial`,
			`claim default/b, request "nic": needs 1 device, 0 match and are free`, allocator.ErrUnsatisfiable},
		{"a derived value fails on a GPU: the search meets the error, as Kubernetes' does", `device.attributes["` + driverA + `"].serial / (device.attributes["` + driverA + `"].serial - 3)`,
			"evaluate derived attribute example.com/serial on device " + driverA + "/pool-1/gpu-3", allocator.ErrInvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims := []*resourceapi.ResourceClaim{
				withConstraints(claim("a", withDerived(exact("gpus", "gpu", 8), "example.com/serial", tc.expr)), distinctAttr("example.com/serial")),
				claim("b", exact("nic", "nic", 1)),
			}
			_, err := s.Allocate(context.Background(), node(node1, nil), claims)
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %v: %s", err, tc.wantErr, tc.want)
			}
		})
	}
}

// Counting follows the constraints' comparisons exactly where it decides: without DRAListTypeAttributes a
// device whose attribute holds only a list may still be the first (here the only) device of a
// distinctAttribute constraint, so the claim fits, as in Kubernetes.
func TestCountingKeepsListOnlyAttributes(t *testing.T) {
	f := allocator.DefaultFeatures()
	f.DRAListTypeAttributes = false
	runAll(t, []scenario{{
		name: "a distinctAttribute over one device with a list-only attribute", features: &f,
		slices:  attrSlice(device("dev-1", map[string]any{"links": []int64{1, 2}})),
		classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("req", "any", 1)), distinctAttr(driverA+"/links"))},
		want:    [][]string{{"req=pool-1/dev-1"}},
	}})
}
