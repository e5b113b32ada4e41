package pods_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

const migDriver = "mig.example.com"

// migProfiles are the partitions of a test GPU of 7 memory slices, MIG-like: a size and where it may start;
// the 7-slice one is the whole GPU, which consumes every counter of its set.
var migProfiles = []struct {
	size   int
	starts []int
}{{1, []int{0, 1, 2, 3, 4, 5, 6}}, {2, []int{0, 2, 4}}, {3, []int{0, 4}}, {4, []int{0}}, {7, []int{0}}}

// migSlices publishes gpus partitionable GPUs on the node, as dynamic MIG does: a slice of counter sets, one
// per GPU (a counter of 1 per memory slice, and "sm" of 98 of which a partition takes 14 per slice), and a
// slice of every placement of every profile, each consuming its slices' counters.
func migSlices(nodeName string, gpus int) []*resourceapi.ResourceSlice {
	newSlice := func(suffix string) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-" + suffix},
			Spec: resourceapi.ResourceSliceSpec{Driver: migDriver, NodeName: ptr(nodeName),
				Pool: resourceapi.ResourcePool{Name: nodeName + "-mig", Generation: 1, ResourceSliceCount: 2}},
		}
	}
	counters, devices := newSlice("counters"), newSlice("parts")
	for g := range gpus {
		set := resourceapi.CounterSet{Name: fmt.Sprintf("gpu-%d", g), Counters: map[string]resourceapi.Counter{"sm": {Value: resource.MustParse("98")}}}
		for s := range 7 {
			set.Counters[fmt.Sprintf("slice-%d", s)] = resourceapi.Counter{Value: resource.MustParse("1")}
		}
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, set)
		for _, p := range migProfiles {
			for _, start := range p.starts {
				used := map[string]resourceapi.Counter{"sm": {Value: *resource.NewQuantity(int64(14*p.size), resource.DecimalSI)}}
				for s := start; s < start+p.size; s++ {
					used[fmt.Sprintf("slice-%d", s)] = resourceapi.Counter{Value: resource.MustParse("1")}
				}
				devices.Spec.Devices = append(devices.Spec.Devices, resourceapi.Device{
					Name:             fmt.Sprintf("gpu-%d-part-%d-%d", g, p.size, start),
					Attributes:       map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"slices": {IntValue: ptr(int64(p.size))}},
					ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set.Name, Counters: used}},
				})
			}
		}
	}
	return []*resourceapi.ResourceSlice{counters, devices}
}

// partTemplate asks for count partitions of size memory slices.
func partTemplate(size, count int) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("part-%dx%d", size, count)},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: partSpec(size, count)},
	}
}

