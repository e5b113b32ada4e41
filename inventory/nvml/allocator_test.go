package nvml_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/inventory"
)

// classes are DeviceClasses as written for NVIDIA's driver: whole GPUs and
// MIG devices of the gpu.nvidia.com driver, told apart by the type attribute.
var classes = []*resourceapi.DeviceClass{
	{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}, Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
		CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`}}}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "mig.nvidia.com"}, Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
		CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig"`}}}}},
}

// want is one request: count devices of a class, with a profile for MIG.
type want struct {
	class, profile string
	count          int64
}

func claim(reqs ...want) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "job", UID: "uid-job"}}
	for i, r := range reqs {
		req := resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", i), Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: r.class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: r.count}}
		if r.profile != "" {
			req.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.attributes["gpu.nvidia.com"].profile == %q`, r.profile)}}}
		}
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, req)
	}
	return c
}

func snapshotOf(t *testing.T, node inventory.Node, mode inventory.Mode) *allocator.Snapshot {
	t.Helper()
	slices, err := inventory.Slices(node, inventory.Options{NodeName: "dgx-1", Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, s := range slices {
		if err := snap.AddOrUpdateSlice(s); err != nil {
			t.Fatalf("allocator refused slice %s: %v", s.Name, err)
		}
	}
	for _, c := range classes {
		if err := snap.AddOrUpdateClass(c); err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

func allocate(t *testing.T, snap *allocator.Snapshot, c *resourceapi.ResourceClaim) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := snap.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dgx-1"}}, []*resourceapi.ResourceClaim{c})
	if err != nil && !errors.Is(err, allocator.ErrUnsatisfiable) {
		t.Fatalf("allocation failed for another reason than not fitting: %v", err)
	}
	return err
}

func TestTheAllocatorAcceptsTheMockSlices(t *testing.T) {
	for _, m := range mocks {
		for _, mode := range []inventory.Mode{inventory.ModeGPU, inventory.ModeDynamicMIG} {
			t.Run(m.mock+"/"+string(mode), func(t *testing.T) {
				snap := snapshotOf(t, discoverMock(t, m.mock).Node, mode)
				if err := allocate(t, snap, claim(want{"gpu.nvidia.com", "", 8})); err != nil {
					t.Errorf("8 whole GPUs: %v", err)
				}
				if err := allocate(t, snap, claim(want{"gpu.nvidia.com", "", 9})); err == nil {
					t.Error("9 whole GPUs on an 8-GPU node")
				}
			})
		}
	}
}

func TestTheAllocatorHonoursTheDynamicMIGCounters(t *testing.T) {
	// Two H100s of the mock keep the searches small. Figures from the mock:
	// 3g.40gb fits twice per GPU (placements 0 and 4); 1g.10gb+me once per
	// GPU (its JPEG engine is the GPU's only one); a whole GPU excludes all
	// MIG devices on it. The decoder counter is the 7g's 5, as NVIDIA's
	// driver sizes it, so at most five 1g.10gb (one decoder each) share a
	// GPU though it has seven placements.
	node := discoverMock(t, "dgxh100").Node
	node.GPUs = node.GPUs[:2]
	snap := snapshotOf(t, node, inventory.ModeDynamicMIG)
	for _, tc := range []struct {
		name string
		reqs []want
		fits bool
	}{
		{"four 3g.40gb fit", []want{{"mig.nvidia.com", "3g.40gb", 4}}, true},
		{"five 3g.40gb do not", []want{{"mig.nvidia.com", "3g.40gb", 5}}, false},
		{"two 3g.40gb and one whole GPU fit", []want{{"mig.nvidia.com", "3g.40gb", 2}, {"gpu.nvidia.com", "", 1}}, true},
		{"three 3g.40gb and one whole GPU do not", []want{{"mig.nvidia.com", "3g.40gb", 3}, {"gpu.nvidia.com", "", 1}}, false},
		{"two 1g.10gb+me fit, one per GPU", []want{{"mig.nvidia.com", "1g.10gb+me", 2}}, true},
		{"three 1g.10gb+me do not, though 14 placements exist", []want{{"mig.nvidia.com", "1g.10gb+me", 3}}, false},
		{"ten 1g.10gb fit, five per GPU", []want{{"mig.nvidia.com", "1g.10gb", 10}}, true},
		{"eleven 1g.10gb do not: the decoders run out", []want{{"mig.nvidia.com", "1g.10gb", 11}}, false},
		{"a 7g.80gb and five 1g.10gb fit", []want{{"mig.nvidia.com", "7g.80gb", 1}, {"mig.nvidia.com", "1g.10gb", 5}}, true},
		{"a 7g.80gb and six 1g.10gb do not", []want{{"mig.nvidia.com", "7g.80gb", 1}, {"mig.nvidia.com", "1g.10gb", 6}}, false},
		{"a 4g.40gb and a 3g.40gb share a GPU", []want{{"mig.nvidia.com", "4g.40gb", 2}, {"mig.nvidia.com", "3g.40gb", 2}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := allocate(t, snap, claim(tc.reqs...))
			if (err == nil) != tc.fits {
				t.Errorf("fits = %v (%v), want %v", err == nil, err, tc.fits)
			}
		})
	}
}

// On slices in NVIDIA's order, FirstFit gives what a cluster running NVIDIA's
// driver gives: its GPUs in bus-ID order, each GPU's devices by name.
func TestFirstFitPicksWhatNVIDIAsOrderPutsFirst(t *testing.T) {
	node := discoverMock(t, "dgxh100").Node
	node.GPUs = node.GPUs[:2]
	snap := snapshotOf(t, node, inventory.ModeDynamicMIG)
	sms := claim(want{"gpu.nvidia.com", "", 1})
	// The whole GPU carries the engine capacities in dynamic MIG mode, so a
	// selector on them evaluates instead of failing.
	sms.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: `device.capacity["gpu.nvidia.com"].multiprocessors.compareTo(quantity("100")) >= 0`}}}
	big := claim(want{"mig.nvidia.com", "", 1})
	big.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0`}}}
	for _, tc := range []struct {
		name  string
		claim *resourceapi.ResourceClaim
		want  []string
	}{
		// By profile ID the 2g.20gb (ID 1) would come before the 1g.20gb
		// (ID 9); by name, as NVIDIA sorts, the 1g.20gb is first.
		{"a MIG device of at least 20 GiB is the 1g.20gb, first by name", big, []string{"gpu-0-mig-1g20gb-9-0"}},
		{"a 1g.10gb is the first placement of the first GPU", claim(want{"mig.nvidia.com", "1g.10gb", 1}), []string{"gpu-0-mig-1g10gb-0-0"}},
		{"a 1g.20gb comes after the 1g.10gb+me placements by name", claim(want{"mig.nvidia.com", "1g.20gb", 2}), []string{"gpu-0-mig-1g20gb-9-0", "gpu-0-mig-1g20gb-9-1"}},
		{"any MIG device is the first by name", claim(want{"mig.nvidia.com", "", 1}), []string{"gpu-0-mig-1g10gb-0-0"}},
		{"two whole GPUs are the first two", claim(want{"gpu.nvidia.com", "", 2}), []string{"gpu-0", "gpu-1"}},
		{"a selector on the whole GPU's multiprocessors fits", sms, []string{"gpu-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := snap.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dgx-1"}}, []*resourceapi.ResourceClaim{tc.claim})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res[0].Devices.Results {
				got = append(got, r.Device)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("devices = %v, want %v", got, tc.want)
			}
		})
	}
}

