package allocator_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/celenv"
)

// The requeue benchmarks measure one event against a cluster of 100 nodes with 8 GPUs each and 100
// DeviceClasses (one per GPU model), with 100 or 10,000 pending claims. "spread" puts the pending claims
// evenly over the classes, so the event's class has 1 or 100 of them; "fixed" gives the event's class 10
// claims and spreads the rest over the other classes, so the answer is the same 10 claims whatever the
// number pending: the cost must not grow with it.

const rqBenchClasses = 100

func rqBenchModel(i int) string { return fmt.Sprintf("m%02d", i%rqBenchClasses) }

// rqBenchSlice is node i's slice: 8 GPUs of model i%100; firmware marks the version of the slice, and
// tainted gives every device a NoSchedule taint.
func rqBenchSlice(i int, firmware string, tainted bool) *resourceapi.ResourceSlice {
	var devs []resourceapi.Device
	for d := range 8 {
		dev := rqGPU(fmt.Sprintf("gpu-%d", d), rqBenchModel(i), 80)
		dev.Attributes["firmware"] = resourceapi.DeviceAttribute{StringValue: &firmware}
		if tainted {
			dev.Taints = []resourceapi.DeviceTaint{{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		}
		devs = append(devs, dev)
	}
	return rqSlice(fmt.Sprintf("node-%03d", i), devs...)
}

func rqBenchRequeue(b *testing.B, pending int, fixed bool) *allocator.Requeue {
	ctx := context.Background()
	r, err := allocator.NewRequeue(allocator.RequeueOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for c := range rqBenchClasses {
		expr := fmt.Sprintf(`device.attributes["gpu.example.com"].model == %q`, rqBenchModel(c))
		if _, err := r.AddOrUpdateClass(ctx, rqClass(fmt.Sprintf("class-%02d", c), expr)); err != nil {
			b.Fatal(err)
		}
	}
	for n := range 100 {
		if _, err := r.AddOrUpdateSlice(ctx, rqBenchSlice(n, "1.0", false)); err != nil {
			b.Fatal(err)
		}
	}
	for k := range pending {
		class := k % rqBenchClasses
		if fixed {
			class = 1 + k%(rqBenchClasses-1)
			if k < 10 {
				class = 0
			}
		}
		claim := rqClaim("ns", fmt.Sprintf("claim-%05d", k), rqRequest{
			class: fmt.Sprintf("class-%02d", class),
			exprs: []string{`device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`},
		})
		if err := r.AddPending(claim); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

func rqBenchCases(b *testing.B, run func(b *testing.B, r *allocator.Requeue, want int)) {
	for _, pending := range []int{100, 10000} {
		for _, fixed := range []bool{false, true} {
			want := pending / rqBenchClasses
			name := "spread"
			if fixed {
				want, name = 10, "fixed"
			}
			b.Run(fmt.Sprintf("pending=%d/%s/woken=%d", pending, name, want), func(b *testing.B) {
				run(b, rqBenchRequeue(b, pending, fixed), want)
			})
		}
	}
}

// BenchmarkRequeueSliceChanged republishes node-000's slice with every device's firmware attribute
// changed: 8 changed devices of model m00, whose class verdicts are evaluated again (8 × 100 classes).
func BenchmarkRequeueSliceChanged(b *testing.B) {
	benchmarkRequeueSlice(b, rqBenchSlice(0, "1.1", false), rqBenchSlice(0, "1.0", false))
}

// BenchmarkRequeueSliceUntainted republishes node-000's slice with the taints of its 8 devices removed (and
// added back, which wakes nobody): CEL sees the same devices, so no class verdict is evaluated again.
func BenchmarkRequeueSliceUntainted(b *testing.B) {
	benchmarkRequeueSlice(b, rqBenchSlice(0, "1.0", true), rqBenchSlice(0, "1.0", false))
}

// benchmarkRequeueSlice alternates between two versions of a slice; one op is one update, and every other
// update (the one to second) must wake the claims of the class.
func benchmarkRequeueSlice(b *testing.B, first, second *resourceapi.ResourceSlice) {
	ctx := context.Background()
	rqBenchCases(b, func(b *testing.B, r *allocator.Requeue, want int) {
		versions := []*resourceapi.ResourceSlice{first, second}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			got, err := r.AddOrUpdateSlice(ctx, versions[i%2])
			if err != nil || (i%2 == 1 && len(got) != want) {
				b.Fatalf("woken %d claims (%v), want %d", len(got), err, want)
			}
			i++
		}
	})
}

// BenchmarkRequeueClaimDeallocated frees one GPU of node-000 (model m00).
func BenchmarkRequeueClaimDeallocated(b *testing.B) {
	ctx := context.Background()
	held := rqAllocated("held", "node-000", false, "gpu-3")
	rqBenchCases(b, func(b *testing.B, r *allocator.Requeue, want int) {
		b.ReportAllocs()
		for b.Loop() {
			got, err := r.ClaimDeallocated(ctx, held)
			if err != nil || len(got) != want {
				b.Fatalf("woken %d claims (%v), want %d", len(got), err, want)
			}
		}
	})
}

// BenchmarkRequeueScanBaseline is what the index replaces: a queueing hint that, for the device freed in
// BenchmarkRequeueClaimDeallocated, scans every pending claim and evaluates its class and request selectors
// on the device (selectors compiled and the device prepared beforehand, as the index has them).
func BenchmarkRequeueScanBaseline(b *testing.B) {
	ctx := context.Background()
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		b.Fatal(err)
	}
	classSel := make([]*celenv.Selector, rqBenchClasses)
	for c := range rqBenchClasses {
		if classSel[c], err = env.Compile(fmt.Sprintf(`device.attributes["gpu.example.com"].model == %q`, rqBenchModel(c))); err != nil {
			b.Fatal(err)
		}
	}
	reqSel, err := env.Compile(`device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`)
	if err != nil {
		b.Fatal(err)
	}
	freed := rqBenchSlice(0, "1.0", false).Spec.Devices[3]
	dev := celenv.NewDevice(rqDriver, &freed)
	for _, pending := range []int{100, 10000} {
		b.Run(fmt.Sprintf("pending=%d/spread/woken=%d", pending, pending/rqBenchClasses), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				woken := 0
				for k := range pending {
					ok, err := classSel[k%rqBenchClasses].Matches(ctx, dev)
					if err != nil {
						b.Fatal(err)
					}
					if ok {
						if ok, err = reqSel.Matches(ctx, dev); err != nil {
							b.Fatal(err)
						}
					}
					if ok {
						woken++
					}
				}
				if woken != pending/rqBenchClasses {
					b.Fatalf("woken %d, want %d", woken, pending/rqBenchClasses)
				}
			}
		})
	}
}

// BenchmarkRequeueMemory reports the heap a Snapshot and a Requeue fed the same 100 nodes of 8 GPUs and
// 100 classes hold together, per device: the Requeue keeping its own copy of every device, and sharing
// the Snapshot's (RequeueOptions.Snapshot). An op builds both.
func BenchmarkRequeueMemory(b *testing.B) {
	ctx := context.Background()
	for _, shared := range []bool{false, true} {
		name := "own"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			var heap float64
			for b.Loop() {
				before := rqHeap()
				snap := allocator.NewSnapshot(allocator.Options{})
				opts := allocator.RequeueOptions{}
				if shared {
					opts.Snapshot = snap
				}
				r, err := allocator.NewRequeue(opts)
				if err != nil {
					b.Fatal(err)
				}
				for c := range rqBenchClasses {
					class := rqClass(fmt.Sprintf("class-%02d", c), fmt.Sprintf(`device.attributes["gpu.example.com"].model == %q`, rqBenchModel(c)))
					if err := snap.AddOrUpdateClass(class); err != nil {
						b.Fatal(err)
					}
					if _, err := r.AddOrUpdateClass(ctx, class); err != nil {
						b.Fatal(err)
					}
				}
				for n := range 100 {
					slice := rqBenchSlice(n, "1.0", false)
					if err := snap.AddOrUpdateSlice(slice); err != nil {
						b.Fatal(err)
					}
					if _, err := r.AddOrUpdateSlice(ctx, slice); err != nil {
						b.Fatal(err)
					}
				}
				heap = float64(rqHeap() - before)
				runtime.KeepAlive(snap)
				runtime.KeepAlive(r)
			}
			b.ReportMetric(heap/800, "B/device")
		})
	}
}

func rqHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