func partSpec(size, count int) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: "part",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "part", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(count),
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.attributes[%q].slices == %d`, migDriver, size)}}}},
	}}}}
}

// fillOf recounts, from the published slices and the snapshot's claims alone, the fill BestFit scores an
// allocation by: over each device of the results (once) and each counter set it consumes, the mean over
// the set's counters of consumed ÷ capacity, consumed by the devices the snapshot's claims hold (each
// once).
func fillOf(snap *allocator.Snapshot, published []*resourceapi.ResourceSlice, results []resourceapi.AllocationResult) *big.Rat {
	type setID struct{ pool, set string }
	capacity := map[setID]map[string]int64{}
	devices := map[[2]string]resourceapi.Device{}
	for _, s := range published {
		for _, cs := range s.Spec.SharedCounters {
			capacity[setID{s.Spec.Pool.Name, cs.Name}] = map[string]int64{}
			for name, c := range cs.Counters {
				capacity[setID{s.Spec.Pool.Name, cs.Name}][name] = c.Value.Value()
			}
		}
		for _, d := range s.Spec.Devices {
			devices[[2]string{s.Spec.Pool.Name, d.Name}] = d
		}
	}
	consumed := map[setID]map[string]int64{}
	held := map[[2]string]bool{}
	for _, claim := range snap.Claims("") {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			k := [2]string{r.Pool, r.Device}
			if held[k] {
				continue
			}
			held[k] = true
			for _, cc := range devices[k].ConsumesCounters {
				id := setID{r.Pool, cc.CounterSet}
				if consumed[id] == nil {
					consumed[id] = map[string]int64{}
				}
				for name, c := range cc.Counters {
					consumed[id][name] += c.Value.Value()
				}
			}
		}
	}
	sum := new(big.Rat)
	seen := map[[2]string]bool{}
	for _, res := range results {
		for _, r := range res.Devices.Results {
			k := [2]string{r.Pool, r.Device}
			if seen[k] {
				continue
			}
			seen[k] = true
			for _, cc := range devices[k].ConsumesCounters {
				id := setID{r.Pool, cc.CounterSet}
				share := new(big.Rat)
				for name, c := range capacity[id] {
					share.Add(share, big.NewRat(consumed[id][name], c))
				}
				sum.Add(sum, share.Quo(share, big.NewRat(int64(len(capacity[id])), 1)))
			}
		}
	}
	return sum
}

// TestPropBestFitByFill: on fleets of partitionable GPUs (counter sets shared by MIG-like partitions, the
// whole GPU consuming all of a set) and whole GPUs without counters, through a stream of placements,
// assumptions and removals, BestFit chooses the node a comparison of every node would choose: among the
// nodes where the pod fits (AllocateWith BestFit on each: BestFit packs within the node too), the
// highest fill of the allocation there (fillOf, recounted from the published slices and the snapshot's
// claims), then the most devices pinned to the node, then the first by name. On every node the pod fits
// under BestFit's device order exactly where FirstFit's finds a fit, and every placement verifies.
func TestPropBestFitByFill(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		var nodes []*v1.Node
		for i := range rapid.IntRange(2, 6).Draw(rt, "nodes") {
			nodes = append(nodes, node(fmt.Sprintf("n%d", i), nil))
		}
		c := pods.New(cluster(t, pods.Options{}, 0, nodes...).Snapshot(), pods.Options{Choice: pods.BestFit, NameSuffix: fixedSuffixes()})
		snap := c.Snapshot()
		must(t, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "part"}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + migDriver + `"`}}}}}))
		var published []*resourceapi.ResourceSlice
		for _, n := range nodes {
			var slices []*resourceapi.ResourceSlice
			if rapid.IntRange(0, 3).Draw(rt, n.Name+"-whole") == 0 {
				slices = []*resourceapi.ResourceSlice{gpus(n.Name, rapid.IntRange(1, 4).Draw(rt, n.Name+"-gpus"))}
			} else {
				slices = migSlices(n.Name, rapid.IntRange(1, 3).Draw(rt, n.Name+"-gpus"))
			}
			for _, s := range slices {
				published = append(published, s)
				must(t, snap.AddOrUpdateSlice(s))
			}
		}
		type kind struct {
			template string
			spec     resourceapi.ResourceClaimSpec
		}
		var kinds []kind
		for _, p := range migProfiles {
			for count := 1; count <= 2; count++ {
				tmpl := partTemplate(p.size, count)
				must(t, c.AddOrUpdateTemplate(tmpl))
				kinds = append(kinds, kind{tmpl.Name, tmpl.Spec.Spec})
			}
		}
		must(t, c.AddOrUpdateTemplate(template("gpus-1", 1)))
		kinds = append(kinds, kind{"gpus-1", claimSpec(1)})
		var placed []*v1.Pod
		for step := range rapid.IntRange(1, 30).Draw(rt, "steps") {
			if len(placed) > 0 && rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("remove-%d", step)) == 0 {
				k := rapid.IntRange(0, len(placed)-1).Draw(rt, fmt.Sprintf("which-%d", step))
				must(t, c.Remove(placed[k]))
				placed = append(placed[:k], placed[k+1:]...)
				continue
			}
			kd := rapid.SampledFrom(kinds).Draw(rt, fmt.Sprintf("kind-%d", step))
			p := pod(fmt.Sprintf("pod-%d", step), "gpu=template:"+kd.template)
			// What comparing every node chooses.
			load := pinnedLoad(c)
			want, wantFill := "", new(big.Rat)
			for _, n := range snap.Nodes() {
				probe := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe"}, Spec: kd.spec}
				res, err := snap.AllocateWith(ctx, allocator.BestFit, n, []*resourceapi.ResourceClaim{probe})
				// BestFit's order within the node changes which devices, never whether the pod fits.
				fits, ffErr := snap.Fits(ctx, n, []*resourceapi.ResourceClaim{probe})
				must(t, ffErr)
				if fits != (err == nil) {
					rt.Fatalf("%s (%s) on %s: FirstFit fits %v, BestFit answers %v", p.Name, kd.template, n.Name, fits, err)
				}
				if errors.Is(err, allocator.ErrUnsatisfiable) {
					continue
				}
				must(t, err)
				f := fillOf(snap, published, res)
				if want == "" || f.Cmp(wantFill) > 0 || f.Cmp(wantFill) == 0 && load[n.Name] > load[want] {
					want, wantFill = n.Name, f
				}
			}
			pl, err := c.Place(ctx, p)
			if want == "" {
				if err == nil {
					rt.Fatalf("%s placed on %s, but fits on no node", p.Name, pl.Node)
				}
				continue
			}
			if err != nil {
				rt.Fatalf("%s: %v, but fits on %s", p.Name, err, want)
			}
			if pl.Node != want {
				rt.Fatalf("%s (%s) placed on %s, want %s with fill %s (load %v)", p.Name, kd.template, pl.Node, want, wantFill.RatString(), load)
			}
			verifyAndAssume(rt, c, published, nodes, p, pl)
			placed = append(placed, p)
		}
	})
}
