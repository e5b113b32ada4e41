package allocator_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// explainOpts are the generated features whose devices are independent candidates: no shared counters
// or capacity that two devices draw on together, no CEL errors (which stop Fits).
func explainOpts() fuzz.Options {
	return fuzz.Options{MultiSlicePools: true, IncompletePools: true, NetworkAttached: true, PerDeviceNodeSelection: true,
		Taints: true, BindingConditions: true, AdminAccess: true, Allocated: true, NodeOperations: true}
}

// probes are single-request claims, one per ExactCount request of the cluster's claims, without
// constraints.
func probes(c *fuzz.Cluster) []*resourceapi.ResourceClaim {
	var out []*resourceapi.ResourceClaim
	for _, claim := range c.Claims {
		for _, r := range claim.Spec.Devices.Requests {
			if r.Exactly == nil || r.Exactly.AllocationMode != resourceapi.DeviceAllocationModeExactCount {
				continue
			}
			p := claim.DeepCopy()
			p.Spec.Devices.Requests = []resourceapi.DeviceRequest{*r.DeepCopy()}
			p.Spec.Devices.Constraints = nil
			p.Spec.Devices.Config = nil
			out = append(out, p)
		}
	}
	return out
}

func withCount(c *resourceapi.ResourceClaim, n int) *resourceapi.ResourceClaim {
	c = c.DeepCopy()
	c.Spec.Devices.Requests[0].Exactly.Count = int64(n)
	return c
}

func explainOne(t *rapid.T, s *allocator.Snapshot, c *fuzz.Cluster, claim *resourceapi.ResourceClaim) *allocator.RequestExplanation {
	e, err := s.Explain(context.Background(), c.Node, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	return &e.Claims[0].Requests[0]
}

// TestPropExplainCountsAreExact: for every request of generated clusters, the candidates the explanation
// counts are exactly the most devices the request can get (a brute-force recount with Fits: the request
// for that many fits, for one more it does not), every device is counted once (by the first filter that
// removes it, or as a candidate), and removing the object a cause names (the claim holding devices, the
// DeviceTaintRule, the class's or request's selector) lets exactly that cause's devices pass its filter:
// the earlier filters stay as they are, and the cause's devices move on to later filters or candidates.
func TestPropExplainCountsAreExact(t *testing.T) {
	ctx := context.Background()
	moved := map[allocator.Reason]int{}
	defer func() { t.Logf("obstacles removed: %v", moved) }()
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(explainOpts()).Draw(t, "cluster")
		s, err := c.Snapshot(allocator.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range probes(c) {
			re := explainOne(t, s, c, p)
			sum := re.Candidates
			for _, f := range re.Filters {
				sum += f.Removed
				n := 0
				for _, cause := range f.Causes {
					n += cause.Devices
				}
				if n != f.Removed {
					t.Fatalf("%s: causes count %d devices, the filter %d", f.Reason, n, f.Removed)
				}
			}
			if sum != re.Devices {
				t.Fatalf("candidates and filters count %d devices, the node has %d", sum, re.Devices)
			}
			if re.Candidates+1 > resourceapi.AllocationResultsMaxSize {
				continue
			}
			for _, k := range []int{re.Candidates, re.Candidates + 1} {
				if k == 0 {
					continue
				}
				fits, err := s.Fits(ctx, c.Node, []*resourceapi.ResourceClaim{withCount(p, k)})
				if err != nil {
					t.Fatalf("fits: %v", err)
				}
				if fits != (k <= re.Candidates) {
					t.Fatalf("request %q for %d devices fits = %v, the explanation counts %d candidates", re.Request, k, fits, re.Candidates)
				}
			}
			for fi, f := range re.Filters {
				for _, cause := range f.Causes {
					removed, probe := removeObstacle(t, c, p, f.Reason, cause)
					if removed == nil {
						continue
					}
					after := explainOne(t, removed, c, probe)
					checkMoved(t, re, after, fi, cause)
					moved[f.Reason]++
				}
			}
		}
	})
}

