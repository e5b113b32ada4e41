package pods_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/inventory"
)

// fillSizes are the fleet sizes the fill benchmarks run at.
var fillSizes = []int{500, 1000, 5000, 10000}

// scaleFleet is a fleet of n nodes of one kind and the pods that fill it, one pod a device: "gpu" (8 whole
// GPUs a node, pods asking one through the template "one-gpu"), "mig" (DGX H100 in dynamic MIG, pods
// asking one 3g.40gb through "one-mig", two a GPU) or "mixed" (the two kinds alternating by name, pods
// of both templates in turn, so that each pod's first nodes include nodes of the other kind).
func scaleFleet(b *testing.B, kind string, choice pods.Choice, n int) (*pods.Cluster, []*v1.Pod) {
	b.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	var dgx []*resourceapi.ResourceSlice
	if kind != "gpu" {
		t, err := inventory.Profile("dgxh100")
		must(b, err)
		t.Mode = inventory.ModeDynamicMIG
		dgx, err = t.Slices("node-src", 1)
		must(b, err)
	}
	var ps []*v1.Pod
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		must(b, snap.AddOrUpdateNode(node(name, nil)))
		if kind == "gpu" || (kind == "mixed" && i%2 == 0) {
			must(b, snap.AddOrUpdateSlice(gpus(name, 8)))
			for range 8 {
				ps = append(ps, pod(fmt.Sprintf("pod-%06d", len(ps)), "gpu=template:one-gpu"))
			}
			continue
		}
		for _, s := range dgx {
			s = s.DeepCopy()
			s.Name = strings.Replace(s.Name, "node-src", name, 1)
			s.Spec.Pool.Name = strings.Replace(s.Spec.Pool.Name, "node-src", name, 1)
			s.Spec.NodeName = &name
			must(b, snap.AddOrUpdateSlice(s))
		}
		for range 16 {
			ps = append(ps, pod(fmt.Sprintf("pod-%06d", len(ps)), "mig=template:one-mig"))
		}
	}
	if kind == "mixed" {
		// Interleave the two shapes, so that both fill at the same pace.
		var g, m []*v1.Pod
		for _, p := range ps {
			if p.Spec.ResourceClaims[0].Name == "gpu" {
				g = append(g, p)
			} else {
				m = append(m, p)
			}
		}
		ps = ps[:0]
		for len(g) > 0 || len(m) > 0 {
			if len(g) > 0 {
				ps, g = append(ps, g[0]), g[1:]
			}
			for k := 0; k < 2 && len(m) > 0; k++ {
				ps, m = append(ps, m[0]), m[1:]
			}
		}
	}
	// The whole-GPU class takes the devices of the test driver only; the MIG class NVIDIA's MIG devices.
	must(b, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	must(b, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "mig.nvidia.com"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig"`}}}}}))
	c := pods.New(snap, pods.Options{Choice: choice, NameSuffix: fixedSuffixes()})
	must(b, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	must(b, c.AddOrUpdateTemplate(&resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one-mig"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "mig",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "mig.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].profile == "3g.40gb"`}}}},
		}}}}},
	}))
	return c, ps
}

// fillRun places and assumes the pods one by one and returns the time and the allocations it took;
// every pod must be placed.
func fillRun(b *testing.B, c *pods.Cluster, ps []*v1.Pod) (time.Duration, uint64) {
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for _, p := range ps {
		pl, err := c.Place(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		must(b, c.Assume(pl))
	}
	d := time.Since(start)
	runtime.ReadMemStats(&after)
	return d, after.Mallocs - before.Mallocs
}

// BenchmarkFill fills fleets (scaleFleet) from empty to full, pod by pod (Place, then Assume), at 500 to
// 10,000 nodes, and reports the time and allocations per pod: with the index of full nodes these stay
// flat as the fleet grows; index=off filters every node again for every pod (FirstFit: every full node
// before the first with room), which is run up to 1,000 nodes (see BenchmarkFillTail for larger). Run
// with -benchtime 1x.
//
// Measured with the index on (one run each, on a 2-core machine shared with other work: times vary up
// to 2x from run to run, and the runs marked * ran under about 5x the load of the others; allocations
// are exact). µs per pod / allocations per pod, at 500, 1,000, 5,000 and 10,000 nodes:
//
//	gpu   FirstFit   70 / 219    71 / 217    79 / 217    79 / 217
//	gpu   BestFit    31 / 210    38 / 210    40 / 210    54 / 210
//	gpu   Spread     32 / 208    40 / 208    42 / 208    54 / 208
//	mig   BestFit   396 / 1594  383 / 1594  447 / 1595  544 / 1595
//	mig   Spread    358 / 1453  351 / 1453  647*/ 1453  456*/ 1453
//	mixed BestFit   270 / 1134  255 / 1134  687*/ 1135  732*/ 1135
//	mixed Spread    259 / 1039  250 / 1039  372*/ 1039  330*/ 1039
//
// Allocations per pod do not move with the fleet; the time left growing is the collector's and the
// caches' on a larger heap. Measured again later on a quiet machine, gpu at 500 / 1,000 / 5,000 /
// 10,000 nodes: FirstFit 62 / 63 / 74 / 74 µs, BestFit 29 / 35 / 38 / 51, Spread 33 / 37 / 42 / 54; with
// GOGC=off, at 500 / 5,000 / 10,000: FirstFit 58 / 63 / 63, BestFit 27 / 27 / 31. Before BestFit's and Spread's rank index (rankindex.go), BestFit and Spread
// kept a sorted order of every node, moved by each Assume, and a scored BestFit (mig, mixed: counter
// sets) filtered, allocated and scored every node not known full for every pod: gpu BestFit 128 µs at
// 500 nodes, 82 at 1,000, 101 at 5,000 and 509* at 10,000, Spread 140*, 63, 93, 398*; mig BestFit
// 721 µs and 1,795 allocations at 500 nodes, 950 µs and 1,928 at 1,000; mixed BestFit 415 µs and
// 1,235 at 500, 572 µs and 1,285 at 1,000 (mig and mixed at 10,000 nodes took too long to measure).
//
// Later, with shared counter blocks, CEL views and remembered consumption (quiet machine, index on),
// µs per pod / allocations per pod at 500 and 10,000 nodes: mig BestFit 201 / 565 and 233 / 566, mig
// Spread 158 / 433 and 213 / 432, mixed BestFit 132 / 444 and 168 / 445, mixed Spread 120 / 355 and
// 161 / 355 (mig BestFit 216 at 1,000 and 227 at 5,000 nodes).
//
// Memory: the filled mig fleet of 5,000 DGX H100 nodes peaks at 2.5 GB resident, and a run of mig and
// mixed at 500 and 10,000 nodes at 4.7 GB (2 GB at 1,000 nodes and about 20 GB at 10,000 before).
func BenchmarkFill(b *testing.B) {
	for _, kind := range []string{"gpu", "mig", "mixed"} {
		for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit, pods.Spread} {
			for _, n := range fillSizes {
				for _, indexed := range []bool{true, false} {
					if !indexed && n > 1000 {
						continue
					}
					b.Run(fmt.Sprintf("%s/%s/nodes=%d/index=%v", kind, choice, n, onOff(indexed)), func(b *testing.B) {
						var total time.Duration
						var mallocs, placed uint64
						for range b.N {
							b.StopTimer()
							c, ps := scaleFleet(b, kind, choice, n)
							if !indexed {
								pods.WithoutNodeIndex(c)
							}
							b.StartTimer()
							d, m := fillRun(b, c, ps)
							total += d
							mallocs += m
							placed += uint64(len(ps))
						}
						b.ReportMetric(float64(total.Nanoseconds())/float64(placed), "ns/pod")
						b.ReportMetric(float64(mallocs)/float64(placed), "allocs/pod")
					})
				}
			}
		}
	}
}

// BenchmarkFillTail fills fleets to 1,000 pods short of full with the index (not timed), then times the
// last 1,000 pods with and without it: the placements that, without the index, filter the most full
// nodes. Run with -benchtime 1x.
func BenchmarkFillTail(b *testing.B) {
	const tail = 1000
	for _, kind := range []string{"gpu", "mig", "mixed"} {
		for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit, pods.Spread} {
			for _, n := range fillSizes {
				for _, indexed := range []bool{true, false} {
					b.Run(fmt.Sprintf("%s/%s/nodes=%d/index=%v", kind, choice, n, onOff(indexed)), func(b *testing.B) {
						var total time.Duration
						var mallocs, placed uint64
						for range b.N {
							b.StopTimer()
							c, ps := scaleFleet(b, kind, choice, n)
							fillRun(b, c, ps[:len(ps)-tail])
							if !indexed {
								pods.WithoutNodeIndex(c)
							}
							b.StartTimer()
							d, m := fillRun(b, c, ps[len(ps)-tail:])
							total += d
							mallocs += m
							placed += tail
						}
						b.ReportMetric(float64(total.Nanoseconds())/float64(placed), "ns/pod")
						b.ReportMetric(float64(mallocs)/float64(placed), "allocs/pod")
					})
				}
			}
		}
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
