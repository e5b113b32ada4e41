package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// drawPreference draws a preference among the generated cluster's devices (of every node: those of
// other nodes are ignored), some listed twice.
func drawPreference(rt *rapid.T, c *fuzz.Cluster) []allocator.DeviceID {
	var ids []allocator.DeviceID
	for _, s := range c.Slices {
		for _, d := range s.Spec.Devices {
			ids = append(ids, allocator.DeviceID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name})
		}
	}
	if len(ids) == 0 {
		return nil
	}
	perm := rapid.Permutation(ids).Draw(rt, "order")
	prefer := perm[:rapid.IntRange(0, len(perm)).Draw(rt, "n")]
	if len(prefer) > 0 && rapid.Bool().Draw(rt, "twice") {
		prefer = append(prefer, prefer[0])
	}
	return prefer
}

// Every allocation AllocatePreferring makes passes allocator/verify, and the cluster is not mutated.
func TestPropPreferringAllocationsVerify(t *testing.T) {
	for _, st := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit} {
		t.Run(st.String(), func(t *testing.T) {
			// The preference drawn with each cluster, by cluster.
			var mu sync.Mutex
			prefs := map[*fuzz.Cluster][]allocator.DeviceID{}
			gen := rapid.Custom(func(rt *rapid.T) *fuzz.Cluster {
				c := fuzz.ClusterGen(strategyOptions()).Draw(rt, "cluster")
				p := drawPreference(rt, c)
				mu.Lock()
				prefs[c] = p
				mu.Unlock()
				return c
			})
			fuzz.CheckAllocations(t, gen, func(ctx context.Context, c *fuzz.Cluster) ([]resourceapi.AllocationResult, error) {
				mu.Lock()
				prefer := prefs[c]
				mu.Unlock()
				s, err := c.Snapshot(allocator.Options{StepBudget: strategyStepBudget})
				if err != nil {
					return nil, err
				}
				return s.AllocatePreferring(ctx, st, prefer, c.Node, c.Claims)
			})
		})
	}
}

// A preference orders the search and rules nothing out: claims fit with it exactly when they fit
// under AllocateWith with the same strategy, with the same input errors but for errors met at a device.
func TestPropPreferringKeepsFeasibility(t *testing.T) {
	var hits budgetHits
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(strategyOptions()).Draw(rt, "cluster")
		prefer := drawPreference(rt, c)
		ctx := context.Background()
		s, err := c.Snapshot(allocator.Options{StepBudget: strategyStepBudget})
		if err != nil {
			rt.Fatal(err)
		}
		var errs []error
		defer func() { hits.add(errs...) }()
		for _, st := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit} {
			_, plainErr := s.AllocateWith(ctx, st, c.Node, c.Claims)
			res, err := s.AllocatePreferring(ctx, st, prefer, c.Node, c.Claims)
			errs = append(errs, plainErr, err)
			if errors.Is(plainErr, allocator.ErrSearchBudget) || errors.Is(err, allocator.ErrSearchBudget) || metAtDevice(plainErr) || metAtDevice(err) {
				continue
			}
			switch {
			case plainErr == nil && err != nil:
				rt.Fatalf("%s allocates, preferring %v it answers %v", st, prefer, err)
			case plainErr != nil && err == nil:
				rt.Fatalf("%s answers %v, preferring %v it allocates %v", st, plainErr, prefer, res)
			case plainErr != nil && errors.Is(plainErr, allocator.ErrUnsatisfiable) != errors.Is(err, allocator.ErrUnsatisfiable):
				rt.Fatalf("%s answers %v, preferring %v %v", st, plainErr, prefer, err)
			}
		}
	})
	hits.check(t)
}

// A preference orders the search and never changes whether claims fit under the step budget: wherever
// AllocateWith fits with a budget, AllocatePreferring fits with the same budget (and where AllocateWith
// finds that the claims do not fit, so does it). The budgets drawn are small, so that the search runs out
// on many clusters; every allocation passes allocator/verify.
func TestPropPreferringFitsWithinBudget(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		prefer := drawPreference(rt, c)
		budget := rapid.IntRange(1, 64).Draw(rt, "budget")
		ctx := context.Background()
		s, err := c.Snapshot(allocator.Options{StepBudget: budget})
		if err != nil {
			rt.Fatal(err)
		}
		for _, st := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit, allocator.Spread} {
			_, plainErr := s.AllocateWith(ctx, st, c.Node, c.Claims)
			res, err := s.AllocatePreferring(ctx, st, prefer, c.Node, c.Claims)
			switch {
			case plainErr == nil && err != nil:
				rt.Fatalf("%s allocates within %d steps, preferring %v it answers %v", st, budget, prefer, err)
			case errors.Is(plainErr, allocator.ErrUnsatisfiable) && !errors.Is(err, allocator.ErrUnsatisfiable):
				rt.Fatalf("%s answers %v within %d steps, preferring %v %v", st, plainErr, budget, prefer, err)
			case err == nil:
				violations, verr := c.Verify(ctx, res)
				if verr != nil {
					rt.Fatalf("verify: %v", verr)
				}
				for _, v := range violations {
					rt.Errorf("%s preferring %v: %s", st, prefer, v)
				}
			}
		}
	})
}

