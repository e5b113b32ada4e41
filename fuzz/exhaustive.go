package fuzz

import (
	"context"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/capacity"
)

// decoration rules concern what a result records about a chosen device, not the choice itself; the exhaustive
// search does not try to reproduce them.
var decoration = []verify.Rule{verify.RuleConfig, verify.RuleNodeSelector, verify.RuleTolerations, verify.RuleBinding, verify.RuleShare}

// Verdict is the answer of the exhaustive search.
type Verdict int

const (
	// DoesNotFit: no choice of devices is valid.
	DoesNotFit Verdict = iota
	// Fits: the search found a valid choice.
	Fits
	// Undecided: there were more choices than the budget allows.
	Undecided
)

type option struct {
	req     string // request or request/subrequest name
	top     string
	devices [][]DeviceRef
}

// Exhaustive decides whether the pending claims of a small cluster fit on its node by trying every choice of
// subrequest and devices for every request, and accepting a choice when allocator/verify finds no violation of a
// rule about which devices may be chosen. It is deliberately naive and independent of any allocator's search: an
// oracle for "does not fit" answers on clusters with a handful of devices. budget bounds the number of complete
// choices checked. Where Kubernetes' allocator is stricter within one allocation attempt than the API's rules
// (a device taken with admin access is not taken again by a later claim, and counts against shared counters),
// the search is at least as strict, so Fits means Kubernetes finds an allocation too. With Fits it returns the
// allocation; its results record devices, admin access, share IDs and consumed capacity, not configuration or
// node selectors.
func Exhaustive(ctx context.Context, c *Cluster, budget int) (Verdict, []resourceapi.AllocationResult) {
	var found []resourceapi.AllocationResult
	v := exhaustive(ctx, c, budget, func(results []resourceapi.AllocationResult) bool {
		found = results
		return true
	})
	if v != Fits {
		return v, nil
	}
	return v, found
}

// ExhaustiveEach is Exhaustive that goes on past the first valid choice: it calls visit with every valid
// choice (the results are reused between calls: copy what you keep) and returns Fits when there was one,
// DoesNotFit when there was none, Undecided when the budget ran out first (visit may have been called).
// It is the oracle for "the best choice" by a measure the caller computes, as allocator's Topology tests
// use it.
func ExhaustiveEach(ctx context.Context, c *Cluster, budget int, visit func([]resourceapi.AllocationResult)) Verdict {
	valid := false
	v := exhaustive(ctx, c, budget, func(results []resourceapi.AllocationResult) bool {
		valid = true
		visit(results)
		return false
	})
	if v == Undecided {
		return v
	}
	if valid {
		return Fits
	}
	return DoesNotFit
}

// exhaustive walks the choices of Exhaustive, calling accept with each valid one until it returns true
// (then the answer is Fits, with results left as accepted).
func exhaustive(ctx context.Context, c *Cluster, budget int, accept func([]resourceapi.AllocationResult) bool) Verdict {
	devices := c.Devices()
	// Per request alternative: the devices that pass the per-device rules on their own.
	type slot struct{ alternatives []option }
	var slots [][]slot // per claim, per request
	tooMany := false
	for ci, claim := range c.Claims {
		var claimSlots []slot
		for _, dr := range claim.Spec.Devices.Requests {
			var alts []option
			add := func(name string, count int64, mode resourceapi.DeviceAllocationMode, probe *resourceapi.ResourceClaim) {
				var cands []DeviceRef
				for _, d := range devices {
					if ok := singleOK(ctx, c, ci, probe, name, d); ok {
						cands = append(cands, d)
					}
				}
				o := option{req: name, top: dr.Name}
				switch {
				case mode == resourceapi.DeviceAllocationModeAll:
					o.devices = [][]DeviceRef{cands}
				case binomial(len(cands), int(count)) > budget:
					tooMany = true
				default:
					o.devices = combinations(cands, int(count))
				}
				alts = append(alts, o)
			}
			if dr.Exactly != nil {
				add(dr.Name, dr.Exactly.Count, dr.Exactly.AllocationMode, probeClaim(claim, dr.Name, nil))
			}
			for _, sub := range dr.FirstAvailable {
				name := dr.Name + "/" + sub.Name
				add(name, sub.Count, sub.AllocationMode, probeClaim(claim, dr.Name, &sub))
			}
			claimSlots = append(claimSlots, slot{alts})
		}
		slots = append(slots, claimSlots)
	}
	if tooMany {
		return Undecided
	}
	// A request without a single choice fails its claim whatever the others choose; found here, it
	// spares enumerating every choice of the requests before it.
	for _, claimSlots := range slots {
		for _, sl := range claimSlots {
			choices := 0
			for _, alt := range sl.alternatives {
				choices += len(alt.devices)
			}
			if choices == 0 {
				return DoesNotFit
			}
		}
	}
	results := make([]resourceapi.AllocationResult, len(c.Claims))
	checked := 0
	share := 0
	var try func(ci, ri int) Verdict
	try = func(ci, ri int) Verdict {
		if ci == len(c.Claims) {
			checked++
			if checked > budget {
				return Undecided
			}
			if acceptable(ctx, c, results) && accept(results) {
				return Fits
			}
			return DoesNotFit
		}
		if ri == len(slots[ci]) {
			return try(ci+1, 0)
		}
		for _, alt := range slots[ci][ri].alternatives {
			for _, set := range alt.devices {
				n := len(results[ci].Devices.Results)
				for _, d := range set {
					share++
					results[ci].Devices.Results = append(results[ci].Devices.Results, resultFor(c, ci, alt.req, d, share))
				}
				v := try(ci, ri+1)
				if v == Fits {
					return Fits
				}
				if checked > budget {
					// Every choice left would be Undecided unchecked: stop now rather than enumerate
					// them, which for several requests is the product of their choices.
					return Undecided
				}
				results[ci].Devices.Results = results[ci].Devices.Results[:n]
			}
		}
		return DoesNotFit
	}
	return try(0, 0)
}

