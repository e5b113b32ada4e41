package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
)

// rqQuotaCluster is an rqCluster under a quota: the pending claims' owner (namespace "ns") holds
// devices too, and the pending claims are registered as a scheduler would after trying them on every
// node: with the limits they were refused for, or as waiting for devices.
type rqQuotaCluster struct {
	*rqCluster
	quota *allocator.Quota
	owned int // ns holders drawn so far, for their names
}

// rqQuotaAmounts are the limits drawn per kind (the generated devices have 40Gi or 80Gi of memory and
// partitions draw 20Gi or 40Gi of the counter "mem").
var rqQuotaAmounts = []struct {
	kind    allocator.QuotaKind
	name    string
	amounts []string
}{
	{allocator.QuotaDevices, "", []string{"0", "1", "2", "3"}},
	{allocator.QuotaCapacity, "memory", []string{"0", "40Gi", "80Gi", "160Gi"}},
	{allocator.QuotaCounter, "mem", []string{"0", "20Gi", "40Gi", "60Gi"}},
}

func rqDrawLimit(t *rapid.T, owner, class string) allocator.QuotaLimit {
	r := rapid.SampledFrom(rqQuotaAmounts).Draw(t, "limitKind")
	return allocator.QuotaLimit{Owner: owner, Class: class, Kind: r.kind, Name: r.name,
		Max: resource.MustParse(rapid.SampledFrom(r.amounts).Draw(t, "limitMax"))}
}

func rqGenQuotaCluster(t *rapid.T) *rqQuotaCluster {
	c := &rqQuotaCluster{rqCluster: rqGenCluster(t), quota: &allocator.Quota{}}
	// What the owner holds is allocated before the quota exists, so that it may hold more than it allows.
	for range rapid.IntRange(1, 3).Draw(t, "ownHolders") {
		c.allocateOwned(t)
	}
	// The pending claims' owner has small limits on devices of most classes, and some on capacity and
	// counters; the holders' owner may have limits too, which must not matter.
	for _, class := range rqClassNames {
		if rapid.IntRange(0, 3).Draw(t, "devicesLimited") > 0 {
			c.quota.Limits = append(c.quota.Limits, allocator.QuotaLimit{Owner: "ns", Class: class, Kind: allocator.QuotaDevices,
				Max: *resource.NewQuantity(int64(rapid.IntRange(0, 2).Draw(t, "devicesMax")), resource.DecimalSI)})
		}
		for _, owner := range []string{"ns", "held"} {
			if rapid.IntRange(0, 2).Draw(t, "limited") == 0 {
				c.quota.Limits = append(c.quota.Limits, rqDrawLimit(t, owner, class))
			}
		}
	}
	c.setQuota(t)
	// Simple claims, which the devices often serve, so that the quota is often what refuses them.
	for i := range rapid.IntRange(1, 3).Draw(t, "simple") {
		q := rqRequest{class: rapid.SampledFrom(rqClassNames[:3]).Draw(t, "simpleClass"), count: int64(rapid.IntRange(1, 2).Draw(t, "simpleCount"))}
		if rapid.IntRange(0, 2).Draw(t, "simpleAlternatives") == 0 {
			q = rqRequest{alternatives: []rqRequest{q, {class: rapid.SampledFrom(rqClassNames[:3]).Draw(t, "simpleClass")}}}
		}
		c.pending = append(c.pending, rqClaim("ns", fmt.Sprintf("q%d", i), q))
	}
	c.pending = slices.DeleteFunc(c.pending, func(p *resourceapi.ResourceClaim) bool { return !c.record(t, p) })
	return c
}

// allocateOwned allocates a new claim of the pending claims' owner where it fits, as a scheduler would
// (within the quota, once there is one); the Requeue is not told: an allocation never lets a claim fit.
func (c *rqQuotaCluster) allocateOwned(t *rapid.T) {
	h := rqClaim("ns", fmt.Sprintf("own%d", c.owned), rqRequest{
		class: rapid.SampledFrom(rqClassNames[:3]).Draw(t, "ownClass"),
		count: int64(rapid.IntRange(1, 2).Draw(t, "ownCount")),
	})
	c.owned++
	first := rapid.IntRange(0, len(c.nodes)-1).Draw(t, "ownNode")
	for i := range c.nodes {
		node := c.nodes[(first+i)%len(c.nodes)]
		res, err := c.snap.Allocate(context.Background(), rqNode(node), []*resourceapi.ResourceClaim{h})
		if err != nil {
			continue
		}
		h.Status.Allocation = &res[0]
		rqMust(t, c.snap.AddOrUpdateClaim(h))
		c.holders = append(c.holders, h)
		return
	}
}