// deadEndSlice publishes on node-a gpu-0 .. gpu-2 of model H100 in slots 0, 1 and 2, then odd-0 ..
// odd-(n-1), three of each model M0, M1, ..., all in slot 0, every device with an index of its own: for
// a claim of three devices that must all have one model and distinct slots, every odd device is a dead
// end. (Odd devices each of a model of its own would be no dead end:
// the search does not take a first device whose model too few devices have, see matchAttribute.enough.)
func deadEndSlice(n int) *resourceapi.ResourceSlice {
	s := gpuSlice("node-a", "H100", 3)
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].Attributes["slot"] = resourceapi.DeviceAttribute{IntValue: ptr(int64(i))}
		s.Spec.Devices[i].Attributes["index"] = resourceapi.DeviceAttribute{IntValue: ptr(int64(i))}
	}
	for i := range n {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name: fmt.Sprintf("odd-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"model": {StringValue: ptr(fmt.Sprintf("M%d", i/3))}, "slot": {IntValue: ptr(int64(0))}, "index": {IntValue: ptr(int64(3 + i))}},
		})
	}
	return s
}

// A preference that leads the search into more dead ends than the step budget allows does not make the
// claims give up where AllocateWith fits: the claims get AllocateWith's devices. A preference that fits
// within the budget is kept.
func TestAllocatePreferringDeadEnds(t *testing.T) {
	id := func(name string) allocator.DeviceID {
		return allocator.DeviceID{Driver: "gpu.example.com", Pool: "node-a", Device: name}
	}
	// Three devices of one model in distinct slots. AllocateWith takes gpu-0, gpu-1 and gpu-2 in 6 steps
	// (one per device position, one past the last device, one past the request, one past the claim).
	// Preferring the 20 odd devices, the search takes each in turn and finds no second device of its model
	// in a third slot: past the budget of 10. The selector reads every device's index, so that no two
	// odd devices are interchangeable (the search would try one of them only).
	claim := gpuClaim("train", 3)
	claim.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: `device.attributes["gpu.example.com"].index >= 0`,
	}}}
	claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{
		{MatchAttribute: ptr(resourceapi.FullyQualifiedName("gpu.example.com/model"))},
		{DistinctAttribute: ptr(resourceapi.FullyQualifiedName("gpu.example.com/slot"))},
	}
	var deadEnds []allocator.DeviceID
	for i := range 20 {
		deadEnds = append(deadEnds, id(fmt.Sprintf("odd-%d", i)))
	}
	// The selector fails at run time on the odd devices (they have no "memory" attribute): the first-fit
	// scan finds its three devices before it reaches one, a ranked order evaluates every candidate first.
	cel := gpuClaim("infer", 3)
	cel.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: `device.attributes["gpu.example.com"].model == "H100" || device.attributes["gpu.example.com"].memory > 0`,
	}}}
	all := []allocator.Strategy{allocator.FirstFit, allocator.BestFit, allocator.Spread}
	cases := []struct {
		name       string
		claim      *resourceapi.ResourceClaim
		prefer     []allocator.DeviceID
		strategies []allocator.Strategy
		want       []string
	}{
		{name: "dead ends beyond the budget", claim: claim, prefer: deadEnds, strategies: all, want: []string{"gpu-0", "gpu-1", "gpu-2"}},
		{name: "dead ends before a device that fits", claim: claim, prefer: append(deadEnds[:len(deadEnds):len(deadEnds)], id("gpu-2")), strategies: all, want: []string{"gpu-0", "gpu-1", "gpu-2"}},
		{name: "a preference that fits within the budget", claim: claim, prefer: []allocator.DeviceID{id("gpu-2")}, strategies: all, want: []string{"gpu-2", "gpu-0", "gpu-1"}},
		// BestFit and Spread evaluate every candidate's selectors without a preference too, and fail.
		{name: "a preferred device whose selector fails at run time", claim: cel, prefer: deadEnds[:1], strategies: all[:1], want: []string{"gpu-0", "gpu-1", "gpu-2"}},
	}
	for _, tc := range cases {
		for _, st := range tc.strategies {
			t.Run(tc.name+"/"+st.String(), func(t *testing.T) {
				snap := allocator.NewSnapshot(allocator.Options{StepBudget: 10})
				if err := snap.AddOrUpdateSlice(deadEndSlice(20)); err != nil {
					t.Fatal(err)
				}
				if err := snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}); err != nil {
					t.Fatal(err)
				}
				node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
				claims := []*resourceapi.ResourceClaim{tc.claim}
				if _, err := snap.AllocateWith(context.Background(), st, node, claims); err != nil {
					t.Fatalf("AllocateWith: %v", err)
				}
				res, err := snap.AllocatePreferring(context.Background(), st, tc.prefer, node, claims)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range res[0].Devices.Results {
					got = append(got, r.Device)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			})
		}
	}
}

