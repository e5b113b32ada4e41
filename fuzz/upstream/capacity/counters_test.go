package capacity_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dralloc/dralloc/capacity"
	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"
)

// TestCountersAgreeWithUpstream builds a pool of partitionable devices that draw on shared counters, marks
// all devices but one as allocated, and compares whether upstream allocates the free device with
// Counters.Fits after adding the allocated ones. The allocated devices' compatibility groups are drawn
// consistent with each other (all without groups, or all sharing a group), as they are in a cluster where
// they were allocated by a scheduler with the feature on.
func TestCountersAgreeWithUpstream(t *testing.T) {
	var compared, fits atomic.Int64
	rapid.Check(t, func(t *rapid.T) {
		setNames := []string{"s0", "s1"}
		var sets []resourceapi.CounterSet
		for _, s := range setNames {
			sets = append(sets, resourceapi.CounterSet{Name: s, Counters: map[string]resourceapi.Counter{
				"mem":   {Value: milliQ(rapid.Int64Range(0, 8000).Draw(t, s+"mem"))},
				"units": {Value: milliQ(1000 * rapid.Int64Range(0, 8).Draw(t, s+"units"))},
			}})
		}
		grouped := map[string]bool{}
		for _, s := range setNames {
			grouped[s] = rapid.Bool().Draw(t, s+"grouped")
		}
		genConsumes := func(label string, free bool) []resourceapi.DeviceCounterConsumption {
			var out []resourceapi.DeviceCounterConsumption
			for _, s := range setNames {
				if !rapid.Bool().Draw(t, label+s) {
					continue
				}
				var groups []string
				switch {
				case free:
					groups = rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"g0", "g1", "g2"}), 0, 2, func(s string) string { return s }).Draw(t, label+s+"groups")
				case grouped[s]:
					groups = []string{"g0"}
					if extra := rapid.SampledFrom([]string{"", "g1", "g2"}).Draw(t, label+s+"extra"); extra != "" {
						groups = append(groups, extra)
					}
				}
				c := resourceapi.DeviceCounterConsumption{CounterSet: s, CompatibilityGroups: groups, Counters: map[string]resourceapi.Counter{}}
				if rapid.Bool().Draw(t, label+s+"usesMem") {
					c.Counters["mem"] = resourceapi.Counter{Value: milliQ(rapid.Int64Range(0, 4000).Draw(t, label+s+"mem"))}
				}
				if rapid.Bool().Draw(t, label+s+"usesUnits") {
					c.Counters["units"] = resourceapi.Counter{Value: milliQ(1000 * rapid.Int64Range(0, 4).Draw(t, label+s+"units"))}
				}
				out = append(out, c)
			}
			return out
		}
		n := rapid.IntRange(0, 4).Draw(t, "allocated")
		var devices []resourceapi.Device
		var exclusive []string
		counters := capacity.NewCounters(sets)
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("dev-%d", i)
			c := genConsumes(name, false)
			devices = append(devices, resourceapi.Device{Name: name, ConsumesCounters: c})
			exclusive = append(exclusive, name)
			counters.Add(c)
		}
		free := genConsumes("free", true)
		devices = append(devices, resourceapi.Device{Name: "free", ConsumesCounters: free})
		want := counters.Fits(free)

		results, err := allocateUpstream(true, nodeSlices(sets, devices...), exclusive, nil, claimFor(nil, nil))
		if err != nil {
			t.Fatalf("upstream: %v", err)
		}
		compared.Add(1)
		if want {
			fits.Add(1)
		}
		if got := results != nil; got != want {
			t.Fatalf("Counters.Fits = %v, upstream allocated = %v (%+v)", want, got, results)
		}
	})
	t.Logf("compared %d cases with upstream: %d fit, %d did not", compared.Load(), fits.Load(), compared.Load()-fits.Load())
}
