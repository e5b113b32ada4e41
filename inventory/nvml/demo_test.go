package nvml_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/inventory"
)

// demoDir holds NVIDIA's v0.5.0-era demos and DeviceClasses (see its README).
var demoDir = filepath.Join("..", "testdata", "dra-driver-nvidia-gpu")

// demoCluster loads NVIDIA's DeviceClasses and the demo files through
// allocator/manifest, publishes the DGX H100 mock as node dgx-1 with opts,
// and returns a pods.Cluster over it with the demo's templates and the
// demo's pods (a Deployment's replicas).
func demoCluster(t *testing.T, node inventory.Node, opts inventory.Options, demo ...string) (*pods.Cluster, []*v1.Pod) {
	t.Helper()
	paths := []string{filepath.Join(demoDir, "deviceclasses")}
	for _, d := range demo {
		paths = append(paths, filepath.Join(demoDir, d))
	}
	objs, err := manifest.Load(paths, manifest.Options{SkipUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	opts.NodeName = "dgx-1"
	sl, err := inventory.Slices(node, opts)
	if err != nil {
		t.Fatal(err)
	}
	snap := allocator.NewSnapshot(allocator.Options{})
	// The DGX H100's allocatable, which kube-scheduler's NodeResourcesFit reads (pods placed by the
	// pods package are counted against it).
	k8sNode := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dgx-1"}}
	k8sNode.Status.Allocatable = machines["dgxh100"]
	if err := snap.AddOrUpdateNode(k8sNode); err != nil {
		t.Fatal(err)
	}
	for _, s := range sl {
		if err := snap.AddOrUpdateSlice(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range objs.Classes {
		if err := snap.AddOrUpdateClass(c); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	c := pods.New(snap, pods.Options{NameSuffix: func() string { n++; return fmt.Sprintf("x%04d", n) }})
	for _, tmpl := range objs.Templates {
		if err := c.AddOrUpdateTemplate(tmpl); err != nil {
			t.Fatal(err)
		}
	}
	return c, objs.Pods
}

// replicas returns n pods like p, as `kubectl scale` makes the Deployment's
// ReplicaSet create them.
func replicas(p *v1.Pod, n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		q := p.DeepCopy()
		q.Name = fmt.Sprintf("%s-r%d", p.Name, i)
		q.UID = types.UID(fmt.Sprintf("%s-r%d", p.UID, i))
		out[i] = q
	}
	return out
}

// placeAll places and assumes the pods one by one and returns the device each
// one's claim got, stopping at the first pod that fits nowhere (its index
// is returned, or len(pods)).
func placeAll(t *testing.T, c *pods.Cluster, ps []*v1.Pod) ([]string, int) {
	t.Helper()
	var got []string
	for i, p := range ps {
		pl, err := c.Place(context.Background(), p)
		var none *pods.NoNodeError
		if errors.As(err, &none) || errors.Is(err, allocator.ErrUnsatisfiable) {
			return got, i
		}
		if err != nil {
			t.Fatalf("pod %s: %v", p.Name, err)
		}
		if err := c.Assume(pl); err != nil {
			t.Fatalf("pod %s: %v", p.Name, err)
		}
		devs := ""
		for _, r := range pl.Claims[0].Claim.Status.Allocation.Devices.Results {
			if devs != "" {
				devs += ","
			}
			devs += r.Device
		}
		got = append(got, devs)
	}
	return got, len(ps)
}

func count(devs []string) map[string]int {
	out := map[string]int{}
	for _, d := range devs {
		out[d]++
	}
	return out
}

// demo/specs/consumable-shares/README.md, mode by mode, on a DGX H100
// (8 × 80Gi) published as NVIDIA publishes it with --consumable-shares.
func TestNVIDIAConsumableSharesDemosSchedule(t *testing.T) {
	node := discoverMock(t, "dgxh100").Node
	t.Run("integer: up to N claims share a GPU", func(t *testing.T) {
		c, ps := demoCluster(t, node, inventory.Options{ConsumableShares: "4"}, "consumable-shares/integer-sharing.yaml")
		if len(ps) != 4 {
			t.Fatalf("%d pods, the demo has 4 replicas", len(ps))
		}
		got, n := placeAll(t, c, replicas(ps[0], 40))
		if n != 32 {
			t.Errorf("%d replicas fit, want 8 GPUs × 4 shares = 32", n)
		}
		for d, k := range count(got) {
			if k != 4 {
				t.Errorf("%s holds %d claims, want 4", d, k)
			}
		}
	})
	t.Run("integer without consumable shares: one claim per GPU", func(t *testing.T) {
		c, ps := demoCluster(t, node, inventory.Options{}, "consumable-shares/integer-sharing.yaml")
		if _, n := placeAll(t, c, replicas(ps[0], 9)); n != 8 {
			t.Errorf("%d replicas fit, want 8", n)
		}
	})
	t.Run("memory: 4Gi claims share a GPU up to its memory", func(t *testing.T) {
		c, ps := demoCluster(t, node, inventory.Options{ConsumableShares: "memory"}, "consumable-shares/memory-sharing.yaml")
		got, n := placeAll(t, c, replicas(ps[0], 21))
		if n != 21 || count(got)[got[0]] != 20 || got[20] == got[0] {
			t.Errorf("placed %d: %v; want 20 (80Gi / 4Gi) on the first GPU, the 21st on another", n, count(got))
		}
	})
	t.Run("memory: a claim without memory takes the whole GPU", func(t *testing.T) {
		c, ps := demoCluster(t, node, inventory.Options{ConsumableShares: "memory"}, "consumable-shares/integer-sharing.yaml")
		if _, n := placeAll(t, c, replicas(ps[0], 9)); n != 8 {
			t.Errorf("%d whole-memory claims fit, want 8", n)
		}
	})
	t.Run("unlimited: claims without memory all share the first GPU", func(t *testing.T) {
		c, ps := demoCluster(t, node, inventory.Options{ConsumableShares: "unlimited"}, "consumable-shares/unlimited-sharing.yaml")
		got, n := placeAll(t, c, replicas(ps[0], 50))
		if n != 50 || len(count(got)) != 1 {
			t.Errorf("placed %d on %v; want all 50 on one GPU", n, count(got))
		}
	})
}

// demo/specs/fabric-manager-partitioning asks for two VFIO GPUs of one
// size-2 partition. Inventory does not publish VFIO devices
// (PassthroughSupport), so the demo as written fits nowhere; the same claim
// for whole GPUs (the gate covers them since bdfd5512) gets a pair that
// shares a partition2.
func TestNVIDIAFabricManagerDemoSchedules(t *testing.T) {
	node := discoverMock(t, "dgxh100").Node
	for i := range node.GPUs {
		// Size-2 partitions pair GPUs 1+2, 3+4, 5+6, 7+0 — not 0+1, so
		// that first fit by name must skip gpu-1 for gpu-0's partner.
		m := node.GPUs[i].Minor
		node.GPUs[i].ModuleID = m + 1
		node.GPUs[i].FabricPartitions = map[int]int{1: m, 2: 8 + ((m+7)%8)/2, 8: 0}
	}
	opts := inventory.Options{FabricManagerPartitioning: true}
	c, ps := demoCluster(t, node, opts, "fabric-manager-partitioning")
	if len(ps) != 1 {
		t.Fatalf("%d pods, the demo has 1", len(ps))
	}
	if got, n := placeAll(t, c, ps); n != 0 {
		t.Errorf("the VFIO demo placed on %v; inventory publishes no VFIO devices", got)
	}
	c, ps = demoCluster(t, node, opts, "fabric-manager-partitioning")
	objs, err := manifest.Load([]string{filepath.Join(demoDir, "fabric-manager-partitioning", "resourceClaimTemplates.yaml")}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	whole := objs.Templates[0].DeepCopy()
	whole.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName = "gpu.nvidia.com"
	if err := c.AddOrUpdateTemplate(whole); err != nil {
		t.Fatal(err)
	}
	got, n := placeAll(t, c, replicas(ps[0], 5))
	if n != 4 {
		t.Errorf("%d pairs fit, want 4", n)
	}
	pairs := map[string]bool{"gpu-0,gpu-7": true, "gpu-7,gpu-0": true, "gpu-1,gpu-2": true, "gpu-2,gpu-1": true,
		"gpu-3,gpu-4": true, "gpu-4,gpu-3": true, "gpu-5,gpu-6": true, "gpu-6,gpu-5": true}
	for _, g := range got {
		if !pairs[g] {
			t.Errorf("pair %s does not share a partition2", g)
		}
	}
}

// NVIDIA's DeviceClasses select what inventory publishes: gpu.nvidia.com
// the whole GPUs, mig.nvidia.com the MIG devices, and the compute-domain
// classes the channel and daemon devices.
func TestNVIDIADeviceClassesSelectInventorysDevices(t *testing.T) {
	objs, err := manifest.Load([]string{filepath.Join(demoDir, "deviceclasses")}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Classes) != 5 {
		t.Fatalf("%d classes, want 5", len(objs.Classes))
	}
	gpus, err := inventory.Slices(discoverMock(t, "dgxh100").Node, inventory.Options{NodeName: "dgx-1", Mode: inventory.ModeDynamicMIG})
	if err != nil {
		t.Fatal(err)
	}
	cd, err := inventory.ComputeDomainSlices(inventory.Options{NodeName: "dgx-1"})
	if err != nil {
		t.Fatal(err)
	}
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, s := range append(gpus, cd...) {
		if err := snap.AddOrUpdateSlice(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, cl := range objs.Classes {
		if err := snap.AddOrUpdateClass(cl); err != nil {
			t.Fatal(err)
		}
	}
	for class, want := range map[string]int64{"gpu.nvidia.com": 8, "mig.nvidia.com": 1, "compute-domain-default-channel.nvidia.com": 1,
		"compute-domain-daemon.nvidia.com": 1, "vfio.gpu.nvidia.com": 0} {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c", UID: "uid-c"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeAll}}}}}}
		if class == "mig.nvidia.com" {
			c.Spec.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeExactCount
			c.Spec.Devices.Requests[0].Exactly.Count = 1
		}
		res, err := snap.Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dgx-1"}}, []*resourceapi.ResourceClaim{c})
		got := int64(0)
		if err == nil {
			got = int64(len(res[0].Devices.Results))
		}
		if got != want {
			t.Errorf("class %s: %d devices (err %v), want %d", class, got, err, want)
		}
	}
}
