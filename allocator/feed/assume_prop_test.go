package feed_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/feed"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// apiServer is the cluster the informers watch: every object's stored version, each write a new
// resourceVersion.
type apiServer struct {
	rv      int
	objects map[string]metav1.Object // by kind/namespace/name
}

func (a *apiServer) store(obj metav1.Object) (old metav1.Object) {
	a.rv++
	obj.SetResourceVersion(strconv.Itoa(a.rv))
	key := fmt.Sprintf("%T/%s/%s", obj, obj.GetNamespace(), obj.GetName())
	old = a.objects[key]
	a.objects[key] = obj
	return old
}

func deepCopy(o metav1.Object) metav1.Object {
	return reflect.ValueOf(o).MethodByName("DeepCopy").Call(nil)[0].Interface().(metav1.Object)
}

// Between a placement's Assume and the informer delivering the API server's write of it, a Feed gets
// resyncs of single objects, re-lists of everything, the writes of other placements and late events of
// versions already replaced, in any order. After every step: each assumed allocation is still what the
// Cluster holds, each written claim is held at the API server's version, and the allocations taken
// together over-allocate no device, share, capacity or counter.
func TestPropFeedKeepsAssumedAllocations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := fuzz.AllOptions()
		opts.MaxClaims = 4
		c := fuzz.ClusterGen(opts).Draw(t, "cluster")
		ctx := context.Background()
		features := c.Gates()
		snap := allocator.NewSnapshot(allocator.Options{TrustAPIServer: true, Features: &features, StepBudget: 20000})
		cl := pods.New(snap, pods.Options{})
		var errs []error
		f := feed.New(cl, feed.Options{OnError: func(err error) { errs = append(errs, err) }})

		api := &apiServer{objects: map[string]metav1.Object{}}
		var all []metav1.Object
		for _, o := range c.Nodes {
			all = append(all, o)
		}
		for _, o := range c.Slices {
			all = append(all, o)
		}
		for _, o := range c.Classes {
			all = append(all, o)
		}
		for _, o := range c.TaintRules {
			all = append(all, o)
		}
		for _, o := range c.Allocated {
			all = append(all, o)
		}
		for _, o := range c.Claims {
			all = append(all, o)
		}
		for _, o := range all {
			o = deepCopy(o)
			api.store(o)
			f.OnAdd(o, true)
		}

		assumed := map[string]*resourceapi.ResourceClaim{} // claim name → the allocation assumed, not yet written
		written := map[string]bool{}
		var replaced []metav1.Object // versions the API server no longer holds
		unplaced := slices.Clone(c.Claims)
		var trace []string
		for step := range rapid.IntRange(1, 16).Draw(t, "steps") {
			switch rapid.IntRange(0, 4).Draw(t, "event") {
			case 0: // a pod for one of the pending claims is placed and assumed
				if len(unplaced) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(unplaced)-1).Draw(t, "claim")
				claim := unplaced[i]
				unplaced = slices.Delete(unplaced, i, i+1)
				pl, err := cl.Place(ctx, claimPod(fmt.Sprintf("pod-%d", step), claim.Name))
				if err != nil {
					if !errors.Is(err, pods.ErrNoNode) && !errors.Is(err, allocator.ErrInvalidInput) && !errors.Is(err, allocator.ErrSearchBudget) && !errors.Is(err, allocator.ErrPoolNotReady) {
						t.Fatalf("step %d: place: %v", step, err)
					}
					trace = append(trace, "no fit for "+claim.Name)
					continue
				}
				if err := cl.Assume(pl); err != nil {
					t.Fatalf("step %d: assume: %v", step, err)
				}
				assumed[claim.Name] = pl.Claims[0].Claim.DeepCopy()
				trace = append(trace, "assumed "+claim.Name+" on "+pl.Node)
			case 1: // a resync of one object
				keys := slices.Sorted(maps.Keys(api.objects))
				obj := api.objects[keys[rapid.IntRange(0, len(keys)-1).Draw(t, "object")]]
				f.OnUpdate(obj, obj)
				trace = append(trace, "resync "+obj.GetName())
			case 2: // a re-list: every object the API server holds, again
				for _, k := range slices.Sorted(maps.Keys(api.objects)) {
					obj := api.objects[k]
					f.OnUpdate(obj, deepCopy(obj))
				}
				trace = append(trace, "re-list")
			case 3: // the API server stores an assumed allocation, and the informer delivers it
				names := slices.Sorted(maps.Keys(assumed))
				if len(names) == 0 {
					continue
				}
				name := names[rapid.IntRange(0, len(names)-1).Draw(t, "write")]
				claim := assumed[name].DeepCopy()
				old := api.store(claim)
				replaced = append(replaced, old)
				f.OnUpdate(old, claim)
				delete(assumed, name)
				written[name] = true
				trace = append(trace, "written "+name)
			case 4: // a late event of a version the API server replaced
				if len(replaced) == 0 {
					continue
				}
				obj := replaced[rapid.IntRange(0, len(replaced)-1).Draw(t, "late")]
				f.OnUpdate(nil, obj)
				trace = append(trace, "late "+obj.GetName()+"@"+obj.GetResourceVersion())
			}
			if len(errs) > 0 {
				t.Fatalf("step %d: feed errors %v", step, errs)
			}
			for name, want := range assumed {
				held, ok := snap.Claim(fuzz.Namespace, name)
				if !ok || !equality.Semantic.DeepEqual(held.Status, want.Status) {
					t.Fatalf("step %d (%v): the assumed allocation of %s is gone", step, trace, name)
				}
			}
			for name := range written {
				held, _ := snap.Claim(fuzz.Namespace, name)
				stored := api.objects[fmt.Sprintf("%T/%s/%s", held, fuzz.Namespace, name)]
				if held.ResourceVersion != stored.GetResourceVersion() {
					t.Fatalf("step %d (%v): claim %s held at version %s, stored at %s", step, trace, name, held.ResourceVersion, stored.GetResourceVersion())
				}
			}
			checkNoOverAllocation(t, c, snap, step, trace)
		}
	})
}

// checkNoOverAllocation: the claims allocated since the generated cluster, next to the claims it
// allocated, over-allocate no device, share, capacity or counter.
func checkNoOverAllocation(t *rapid.T, c *fuzz.Cluster, snap *allocator.Snapshot, step int, trace []string) {
	pre := map[string]bool{}
	for _, a := range c.Allocated {
		pre[a.Name] = true
	}
	var ours []*resourceapi.ResourceClaim
	var results []resourceapi.AllocationResult
	for _, claim := range snap.Claims("") {
		if claim.Status.Allocation != nil && !pre[claim.Name] {
			ours = append(ours, claim)
			results = append(results, *claim.Status.Allocation)
		}
	}
	features := c.Gates()
	in := verify.Input{Slices: c.Slices, Classes: c.Classes, TaintRules: c.TaintRules, Features: &features, Claims: c.Allocated}
	vs, err := verify.Check(context.Background(), in, ours, results)
	if err != nil {
		t.Fatalf("step %d: verify: %v", step, err)
	}
	for _, v := range vs {
		switch v.Rule {
		case verify.RuleInUse, verify.RuleShare, verify.RuleCounters, verify.RuleCompatibility:
			t.Fatalf("step %d (%v): %v", step, trace, v)
		case verify.RuleCapacity:
			if strings.Contains(v.Message, "overdrawn") {
				t.Fatalf("step %d (%v): %v", step, trace, v)
			}
		}
	}
}