// NVIDIA's counter sets under DynamicMIG with --consumable-shares=N carry a
// shares counter that inventory leaves out (doc.go). No device consumes it,
// so a run of claims taking shares of whole GPUs and MIG devices, each
// allocated and then held while the next is allocated, gets the same devices
// and the same consumed capacity from NVIDIA's recorded slices as from
// inventory's, down to the claim that no longer fits.
func TestClaimsGetTheSameDevicesWithoutTheUnconsumedSharesCounter(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "nvidia", "dgxh100-dynamic-mig-shares-4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var recorded []nvidiaSlice
	if err := yaml.Unmarshal(raw, &recorded); err != nil {
		t.Fatal(err)
	}
	hasShares := false
	var theirs []*resourceapi.ResourceSlice
	for i, s := range recorded {
		for _, cs := range s.SharedCounters {
			_, ok := cs.Counters["shares"]
			hasShares = hasShares || ok
		}
		theirs = append(theirs, &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("nvidia-%d", i)},
			Spec: resourceapi.ResourceSliceSpec{Driver: inventory.DefaultDriver, NodeName: ptr.To("dgx-1"),
				Pool:    resourceapi.ResourcePool{Name: "dgx-1", ResourceSliceCount: int64(len(recorded))},
				Devices: s.Devices, SharedCounters: s.SharedCounters}})
	}
	if !hasShares {
		t.Fatal("the recorded slices have no shares counter: nothing is compared")
	}
	ours, err := inventory.Slices(discoverMock(t, "dgxh100").Node, inventory.Options{NodeName: "dgx-1", Mode: inventory.ModeDynamicMIG, ConsumableShares: "4"})
	if err != nil {
		t.Fatal(err)
	}
	snaps := [2]*allocator.Snapshot{allocator.NewSnapshot(allocator.Options{}), allocator.NewSnapshot(allocator.Options{})}
	for k, sl := range [2][]*resourceapi.ResourceSlice{theirs, ours} {
		for _, s := range sl {
			if err := snaps[k].AddOrUpdateSlice(s); err != nil {
				t.Fatalf("slice %s: %v", s.Name, err)
			}
		}
		for _, c := range classes {
			if err := snaps[k].AddOrUpdateClass(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	shares := func(n int64, reqs ...want) *resourceapi.ResourceClaim {
		c := claim(reqs...)
		for i := range c.Spec.Devices.Requests {
			c.Spec.Devices.Requests[i].Exactly.Capacity = &resourceapi.CapacityRequirements{
				Requests: map[resourceapi.QualifiedName]resource.Quantity{"shares": *resource.NewQuantity(n, resource.DecimalSI)}}
		}
		return c
	}
	steps := []*resourceapi.ResourceClaim{
		shares(2, want{"gpu.nvidia.com", "", 1}),
		shares(2, want{"gpu.nvidia.com", "", 1}),
		shares(1, want{"gpu.nvidia.com", "", 1}),
		shares(4, want{"mig.nvidia.com", "3g.40gb", 2}),
		shares(1, want{"mig.nvidia.com", "1g.10gb", 5}),
		shares(3, want{"mig.nvidia.com", "3g.40gb", 12}),
		shares(4, want{"gpu.nvidia.com", "", 8}),
		shares(1, want{"gpu.nvidia.com", "", 3}),
	}
	fitted := 0
	for i, c := range steps {
		c.Name, c.UID = fmt.Sprintf("job-%d", i), types.UID(fmt.Sprintf("uid-job-%d", i))
		var got [2]string
		for k, snap := range snaps {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := snap.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dgx-1"}}, []*resourceapi.ResourceClaim{c})
			cancel()
			switch {
			case errors.Is(err, allocator.ErrUnsatisfiable):
				got[k] = "does not fit"
				continue
			case err != nil:
				t.Fatalf("claim %s: %v", c.Name, err)
			}
			for _, r := range res[0].Devices.Results {
				got[k] += r.Device
				for _, name := range slices.Sorted(maps.Keys(r.ConsumedCapacity)) {
					q := r.ConsumedCapacity[name]
					got[k] += fmt.Sprintf(" %s=%s", name, q.String())
				}
				got[k] += "; "
			}
			held := c.DeepCopy()
			held.Status.Allocation = &res[0]
			if err := snap.AddOrUpdateClaim(held); err != nil {
				t.Fatal(err)
			}
		}
		if got[0] != got[1] {
			t.Errorf("claim %s: on NVIDIA's slices %s, on inventory's %s", c.Name, got[0], got[1])
		}
		t.Logf("%s: %s", c.Name, got[0])
		if got[0] != "does not fit" {
			fitted++
		}
	}
	// A whole GPU's engine capacities have no request policy, so a claim
	// on it takes all of them and the next claim gets the next GPU; 12
	// 3g.40gb and 8 whole GPUs do not fit, 3 whole GPUs still do. The two
	// runs must agree on both sides of that edge.
	if fitted == 0 || fitted == len(steps) {
		t.Errorf("%d of %d claims fit: the run never reaches the edge", fitted, len(steps))
	}
}
