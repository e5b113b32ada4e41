package headroom_test

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// figures is the report's totals and, per node, FREE, F(M) and STRANDED.
func figures(r *headroom.Report) string {
	s := fmt.Sprintf("free %g F %g stranded %g", r.Free, r.F, r.Stranded)
	for _, n := range r.Nodes {
		s += fmt.Sprintf("; %s %g/%g/%g", n.Node, n.Free, n.F, n.StrandedFree)
	}
	return s
}

// TestFragmentationCountsWhatTheAllocatorGives: FREE is the devices a claim without tolerations could
// be given now, so the figures leave out what the allocator will not give: the older generation of a
// republished pool, an incomplete pool, a device with a NoSchedule or NoExecute taint (its own or a
// DeviceTaintRule's). Every expected figure is counted by hand in the case's comment.
func TestFragmentationCountsWhatTheAllocatorGives(t *testing.T) {
	taint := func(s *resourceapi.ResourceSlice, dev int, effect resourceapi.DeviceTaintEffect) *resourceapi.ResourceSlice {
		s.Spec.Devices[dev].Taints = []resourceapi.DeviceTaint{{Key: "example.com/unhealthy", Effect: effect}}
		return s
	}
	generation := func(s *resourceapi.ResourceSlice, gen, count int64, name string) *resourceapi.ResourceSlice {
		s.Name = name
		s.Spec.Pool.Generation, s.Spec.Pool.ResourceSliceCount = gen, count
		return s
	}
	rule := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "drain-b"}}
	pool := "b"
	rule.Spec.DeviceSelector = &resourceapi.DeviceTaintSelector{Pool: &pool}
	rule.Spec.Taint = resourceapi.DeviceTaint{Key: "example.com/drain", Effect: resourceapi.DeviceTaintEffectNoExecute}
	for _, tc := range []struct {
		name   string
		slices []*resourceapi.ResourceSlice
		rules  []*resourceapi.DeviceTaintRule
		held   []string // nodes where a pod holds one GPU
		mix    []headroom.Shape
		want   string
	}{
		// a republished its 2 GPUs as generation 2 and generation 1 is still there: 2 free, not 4. The
		// one-GPU shape fits and can use both: F 0, stranded 0.
		{name: "republished pool counts its newest generation",
			slices: []*resourceapi.ResourceSlice{generation(gpus("a", 2, 0), 1, 1, "a-gen1"), generation(gpus("a", 2, 0), 2, 1, "a-gen2")},
			mix:    []headroom.Shape{{Name: "one", Weight: 1, Requests: []headroom.Request{whole(1)}}},
			want:   "free 2 F 0 stranded 0; a 2/0/0"},
		// b's pool says 2 slices and publishes 1: the allocator uses none of its devices. a has 2.
		{name: "incomplete pool is not free",
			slices: []*resourceapi.ResourceSlice{gpus("a", 2, 0), generation(gpus("b", 2, 0), 1, 2, "b-1-of-2")},
			mix:    []headroom.Shape{{Name: "one", Weight: 1, Requests: []headroom.Request{whole(1)}}},
			want:   "free 2 F 0 stranded 0; a 2/0/0"},
		// a/gpu-0 NoSchedule, b's GPUs NoExecute by the rule, c/gpu-0 None (it keeps no claim off):
		// free a 1, b 0, c 2. Two GPUs a copy: a cannot run it (F 1, its GPU stranded), c can (0).
		{name: "tainted devices are not free",
			slices: []*resourceapi.ResourceSlice{taint(gpus("a", 2, 0), 0, resourceapi.DeviceTaintEffectNoSchedule), gpus("b", 2, 0),
				taint(gpus("c", 2, 0), 0, resourceapi.DeviceTaintEffectNone)},
			rules: []*resourceapi.DeviceTaintRule{rule},
			mix:   []headroom.Shape{{Name: "two", Weight: 1, Requests: []headroom.Request{whole(2)}}},
			want:  "free 3 F 1 stranded 1; a 1/1/1; b 0/0/0; c 2/0/0"},
		// a's gpu-0 is held: one GPU free, which the two-GPU shape cannot use (F 1, stranded 1) and
		// the one-GPU shape can (0); half and half: F 0.5, stranded 0. b: both fit, 2 free, 0.
		{name: "a free GPU no shape can use is stranded",
			slices: []*resourceapi.ResourceSlice{gpus("a", 2, 0), gpus("b", 2, 0)}, held: []string{"a"},
			mix:  []headroom.Shape{{Name: "two", Weight: 1, Requests: []headroom.Request{whole(2)}}},
			want: "free 3 F 1 stranded 1; a 1/1/1; b 2/0/0"},
		{name: "a free GPU one shape can use is not stranded",
			slices: []*resourceapi.ResourceSlice{gpus("a", 2, 0), gpus("b", 2, 0)}, held: []string{"a"},
			mix: []headroom.Shape{{Name: "two", Weight: 0.5, Requests: []headroom.Request{whole(2)}},
				{Name: "one", Weight: 0.5, Requests: []headroom.Request{whole(1)}}},
			want: "free 3 F 0.5 stranded 0; a 1/0.5/0; b 2/0/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := allocator.NewSnapshot(allocator.Options{})
			for _, n := range []string{"a", "b", "c"} {
				must(snap.AddOrUpdateNode(node(n, "32")))
			}
			for _, s := range tc.slices {
				must(snap.AddOrUpdateSlice(s))
			}
			must(snap.AddOrUpdateClass(gpuClass()))
			c := pods.New(snap, pods.Options{NameSuffix: suffixes()})
			addTemplates(c)
			for i, n := range tc.held {
				placeOn(t, c, fmt.Sprintf("held-%d", i), n, "one-gpu")
			}
			inv, err := headroom.NewInventory(tc.slices)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.rules) > 0 {
				// Measured once before the rules, so that a state kept from then shows.
				if _, err := inv.Fragmentation(c, tc.mix); err != nil {
					t.Fatal(err)
				}
				for _, r := range tc.rules {
					must(snap.AddOrUpdateTaintRule(r))
				}
			}
			rep, err := inv.Fragmentation(c, tc.mix)
			if err != nil {
				t.Fatal(err)
			}
			if got := figures(rep); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