// removeObstacle builds the cluster without the object a cause names; nil when the test does not
// remove this kind of obstacle.
func removeObstacle(t *rapid.T, c *fuzz.Cluster, probe *resourceapi.ResourceClaim, r allocator.Reason, cause allocator.Cause) (*allocator.Snapshot, *resourceapi.ResourceClaim) {
	c = c.DeepCopy()
	probe = probe.DeepCopy()
	index := func(field string) int {
		i := strings.LastIndex(field, "[")
		n := 0
		for _, ch := range field[i+1 : len(field)-1] {
			n = n*10 + int(ch-'0')
		}
		return n
	}
	switch {
	case r == allocator.ReasonAllocated:
		name := strings.TrimPrefix(cause.Object, "ResourceClaim ")
		c.Allocated = slices.DeleteFunc(c.Allocated, func(x *resourceapi.ResourceClaim) bool { return x.Namespace+"/"+x.Name == name })
	case r == allocator.ReasonTaint && strings.HasPrefix(cause.Object, "DeviceTaintRule "):
		name := strings.TrimPrefix(cause.Object, "DeviceTaintRule ")
		c.TaintRules = slices.DeleteFunc(c.TaintRules, func(x *resourceapi.DeviceTaintRule) bool { return x.Name == name })
	case r == allocator.ReasonClassSelector:
		name := strings.TrimPrefix(cause.Object, "DeviceClass ")
		for _, cl := range c.Classes {
			if cl.Name == name {
				// Replaced rather than deleted, so that the other selectors keep their index.
				cl.Spec.Selectors[index(cause.Field)].CEL.Expression = "true"
			}
		}
	case r == allocator.ReasonRequestSelector:
		probe.Spec.Devices.Requests[0].Exactly.Selectors[index(cause.Field)].CEL.Expression = "true"
	default:
		return nil, nil
	}
	s, err := c.Snapshot(allocator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, probe
}

// checkMoved: the filters before fi are unchanged, the cause is gone, and its devices moved on.
func checkMoved(t *rapid.T, before, after *allocator.RequestExplanation, fi int, cause allocator.Cause) {
	f := before.Filters[fi]
	rank := func(r allocator.Reason) int { return slices.Index(reasonOrder, r) }
	earlier := func(re *allocator.RequestExplanation) (n int) {
		for _, g := range re.Filters {
			if rank(g.Reason) < rank(f.Reason) {
				n += g.Removed
			}
		}
		return n
	}
	if earlier(before) != earlier(after) {
		t.Fatalf("removing %s (%s) changed the filters before it:\n%+v\n%+v", cause.Object, f.Reason, before.Filters, after.Filters)
	}
	for _, g := range after.Filters {
		if g.Reason != f.Reason {
			continue
		}
		for _, x := range g.Causes {
			if x.Object == cause.Object && x.Field == cause.Field && x.Name == cause.Name && x.Effect == cause.Effect {
				t.Fatalf("removing %s left the cause: %+v", cause.Object, x)
			}
		}
	}
	rest := func(re *allocator.RequestExplanation) int { return re.Devices - earlier(re) }
	if rest(before) != rest(after) {
		t.Fatalf("removing %s changed the devices: %d, then %d", cause.Object, rest(before), rest(after))
	}
	// Of the devices past the earlier filters, this cause's now pass its filter.
	atOrAfter := func(re *allocator.RequestExplanation, skip bool) (n int) {
		for _, g := range re.Filters {
			if rank(g.Reason) < rank(f.Reason) {
				continue
			}
			for _, x := range g.Causes {
				if skip && g.Reason == f.Reason && x == cause {
					continue
				}
				n += x.Devices
			}
		}
		return n + re.Candidates
	}
	if atOrAfter(before, true)+cause.Devices != atOrAfter(after, false) {
		t.Fatalf("removing %s (%d devices): before %+v (%d candidates), after %+v (%d candidates)",
			cause.Object, cause.Devices, before.Filters, before.Candidates, after.Filters, after.Candidates)
	}
}

// reasonOrder is the order in which Explain documents its filters.
var reasonOrder = []allocator.Reason{
	allocator.ReasonPoolIncomplete, allocator.ReasonPoolInvalid, allocator.ReasonBindingConditions, allocator.ReasonClassSelector,
	allocator.ReasonRequestSelector, allocator.ReasonCELError, allocator.ReasonNotOnNode, allocator.ReasonAllocated, allocator.ReasonCapacity,
	allocator.ReasonNodeOperations, allocator.ReasonCounters, allocator.ReasonCompatibilityGroup, allocator.ReasonTaint,
}

// TestPropExplainAgreesWithAllocate: over clusters with every generated feature, Explain says the
// claims fit exactly when Allocate allocates them; where they do not fit it gives at least one reason;
// where Allocate fails on a selector's runtime error it reports that error as a CEL runtime error;
// other errors are Allocate's. Every request's devices are counted once.
func TestPropExplainAgreesWithAllocate(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		s, err := c.Snapshot(allocator.Options{StepBudget: 20000})
		if err != nil {
			t.Fatal(err)
		}
		_, aerr := s.Allocate(ctx, c.Node, c.Claims)
		e, err := s.Explain(ctx, c.Node, c.Claims)
		var ie *allocator.InputError
		switch {
		case aerr == nil:
			if err != nil || !e.Fits {
				t.Fatalf("Allocate fits, Explain: %v\n%v", err, e)
			}
		case errors.Is(aerr, allocator.ErrUnsatisfiable) || errors.Is(aerr, allocator.ErrSearchBudget):
			if err != nil || e.Fits || len(e.Reasons()) == 0 {
				t.Fatalf("Allocate: %v; Explain: %v\n%v", aerr, err, e)
			}
			if errors.Is(aerr, allocator.ErrSearchBudget) && !slices.ContainsFunc(e.Obstacles, func(o allocator.Obstacle) bool { return o.Reason == allocator.ReasonSearchGaveUp }) {
				t.Fatalf("the search gave up, the explanation does not say so:\n%v", e)
			}
		case errors.As(aerr, &ie) && strings.Contains(ie.Field, ".cel.expression") && err == nil:
			if !hasFilter(e, allocator.ReasonCELError) {
				t.Fatalf("Allocate: %v; the explanation reports no CEL error:\n%v", aerr, e)
			}
		default:
			if err == nil || err.Error() != aerr.Error() {
				t.Fatalf("Allocate: %v; Explain: %v", aerr, err)
			}
		}
		if e == nil {
			return
		}
		for _, ce := range e.Claims {
			for _, re := range ce.Requests {
				sum := re.Candidates
				for _, f := range re.Filters {
					sum += f.Removed
				}
				if sum != re.Devices {
					t.Fatalf("request %q: candidates and filters count %d devices, the node has %d", re.Request, sum, re.Devices)
				}
			}
		}
	})
}

func hasFilter(e *allocator.Explanation, r allocator.Reason) bool {
	for _, ce := range e.Claims {
		for _, re := range ce.Requests {
			for _, f := range re.Filters {
				if f.Reason == r {
					return true
				}
			}
		}
	}
	return false
}
