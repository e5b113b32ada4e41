package fuzz_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// The verifier is not vacuous: every valid allocation the allocator makes, broken in one way that is always
// wrong, gets the violation of that rule.
func TestPropVerifyCatchesBrokenAllocations(t *testing.T) {
	var hits budgetHits
	defer hits.check(t)
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		results, err := allocate(context.Background(), c)
		hits.add(err)
		if err != nil {
			return
		}
		if vs, err := c.Verify(context.Background(), results); err != nil || len(vs) > 0 {
			rt.Fatalf("the allocation is not valid to begin with: %v %v", vs, err)
		}
		ci := rapid.IntRange(0, len(results)-1).Draw(rt, "claim")
		broken := make([]resourceapi.AllocationResult, len(results))
		for i := range results {
			broken[i] = *results[i].DeepCopy()
		}
		rs := broken[ci].Devices.Results
		ri := rapid.IntRange(0, len(rs)-1).Draw(rt, "result")
		var want verify.Rule
		switch rapid.IntRange(0, 5).Draw(rt, "mutation") {
		case 0:
			broken[ci].Devices.Results = slices.Delete(rs, ri, ri+1)
			want = verify.RuleResultCount
		case 1:
			rs[ri].Request = "no-such-request"
			want = verify.RuleUnknownRequest
		case 2:
			rs[ri].Device = "no-such-device"
			want = verify.RuleUnknownDevice
		case 3:
			if rs[ri].AdminAccess != nil {
				rs[ri].AdminAccess = nil
			} else {
				rs[ri].AdminAccess = ptr.To(true)
			}
			want = verify.RuleAdminAccess
		case 4:
			if len(rs[ri].Tolerations) > 0 {
				rs[ri].Tolerations = nil
			} else {
				rs[ri].Tolerations = []resourceapi.DeviceToleration{{Key: "example.com/other", Operator: resourceapi.DeviceTolerationOpExists}}
			}
			want = verify.RuleTolerations
		default:
			if broken[ci].NodeSelector != nil {
				broken[ci].NodeSelector = nil
			} else {
				broken[ci].NodeSelector = nodeNameSelector("elsewhere")
			}
			want = verify.RuleNodeSelector
		}
		vs, err := c.Verify(context.Background(), broken)
		if err != nil {
			rt.Fatalf("verify: %v", err)
		}
		for _, v := range vs {
			if v.Rule == want {
				return
			}
		}
		rt.Fatalf("broke rule %s in claim %d result %d, but verify reports %v", want, ci, ri, vs)
	})
}

// Concurrent Allocate calls on one snapshot answer as a single call does (run with -race).
func TestPropConcurrentAllocate(t *testing.T) {
	var hits budgetHits
	defer hits.check(t)
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		s, err := snapshotOf(c)
		if err != nil {
			rt.Fatalf("snapshot: %v", err)
		}
		type answer struct {
			ok     bool
			n      int
			err    string
			budget bool
		}
		run := func() answer {
			r, err := s.Allocate(context.Background(), c.Node, c.Claims)
			if err != nil {
				return answer{err: err.Error(), budget: errors.Is(err, allocator.ErrSearchBudget)}
			}
			return answer{ok: true, n: len(r)}
		}
		want := run()
		if want.budget {
			hits.add(allocator.ErrSearchBudget)
		} else {
			hits.add()
		}
		got := make(chan answer, 4)
		for i := 0; i < 4; i++ {
			go func() { got <- run() }()
		}
		for i := 0; i < 4; i++ {
			if a := <-got; a != want {
				rt.Fatalf("concurrent call answered %+v, a single call %+v", a, want)
			}
		}
	})
}