// mixedSlice publishes gpu-0 .. gpu-3 on node-a, gpu-2 of another model.
func mixedSlice() *resourceapi.ResourceSlice {
	s := gpuSlice("node-a", "H100", 4)
	other := "A100"
	s.Spec.Devices[2].Attributes["model"] = resourceapi.DeviceAttribute{StringValue: &other}
	return s
}

func TestAllocatePreferring(t *testing.T) {
	id := func(name string) allocator.DeviceID {
		return allocator.DeviceID{Driver: "gpu.example.com", Pool: "node-a", Device: name}
	}
	h100 := gpuClaim("train", 2)
	h100.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: `device.attributes["gpu.example.com"].model == "H100"`,
	}}}
	cases := []struct {
		name     string
		strategy allocator.Strategy
		claim    *resourceapi.ResourceClaim
		prefer   []allocator.DeviceID
		want     []string
		wantErr  error
	}{
		{name: "no preference is AllocateWith", claim: gpuClaim("train", 2), want: []string{"gpu-0", "gpu-1"}},
		{name: "preferred devices first, in the preference's order", claim: gpuClaim("train", 2), prefer: []allocator.DeviceID{id("gpu-3"), id("gpu-1")}, want: []string{"gpu-3", "gpu-1"}},
		{name: "then the strategy's order", strategy: allocator.BestFit, claim: gpuClaim("train", 3), prefer: []allocator.DeviceID{id("gpu-3")}, want: []string{"gpu-3", "gpu-0", "gpu-1"}},
		{name: "a device the selector refuses is passed over", claim: h100, prefer: []allocator.DeviceID{id("gpu-2"), id("gpu-3")}, want: []string{"gpu-3", "gpu-0"}},
		{name: "devices of other nodes are ignored", claim: gpuClaim("train", 1), prefer: []allocator.DeviceID{{Driver: "gpu.example.com", Pool: "node-b", Device: "gpu-3"}}, want: []string{"gpu-0"}},
		{name: "a preference does not make claims fit", claim: gpuClaim("train", 5), prefer: []allocator.DeviceID{id("gpu-3")}, wantErr: allocator.ErrUnsatisfiable},
		{name: "an unknown strategy is invalid input", strategy: allocator.Strategy(7), claim: gpuClaim("train", 1), wantErr: allocator.ErrInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := allocator.NewSnapshot(allocator.Options{})
			if err := snap.AddOrUpdateSlice(mixedSlice()); err != nil {
				t.Fatal(err)
			}
			if err := snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}); err != nil {
				t.Fatal(err)
			}
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
			prefer := append([]allocator.DeviceID(nil), tc.prefer...)
			res, err := snap.AllocatePreferring(context.Background(), tc.strategy, tc.prefer, node, []*resourceapi.ResourceClaim{tc.claim})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res[0].Devices.Results {
				got = append(got, r.Device)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if fmt.Sprint(prefer) != fmt.Sprint(tc.prefer) {
				t.Errorf("the preference changed: %v, was %v", tc.prefer, prefer)
			}
		})
	}
}

func ExampleSnapshot_AllocatePreferring() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 4))
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})
	nodeA := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}

	// The caller rated gpu-3 best for the claim's first device: it is tried first, then the strategy's
	// order.
	prefer := []allocator.DeviceID{{Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-3"}}
	results, err := snap.AllocatePreferring(context.Background(), allocator.FirstFit, prefer, nodeA, []*resourceapi.ResourceClaim{gpuClaim("train", 2)})
	if err != nil {
		panic(err)
	}
	for _, r := range results[0].Devices.Results {
		fmt.Println(r.Device)
	}
	// Output:
	// gpu-3
	// gpu-0
}
