package inventory_test

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/inventory"
)

// genGPU draws a MIG GPU with up to 8 memory slices and up to 5 profiles.
func genGPU(t *rapid.T, minor int) inventory.GPU {
	slices := rapid.IntRange(1, 8).Draw(t, "slices")
	g := inventory.GPU{Minor: minor, Index: minor, UUID: fmt.Sprintf("GPU-%d", minor), ProductName: "p",
		CUDAComputeCapability: "9.0", MemoryBytes: int64(slices) << 30, MIGCapable: true}
	nprof := rapid.IntRange(0, 5).Draw(t, "profiles")
	for id := range nprof {
		size := rapid.IntRange(1, slices).Draw(t, "size")
		p := inventory.MIGProfile{
			Name: fmt.Sprintf("%dg.%dgb", size, size*5), GIProfileID: id, SliceCount: size,
			InstanceCount:   rapid.IntRange(0, 8).Draw(t, "instances"),
			Multiprocessors: rapid.Int64Range(0, 20).Draw(t, "sm"), CopyEngines: rapid.Int64Range(0, 3).Draw(t, "ce"),
			Decoders: rapid.Int64Range(0, 3).Draw(t, "dec"), Encoders: rapid.Int64Range(0, 2).Draw(t, "enc"),
			JPEGEngines: rapid.Int64Range(0, 2).Draw(t, "jpeg"), OFAEngines: rapid.Int64Range(0, 1).Draw(t, "ofa"),
			MemoryBytes: int64(size) << 30,
		}
		for start := 0; start+size <= slices; start++ {
			if rapid.Bool().Draw(t, "placement") {
				p.Placements = append(p.Placements, inventory.Placement{Start: start, Size: size})
			}
		}
		g.MIGProfiles = append(g.MIGProfiles, p)
	}
	return g
}

func TestPropSlicesAreValidAndCountersMatchPlacements(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		node := inventory.Node{DriverVersion: "580.95.05", CUDADriverVersion: "13.0"}
		n := rapid.IntRange(0, 10).Draw(t, "gpus")
		taints := map[string][]resourceapi.DeviceTaint{}
		for i := range n {
			node.GPUs = append(node.GPUs, genGPU(t, i))
			if rapid.Bool().Draw(t, "tainted") {
				taints[node.GPUs[i].UUID] = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "48", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
			}
		}
		mode := rapid.SampledFrom([]inventory.Mode{inventory.ModeGPU, inventory.ModeStaticMIG, inventory.ModeDynamicMIG}).Draw(t, "mode")
		sl, err := inventory.Slices(node, inventory.Options{NodeName: "node", Mode: mode, Taints: taints})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sl {
			if errs := inventory.ValidateSlice(s); len(errs) > 0 {
				t.Fatalf("%s: %v", s.Name, errs)
			}
		}
		if errs := inventory.ValidatePool(sl); len(errs) > 0 {
			t.Fatal(errs)
		}
		if mode != inventory.ModeDynamicMIG {
			return
		}
		sets := counterSets(sl)
		by := map[string]resourceapi.Device{}
		for _, d := range devices(sl) {
			by[d.Name] = d
		}
		for _, g := range node.GPUs {
			full := by[inventory.GPUDeviceName(g.Minor)]
			if len(full.ConsumesCounters) == 0 {
				// Without any placement the GPU is published whole.
				for _, p := range g.MIGProfiles {
					if len(p.Placements) > 0 {
						t.Fatalf("gpu %d has placements but is not partitionable", g.Minor)
					}
				}
				continue
			}
			// A combination of placements drawn left to right without
			// overlap fits exactly when, per capacity, the profiles' sum is
			// at most the largest figure of any profile: NVIDIA's driver
			// sizes the counter set that way, so some combinations the GPU
			// could hold (seven 1g.10gb on an H100, needing 7 of the 7g's 5
			// decoders) are refused, as on a cluster running its driver.
			var combo []resourceapi.Device
			var sum, most [7]int64
			figures := func(p inventory.MIGProfile) [7]int64 {
				return [7]int64{p.Multiprocessors, p.CopyEngines, p.Decoders, p.Encoders, p.JPEGEngines, p.OFAEngines, p.MemoryBytes}
			}
			for _, p := range g.MIGProfiles {
				if len(p.Placements) > 0 {
					for k, n := range figures(p) {
						most[k] = max(most[k], n)
					}
				}
			}
			end := 0
			for _, p := range g.MIGProfiles {
				for _, pl := range p.Placements {
					d := by[inventory.MIGDeviceName(g.Minor, p.Name, p.GIProfileID, pl.Start)]
					if fits(sets, full, d) {
						t.Fatalf("%s fits together with the whole GPU", d.Name)
					}
					if !fits(sets, d) {
						t.Fatalf("%s does not fit alone", d.Name)
					}
					if pl.Start >= end && rapid.Bool().Draw(t, "take") {
						combo = append(combo, d)
						for k, n := range figures(p) {
							sum[k] += n
						}
						end = pl.Start + pl.Size
					}
				}
			}
			want := true
			for k := range sum {
				want = want && sum[k] <= most[k]
			}
			if got := fits(sets, combo...); got != want {
				t.Fatalf("a combination of %d disjoint placements fits = %v, want %v (sums %v, largest %v)", len(combo), got, want, sum, most)
			}
			// Overlapping placements never fit together.
			for _, p := range g.MIGProfiles {
				for _, q := range g.MIGProfiles {
					for _, a := range p.Placements {
						for _, b := range q.Placements {
							if p.GIProfileID == q.GIProfileID && a == b {
								continue
							}
							overlap := a.Start < b.Start+b.Size && b.Start < a.Start+a.Size
							da := by[inventory.MIGDeviceName(g.Minor, p.Name, p.GIProfileID, a.Start)]
							db := by[inventory.MIGDeviceName(g.Minor, q.Name, q.GIProfileID, b.Start)]
							if overlap && fits(sets, da, db) {
								t.Fatalf("%s and %s overlap but fit together", da.Name, db.Name)
							}
						}
					}
				}
			}
		}
	})
}