// setQuota gives the quota to the Snapshot and the Requeue and returns what the Requeue woke.
func (c *rqQuotaCluster) setQuota(t *rapid.T) []types.NamespacedName {
	rqMust(t, c.snap.SetQuota(c.quota))
	got, err := c.rq.SetQuota(c.quota)
	rqMust(t, err)
	return got
}

// refusals tries a claim on every node: whether it fits on one, the limits it was refused for on the
// others and on which, and whether a node answered with an error other than an UnsatisfiableError (a
// selector that fails on a device).
func (c *rqQuotaCluster) refusals(t *rapid.T, p *resourceapi.ResourceClaim) (fits bool, exceeded []allocator.QuotaExceeded, nodes []string, erred bool) {
	for _, node := range c.nodes {
		_, err := c.snap.Allocate(context.Background(), rqNode(node), []*resourceapi.ResourceClaim{p})
		if err == nil {
			return true, nil, nil, false
		}
		if errors.Is(err, allocator.ErrSearchBudget) {
			t.Fatalf("claim %s on %s: %v", p.Name, node, err)
		}
		var ue *allocator.UnsatisfiableError
		switch {
		case !errors.As(err, &ue):
			erred = true
		case len(ue.Quota) > 0:
			exceeded = append(exceeded, ue.Quota...)
			nodes = append(nodes, node)
		}
	}
	return false, exceeded, nodes, erred
}

// record is what a scheduler does with a claim it tries: a claim that fits is allocated and leaves the
// Requeue (record returns false; the cluster keeps it as it was: it holds nothing), one refused is
// registered with the limits it was refused for (none when it was refused for devices alone).
func (c *rqQuotaCluster) record(t *rapid.T, p *resourceapi.ResourceClaim) (pending bool) {
	fits, exceeded, _, _ := c.refusals(t, p)
	if fits {
		c.rq.RemovePending(p.Namespace, p.Name)
		return false
	}
	rqMust(t, c.rq.AddPendingOverQuota(p, exceeded))
	return true
}

// quotaEvent changes the quota, or allocates a claim of the owner, and returns what the Requeue woke.
func (c *rqQuotaCluster) quotaEvent(t *rapid.T) (string, []types.NamespacedName) {
	if rapid.IntRange(0, 3).Draw(t, "allocateOwned") == 0 {
		c.allocateOwned(t)
		return "allocate for the owner", nil
	}
	q := &allocator.Quota{Limits: slices.Clone(c.quota.Limits)}
	kind := "add a limit"
	switch {
	case len(q.Limits) > 0 && rapid.IntRange(0, 3).Draw(t, "removeLimit") == 0:
		kind = "remove a limit"
		i := rapid.IntRange(0, len(q.Limits)-1).Draw(t, "limit")
		q.Limits = slices.Delete(q.Limits, i, i+1)
	case len(q.Limits) > 0 && rapid.Bool().Draw(t, "changeLimit"):
		kind = "change a limit"
		i := rapid.IntRange(0, len(q.Limits)-1).Draw(t, "limit")
		for _, r := range rqQuotaAmounts {
			if r.kind == q.Limits[i].Kind {
				q.Limits[i].Max = resource.MustParse(rapid.SampledFrom(r.amounts).Draw(t, "newMax"))
			}
		}
	default:
		q.Limits = append(q.Limits, rqDrawLimit(t, rapid.SampledFrom([]string{"ns", "held"}).Draw(t, "owner"), rapid.SampledFrom(rqClassNames).Draw(t, "class")))
	}
	c.quota = q
	return kind, c.setQuota(t)
}

