package pods_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/inventory"
)

// nvidiaDriver is the driver of the slices inventory publishes.
const nvidiaDriver = "gpu.nvidia.com"

// dgxProfiles are the templates of dgxMIG: one MIG partition of a profile each, and "whole", one GPU
// published whole (which in dynamic MIG consumes all of its GPU's counter set).
var dgxProfiles = map[string]string{"mig-1g": "1g.10gb", "mig-2g": "2g.20gb", "mig-3g": "3g.40gb", "mig-7g": "7g.80gb"}

// dgxMIG is a Cluster with the choice on nodes node-0000, … each a DGX H100 in dynamic MIG as inventory
// publishes it (eight GPUs of one counter set each; the whole GPU and every MIG placement draw on it, in
// one pool, GPU after GPU), NVIDIA's classes mig.nvidia.com and gpu.nvidia.com and the templates of
// dgxProfiles and "whole". It returns the published slices too, for allocator/verify.
func dgxMIG(t testing.TB, choice pods.Choice, nodes int) (*pods.Cluster, []*resourceapi.ResourceSlice) {
	t.Helper()
	tp, err := inventory.Profile("dgxh100")
	must(t, err)
	tp.Mode = inventory.ModeDynamicMIG
	snap := allocator.NewSnapshot(allocator.Options{})
	var published []*resourceapi.ResourceSlice
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		must(t, snap.AddOrUpdateNode(node(name, nil)))
		slices, err := tp.Slices(name, 1)
		must(t, err)
		for _, s := range slices {
			must(t, snap.AddOrUpdateSlice(s))
		}
		published = append(published, slices...)
	}
	for _, typ := range []string{"mig", "gpu"} {
		must(t, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: typ + ".nvidia.com"}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.driver == %q && device.attributes[%q].type == %q`, nvidiaDriver, nvidiaDriver, typ)}}}}}))
	}
	c := pods.New(snap, pods.Options{Choice: choice, NameSuffix: fixedSuffixes()})
	for name, profile := range dgxProfiles {
		must(t, c.AddOrUpdateTemplate(nvidiaTemplate(name, "mig", fmt.Sprintf(`device.attributes[%q].profile == %q`, nvidiaDriver, profile))))
	}
	must(t, c.AddOrUpdateTemplate(nvidiaTemplate("whole", "gpu", "")))
	return c, published
}

// nvidiaTemplate asks for one device of NVIDIA's class for typ, with the selector if not empty.
func nvidiaTemplate(name, typ, selector string) *resourceapi.ResourceClaimTemplate {
	req := &resourceapi.ExactDeviceRequest{DeviceClassName: typ + ".nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}
	if selector != "" {
		req.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}
	}
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: req}}}}},
	}
}

// hold adds to the snapshot a claim allocated the devices of the node's pool, pinned to the node, as
// pods placed earlier leave them.
func hold(t testing.TB, snap *allocator.Snapshot, nodeName string, devices ...string) {
	t.Helper()
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held-" + nodeName, UID: types.UID("held-" + nodeName)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "mig.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(len(devices))}}}}},
	}
	alloc := &resourceapi.AllocationResult{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}}}}}}
	for _, d := range devices {
		alloc.Devices.Results = append(alloc.Devices.Results, resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: nvidiaDriver, Pool: nodeName, Device: d})
	}
	claim.Status.Allocation = alloc
	must(t, snap.AddOrUpdateClaim(claim))
}

// TestBestFitPacksWithinNode: on a DGX H100 in dynamic MIG whose GPUs 0–5 are taken whole and GPU 7
// holds one 1g partition, BestFit puts the next 1g partition on GPU 7, the GPU already in use, and a pod
// for a whole GPU then still fits on GPU 6. FirstFit, in upstream's order, opens GPU 6 for the partition,
// and the whole GPU then fits nowhere: the node choice alone (one node here) cannot keep a GPU whole.
func TestBestFitPacksWithinNode(t *testing.T) {
	for _, tc := range []struct {
		choice    pods.Choice
		partition string // the device the second 1g partition gets
		whole     string // the device of the whole GPU; "" when it fits nowhere
	}{
		{pods.BestFit, "gpu-7-mig-1g10gb-0-1", "gpu-6"},
		{pods.FirstFit, "gpu-6-mig-1g10gb-0-0", ""},
	} {
		t.Run(tc.choice.String(), func(t *testing.T) {
			ctx := context.Background()
			c, _ := dgxMIG(t, tc.choice, 1)
			hold(t, c.Snapshot(), "node-0000", "gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-7-mig-1g10gb-0-0")
			p, err := c.Place(ctx, pod("small", "gpu=template:mig-1g"))
			must(t, err)
			if got := p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Device; got != tc.partition {
				t.Errorf("1g partition on %s, want %s", got, tc.partition)
			}
			must(t, c.Assume(p))
			p, err = c.Place(ctx, pod("large", "gpu=template:whole"))
			switch {
			case tc.whole == "" && err == nil:
				t.Errorf("whole GPU placed on %s, want no fit", p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Device)
			case tc.whole == "" && !errors.Is(err, pods.ErrNoNode):
				t.Errorf("whole GPU: %v, want %v", err, pods.ErrNoNode)
			case tc.whole != "" && err != nil:
				t.Errorf("whole GPU: %v", err)
			case tc.whole != "":
				if got := p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Device; got != tc.whole {
					t.Errorf("whole GPU on %s, want %s", got, tc.whole)
				}
			}
		})
	}
}

// usedSets counts, per node, the counter sets (GPUs) of which some device is allocated.
func usedSets(t testing.TB, snap *allocator.Snapshot) int {
	t.Helper()
	used := map[[2]string]bool{}
	for _, claim := range snap.Claims("") {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			d, ok := snap.Device(allocator.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device})
			if !ok {
				t.Fatalf("allocated device %s/%s/%s not in the snapshot", r.Driver, r.Pool, r.Device)
			}
			for _, cc := range d.ConsumesCounters {
				used[[2]string{r.Pool, cc.CounterSet}] = true
			}
		}
	}
	return len(used)
}

// TestBestFitPacksShares: on a node of two GPUs that take shares of their 8Gi of memory, the second
// already serving a 4Gi share, BestFit puts a 2Gi share on the second GPU, whose capacity is the more
// used, and a pod for all 8Gi of a GPU then still fits on the first. FirstFit takes the first GPU in
// upstream order, and the 8Gi pod then fits nowhere.
func TestBestFitPacksShares(t *testing.T) {
	for _, tc := range []struct {
		choice pods.Choice
		share  string // the device of the 2Gi share
		whole  string // the device of the 8Gi share; "" when it fits nowhere
	}{
		{pods.BestFit, "shared-1", "shared-0"},
		{pods.FirstFit, "shared-0", ""},
	} {
		t.Run(tc.choice.String(), func(t *testing.T) {
			ctx := context.Background()
			c := cluster(t, pods.Options{Choice: tc.choice}, 0, node("n1", nil))
			slice := sharedGPU()
			slice.Spec.Devices = append(slice.Spec.Devices, *slice.Spec.Devices[0].DeepCopy())
			slice.Spec.Devices[0].Name, slice.Spec.Devices[1].Name = "shared-0", "shared-1"
			must(t, c.Snapshot().AddOrUpdateSlice(slice))
			held := claim("held", 1)
			held.UID = "held"
			held.Spec = memoryTemplate("held", "4Gi").Spec.Spec
			held.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "gpu", Driver: driver, Pool: "n1", Device: "shared-1", ShareID: ptr(types.UID("00000000-0000-4000-8000-000000000001")),
				ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("4Gi")},
			}}}}
			must(t, c.Snapshot().AddOrUpdateClaim(held))
			must(t, c.AddOrUpdateTemplate(memoryTemplate("mem-2", "2Gi")))
			must(t, c.AddOrUpdateTemplate(memoryTemplate("mem-8", "8Gi")))
			p, err := c.Place(ctx, pod("small", "gpu=template:mem-2"))
			must(t, err)
			if got := p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Device; got != tc.share {
				t.Errorf("2Gi share on %s, want %s", got, tc.share)
			}
			must(t, c.Assume(p))
			p, err = c.Place(ctx, pod("large", "gpu=template:mem-8"))
			switch {
			case tc.whole == "" && !errors.Is(err, pods.ErrNoNode):
				t.Errorf("8Gi share: placed %v, error %v, want %v", p != nil, err, pods.ErrNoNode)
			case tc.whole != "" && err != nil:
				t.Errorf("8Gi share: %v", err)
			case tc.whole != "":
				if got := p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Device; got != tc.whole {
					t.Errorf("8Gi share on %s, want %s", got, tc.whole)
				}
			}
		})
	}
}