// probeClaim is the claim reduced to one request (or one subrequest) with count 1, without constraints and
// configuration, to test single devices.
func probeClaim(claim *resourceapi.ResourceClaim, request string, sub *resourceapi.DeviceSubRequest) *resourceapi.ResourceClaim {
	p := claim.DeepCopy()
	p.Spec.Devices.Constraints = nil
	p.Spec.Devices.Config = nil
	for _, dr := range p.Spec.Devices.Requests {
		if dr.Name != request {
			continue
		}
		if sub != nil {
			s := *sub.DeepCopy()
			s.AllocationMode, s.Count = resourceapi.DeviceAllocationModeExactCount, 1
			dr.FirstAvailable = []resourceapi.DeviceSubRequest{s}
		} else {
			dr.Exactly.AllocationMode, dr.Exactly.Count = resourceapi.DeviceAllocationModeExactCount, 1
		}
		p.Spec.Devices.Requests = []resourceapi.DeviceRequest{dr}
		break
	}
	return p
}

func singleOK(ctx context.Context, c *Cluster, ci int, probe *resourceapi.ResourceClaim, req string, d DeviceRef) bool {
	r := resultFor(c, ci, req, d, 0)
	in := c.Input()
	vs, err := verify.Check(ctx, in, []*resourceapi.ResourceClaim{probe}, []resourceapi.AllocationResult{{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{r}}}})
	if err != nil {
		return false
	}
	for _, v := range vs {
		if !slices.Contains(decoration, v.Rule) {
			return false
		}
	}
	return true
}

// resultFor builds the result entry for a device: admin access, share ID and consumed capacity as Kubernetes
// records them.
func resultFor(c *Cluster, ci int, req string, d DeviceRef, share int) resourceapi.DeviceRequestAllocationResult {
	r := resourceapi.DeviceRequestAllocationResult{Request: req, Driver: d.ID.Driver, Pool: d.ID.Pool, Device: d.ID.Device}
	e := exactOf(c.Claims[ci], req)
	if e != nil && ptr.Deref(e.AdminAccess, false) {
		r.AdminAccess = ptr.To(true)
	}
	if c.Gates().DRAConsumableCapacity && ptr.Deref(d.Device.AllowMultipleAllocations, false) {
		r.ShareID = ptr.To(types.UID(fmt.Sprintf("bf-%d", share)))
		var requests map[resourceapi.QualifiedName]resource.Quantity
		if e != nil && e.Capacity != nil {
			requests = e.Capacity.Requests
		}
		if consumed, err := capacity.Consumed(requests, d.Device.Capacity, capacity.Options{Features: c.Features}); err == nil && len(consumed) > 0 {
			r.ConsumedCapacity = consumed
		}
	}
	return r
}

// exactOf returns the request or subrequest named ref as an ExactDeviceRequest.
func exactOf(claim *resourceapi.ResourceClaim, ref string) *resourceapi.ExactDeviceRequest {
	for _, dr := range claim.Spec.Devices.Requests {
		if dr.Exactly != nil && dr.Name == ref {
			return dr.Exactly
		}
		for _, s := range dr.FirstAvailable {
			if dr.Name+"/"+s.Name == ref {
				return &resourceapi.ExactDeviceRequest{DeviceClassName: s.DeviceClassName, Selectors: s.Selectors,
					AllocationMode: s.AllocationMode, Count: s.Count, Tolerations: s.Tolerations, Capacity: s.Capacity}
			}
		}
	}
	return nil
}

// acceptable: verify finds no violation of a choice rule, and the proposal respects what the Kubernetes
// allocator additionally enforces within one allocation attempt: a device taken with admin access is not
// taken again by a later claim, and draws on no counters.
func acceptable(ctx context.Context, c *Cluster, results []resourceapi.AllocationResult) bool {
	vs, err := c.Verify(ctx, results)
	if err != nil {
		return false
	}
	for _, v := range vs {
		if !slices.Contains(decoration, v.Rule) {
			return false
		}
	}
	type id struct{ driver, pool, device string }
	admin := map[id]bool{}
	devs := c.Devices()
	for _, res := range results {
		for _, r := range res.Devices.Results {
			k := id{r.Driver, r.Pool, r.Device}
			if admin[k] {
				return false
			}
			if ptr.Deref(r.AdminAccess, false) {
				admin[k] = true
				for _, d := range devs {
					if d.ID == (verify.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}) && len(d.Device.ConsumesCounters) > 0 {
						return false
					}
				}
			}
		}
	}
	return true
}

func combinations(items []DeviceRef, k int) [][]DeviceRef {
	var out [][]DeviceRef
	var cur []DeviceRef
	var rec func(start int)
	rec = func(start int) {
		if len(cur) == k {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := start; i < len(items); i++ {
			cur = append(cur, items[i])
			rec(i + 1)
			cur = cur[:len(cur)-1]
		}
	}
	if k >= 0 && k <= len(items) {
		rec(0)
	}
	return out
}

// binomial returns n choose k, saturating at a large value.
func binomial(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > 1<<30 {
			return 1 << 30
		}
	}
	return r
}