// rqKey is the key a Requeue answers for a claim.
func rqKey(p *resourceapi.ResourceClaim) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// A scheduler registers each pending claim with the limits it was refused for, and after each event
// retries the claims the Requeue woke: it allocates those that fit and registers again those still
// refused. Whatever the event (the
// quota raised, lowered, added or removed; a claim of the owner deallocated or allocated; the devices,
// classes and taints of TestPropRequeueNeverMissesAClaimThatNowFits), a claim that did not fit before
// and fits after it was woken.
//
// About one run in ten lets a claim refused for quota fit; the runs are repeated, up to five times,
// until one did, so that the property is shown to have been exercised.
func TestPropRequeueNeverMissesAClaimRefusedForQuotaThatNowFits(t *testing.T) {
	overNow := 0
	for round := 0; round < 5 && overNow == 0 && !t.Failed(); round++ {
		requeueQuotaNeverMisses(t, &overNow)
	}
	if overNow == 0 {
		t.Errorf("no event let a claim refused for quota fit in any run; the generator needs adjusting")
	}
}

func requeueQuotaNeverMisses(t *testing.T, overNow *int) {
	fitsNow, woken, over, skipped := 0, 0, 0, 0
	byKind := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		c := rqGenQuotaCluster(t)
		for range rapid.IntRange(1, 5).Draw(t, "events") {
			before := c.fits(t)
			wasOver, erred := make([]bool, len(c.pending)), make([]bool, len(c.pending))
			for i, p := range c.pending {
				_, exceeded, _, e := c.refusals(t, p)
				wasOver[i], erred[i] = !before[i] && len(exceeded) > 0, !before[i] && e
			}
			var kind string
			var got []types.NamespacedName
			if rapid.IntRange(0, 2).Draw(t, "quotaEvent") == 0 {
				kind, got = c.quotaEvent(t)
			} else {
				kind, got = c.event(t)
			}
			after := c.fits(t)
			for i, p := range c.pending {
				key := rqKey(p)
				if !before[i] && slices.Contains(got, key) {
					woken++
				}
				if wasOver[i] {
					over++
				}
				if before[i] || !after[i] {
					continue
				}
				if erred[i] {
					// A selector failed on a device of some node (the search under quota may evaluate
					// devices the search without it does not, and fail where it would not): as kube-
					// scheduler retries a pod whose filter failed with an error after a backoff, not on an
					// event, what wakes it is not the Requeue's to say.
					skipped++
					continue
				}
				fitsNow++
				if wasOver[i] {
					*overNow++
					byKind[kind]++
				}
				if !slices.Contains(got, key) {
					t.Fatalf("%s: claim %s (refused for quota: %v) fits now but was not woken (woken: %v)\nclaim: %+v\nquota: %v",
						kind, key, wasOver[i], got, p.Spec.Devices.Requests, c.quota.Limits)
				}
			}
			// The scheduler retries the claims woken; a claim that fits leaves (it would be allocated,
			// and a claim that fits without being tried would keep a record of a refusal no longer
			// true). Those not woken wait as they were registered.
			c.pending = slices.DeleteFunc(c.pending, func(p *resourceapi.ResourceClaim) bool {
				return slices.Contains(got, rqKey(p)) && !c.record(t, p)
			})
		}
	})
	t.Logf("claims that started to fit: %d, of which refused for quota before: %d %v, failed with an error before (not checked): %d; claims refused for quota, per event: %d; claims woken that did not fit before: %d",
		fitsNow, *overNow, byKind, skipped, over, woken)
}

// A claim refused for quota on a node, and on every node, is woken when the quota is raised by what the
// refusal names (every limit to Held+Asked), or when the owner deallocates claims that hold enough of
// the limits on devices it names; it then fits on that node.
//
// About a third of the runs draw such a claim, and one in twenty of those a claim to free; the runs are
// repeated, up to five times, until both changes were tried.
func TestPropRequeueWakesAClaimRefusedForQuotaOnceTheQuotaHasRoom(t *testing.T) {
	tried := map[string]int{}
	for round := 0; round < 5 && (tried["raise"] == 0 || tried["free"] == 0) && !t.Failed(); round++ {
		requeueQuotaWakesOnRoom(t, tried)
	}
	if tried["raise"] == 0 || tried["free"] == 0 {
		t.Errorf("changes tried %v: the generator needs adjusting", tried)
	}
	t.Logf("changes tried: %v", tried)
}

