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