// requeueQuotaWakesOnRoom is one rapid run of TestPropRequeueWakesAClaimRefusedForQuotaOnceTheQuotaHasRoom;
// it counts in tried the changes tried.
func requeueQuotaWakesOnRoom(t *testing.T, tried map[string]int) {
	rapid.Check(t, func(t *rapid.T) {
		c := rqGenQuotaCluster(t)
		type refusal struct {
			p        *resourceapi.ResourceClaim
			node     string
			exceeded []allocator.QuotaExceeded
		}
		var refused []refusal
		for _, p := range c.pending {
			fits, _, nodes, _ := c.refusals(t, p)
			if fits {
				continue
			}
			for _, node := range nodes {
				_, err := c.snap.Allocate(context.Background(), rqNode(node), []*resourceapi.ResourceClaim{p})
				var ue *allocator.UnsatisfiableError
				if !errors.As(err, &ue) {
					t.Fatalf("claim %s on %s: %v", p.Name, node, err)
				}
				refused = append(refused, refusal{p, node, ue.Quota})
			}
		}
		if len(refused) == 0 {
			return
		}
		r := rapid.SampledFrom(refused).Draw(t, "refusal")
		kind, got := "raise", []types.NamespacedName(nil)
		if hs := c.freeing(r.exceeded); len(hs) > 0 {
			kind = "free"
			for _, h := range hs {
				rqMust(t, c.snap.DeleteClaim(h.Namespace, h.Name))
				woken, err := c.rq.ClaimDeallocated(context.Background(), h)
				rqMust(t, err)
				got = append(got, woken...)
			}
		} else {
			q := &allocator.Quota{Limits: slices.Clone(c.quota.Limits)}
			for _, e := range r.exceeded {
				for i, l := range q.Limits {
					if l.Owner == e.Limit.Owner && l.Class == e.Limit.Class && l.Kind == e.Limit.Kind && l.Name == e.Limit.Name {
						room := e.Held.DeepCopy()
						room.Add(e.Asked)
						q.Limits[i].Max = room
					}
				}
			}
			c.quota = q
			got = c.setQuota(t)
		}
		tried[kind]++
		if !slices.Contains(got, rqKey(r.p)) {
			t.Fatalf("%s: claim %s refused on %s for %v was not woken (woken: %v)", kind, r.p.Name, r.node, r.exceeded, got)
		}
		if _, err := c.snap.Allocate(context.Background(), rqNode(r.node), []*resourceapi.ResourceClaim{r.p}); err != nil {
			t.Fatalf("%s: claim %s refused on %s for %v, woken, does not fit: %v", kind, r.p.Name, r.node, r.exceeded, err)
		}
	})
}

// freeing returns the claims of the owner that hold devices of the classes exceeded names, when every
// limit it names is on devices (a device counts one whatever it is) and deallocating them leaves room
// for what it asks; else nil.
func (c *rqQuotaCluster) freeing(exceeded []allocator.QuotaExceeded) []*resourceapi.ResourceClaim {
	var out []*resourceapi.ResourceClaim
	freed := map[string]int64{}
	for _, h := range c.holders {
		class := h.Spec.Devices.Requests[0].Exactly.DeviceClassName
		if h.Namespace != "ns" || !slices.ContainsFunc(exceeded, func(e allocator.QuotaExceeded) bool { return e.Limit.Class == class }) {
			continue
		}
		out = append(out, h)
		freed[class] += int64(len(h.Status.Allocation.Devices.Results))
	}
	for _, e := range exceeded {
		if e.Limit.Kind != allocator.QuotaDevices {
			return nil
		}
		need := e.Held.DeepCopy()
		need.Add(e.Asked)
		need.Sub(*resource.NewQuantity(freed[e.Limit.Class], resource.DecimalSI))
		if need.Cmp(e.Limit.Max) > 0 {
			return nil
		}
	}
	return out
}
