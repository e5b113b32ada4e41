package allocator

import (
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// rqQuota is why a pending claim waits for its owner's quota: the owner and the classes its requests
// charge, under which it is listed in Requeue.overQuota, the classes of the limits it was refused for,
// and the capacities and counters of those limits, under which it is listed in Requeue.quotaGone.
type rqQuota struct {
	owner     string
	classes   []string
	limited   []string
	resources []quotaResource
}

// quotaResource is a capacity or a counter that a limit counts.
type quotaResource struct {
	kind QuotaKind
	name string
}

// AddPendingOverQuota registers a pending claim as [Requeue.AddPending] does, for a claim that the
// scheduler's last attempt refused for its owner's quota: exceeded are the limits the
// [UnsatisfiableError] named (its Quota field; from several nodes, or from a call with several claims,
// they may be appended: those of other owners and of classes the claim does not ask for are ignored).
// With no limit that applies the claim is registered as by AddPending.
//
// Such a claim is woken, besides the events that wake every claim, when its owner's quota may have room
// again: when a claim of the same owner that held a device of a class the claim asks for (a result
// without adminAccess) is deallocated ([Requeue.ClaimDeallocated]), and when [Requeue.SetQuota] raises
// or removes a limit of its owner on such a class. It is then no longer known to wait for quota: it is
// woken by devices as a claim added by AddPending until a new refusal is recorded (call
// AddPendingOverQuota again when the retry is refused). Claims its owner allocates make its quota
// smaller, never larger, and need not be told.
//
// A device made available does not wake the requests that cannot fit the quota whatever devices they
// get: those that, with the limit's Held, would take the owner past a limit on devices of their class
// (every device counts one), counting the least that the claim's other requests take of that class. A
// device a request for one alternative of firstAvailable could take still wakes the claim when that
// alternative is within the quota; so does a device on which a selector fails (the failure fails the
// whole claim). A claim refused for a limit on a capacity or a counter, whose charge depends on the
// devices taken, is woken by devices as by AddPending, and also when a device with that capacity or
// counter changes or goes away: what an allocated device charges is read from its slice, so that may
// lower what the owner holds.
//
// The answers are right when what the limits name (Held, Max) is what the owner holds and may hold in
// the cluster the Requeue's events describe: the Requeue's quota (RequeueOptions.Quota,
// [Requeue.SetQuota]) is the one the refusal was computed under, and the claims whose deallocation
// lowers Held reach [Requeue.ClaimDeallocated]. An invalid limit is an error naming the claim and the
// field, and leaves the Requeue unchanged.
func (r *Requeue) AddPendingOverQuota(claim *resourceapi.ResourceClaim, exceeded []QuotaExceeded) error {
	c, err := r.newPending(claim)
	if err != nil {
		return err
	}
	obj := "ResourceClaim " + claim.Namespace + "/" + claim.Name
	for i := range exceeded {
		path := fmt.Sprintf("exceeded[%d]", i)
		if err := validateQuotaLimit(obj, path+".Limit", &exceeded[i].Limit); err != nil {
			return err
		}
		if exceeded[i].Held.Sign() < 0 {
			return rqInputError(obj, path+".Held", fmt.Errorf("must not be negative, got %s", exceeded[i].Held.String()))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addPending(c)
	owner := r.ownerOf(claim)
	var classes []string // the classes the claim's requests charge, once each
	for _, e := range c.entries {
		if !e.admin && !slices.Contains(classes, e.class) {
			classes = append(classes, e.class)
		}
	}
	q := &rqQuota{owner: owner, classes: classes}
	for i := range exceeded {
		l := &exceeded[i].Limit
		if l.Owner != owner || !slices.Contains(classes, l.Class) {
			continue
		}
		if !slices.Contains(q.limited, l.Class) {
			q.limited = append(q.limited, l.Class)
		}
		if l.Kind != QuotaDevices {
			if res := (quotaResource{l.Kind, l.Name}); !slices.Contains(q.resources, res) {
				q.resources = append(q.resources, res)
			}
			continue
		}
		markOverQuota(c, l.Class, &exceeded[i].Held, &l.Max)
	}
	if len(q.limited) == 0 {
		return nil
	}
	c.quota = q
	for _, class := range classes {
		k := ownerClass{owner, class}
		set := r.overQuota[k]
		if set == nil {
			set = map[*rqClaim]struct{}{}
			r.overQuota[k] = set
		}
		set[c] = struct{}{}
	}
	for _, res := range q.resources {
		set := r.quotaGone[res]
		if set == nil {
			set = map[*rqClaim]struct{}{}
			r.quotaGone[res] = set
		}
		set[c] = struct{}{}
	}
	return nil
}

// markOverQuota marks the entries of c that no allocation within a limit on the devices of class can
// use: the owner holds held, the limit is max, and an allocation that uses an entry takes the entry's
// devices of the class and, from every other request, at least the fewest any of its alternatives
// takes; when that is at least one device and, with held, more than max, no such allocation passes the
// limit. (A request for all devices takes a number that depends on the node, and one with adminAccess
// charges nothing: both count 0.)
func markOverQuota(c *rqClaim, class string, held, max *resource.Quantity) {
	charge := func(e *rqEntry) int64 {
		if e.admin || e.class != class {
			return 0
		}
		return e.count
	}
	// least[i] is the fewest devices of the class request i takes, over its alternatives.
	var least []int64
	for _, e := range c.entries {
		for len(least) <= e.req {
			least = append(least, -1)
		}
		if n := charge(e); least[e.req] < 0 || n < least[e.req] {
			least[e.req] = n
		}
	}
	var total int64
	for _, n := range least {
		total += max0(n)
	}
	for _, e := range c.entries {
		// An allocation that takes nothing of the class passes its limits whatever the owner holds
		// (quotaFits checks a limit when a device charges under it).
		n := total - max0(least[e.req]) + charge(e)
		if n == 0 {
			continue
		}
		need := resource.NewQuantity(n, resource.DecimalSI)
		need.Add(*held)
		if need.Cmp(*max) > 0 {
			e.overQuota = true
		}
	}
}

func max0(n int64) int64 { return max(n, 0) }

// forgetQuota drops what is known of why c waits for quota. The caller holds mu.
func (r *Requeue) forgetQuota(c *rqClaim) {
	if c.quota == nil {
		return
	}
	for _, class := range c.quota.classes {
		k := ownerClass{c.quota.owner, class}
		if set := r.overQuota[k]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(r.overQuota, k)
			}
		}
	}
	for _, res := range c.quota.resources {
		if set := r.quotaGone[res]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(r.quotaGone, res)
			}
		}
	}
	c.quota = nil
	for _, e := range c.entries {
		e.overQuota = false
	}
}

// wakeQuotaGone wakes the claims refused for a limit on a capacity or a counter that the old version
// of a device, which changes or goes away, has: it may be held, and charged as its slice publishes it
// (quotaIndex.heldIn), so what its holder's owner holds may be less now. The caller holds mu, between
// begin and end.
func (r *Requeue) wakeQuotaGone(d *rqDevice) {
	for res, set := range r.quotaGone {
		if !rqDeviceCharges(d.api, res) {
			continue
		}
		for c := range set {
			r.wake(c)
		}
	}
}

// rqDeviceCharges: a device allocated exclusively charges something under a limit on res (chargeOf).
func rqDeviceCharges(d *resourceapi.Device, res quotaResource) bool {
	switch res.kind {
	case QuotaCapacity:
		_, ok := d.Capacity[resourceapi.QualifiedName(res.name)]
		return ok
	case QuotaCounter:
		for _, cc := range d.ConsumesCounters {
			if _, ok := cc.Counters[res.name]; ok {
				return true
			}
		}
	}
	return false
}

// wakeForQuota wakes the claims refused for quota that owner's charge under class held back, and
// forgets why they waited (what their limits named is out of date). limited, when set, wakes only the
// claims whose owner has a limit on the class: in the Requeue's quota (any claim, when the Requeue has
// none) or among the limits the claim was refused for; a class without a limit holds nobody back. The
// caller holds mu, between begin and end.
func (r *Requeue) wakeForQuota(owner, class string, limited bool) {
	set := r.overQuota[ownerClass{owner, class}]
	if len(set) == 0 {
		return
	}
	if limited && (r.quota == nil || len(r.quota.byClass[ownerClass{owner, class}]) > 0) {
		limited = false
	}
	var woken []*rqClaim
	for c := range set {
		if !limited || slices.Contains(c.quota.limited, class) {
			woken = append(woken, c)
		}
	}
	for _, c := range woken {
		r.wake(c)
		r.forgetQuota(c)
	}
}

// ownerOf is the owner key of a claim under the Requeue's quota. The caller holds mu.
func (r *Requeue) ownerOf(c *resourceapi.ResourceClaim) string {
	if r.quota == nil {
		return c.Namespace
	}
	return r.quota.ownerOf(c)
}

// SetQuota replaces the Requeue's quota (RequeueOptions.Quota) with the one the scheduler's allocations
// apply from now on (nil: none), as [Snapshot.SetQuota] does for the Snapshot, and returns the claims
// refused for quota ([Requeue.AddPendingOverQuota]) that may fit now: those of an owner whose limit on
// a class they ask for was raised or removed. A new or lowered limit wakes nobody. Claims added by
// AddPending are not woken: they are not known to wait for quota.
//
// A function cannot be compared, so a quota whose Owner is set is taken to key claims as the previous
// one's did; when one of the two quotas has an Owner and the other none, or the Requeue had no quota,
// every claim refused for quota is woken. An invalid quota is an [InputError] naming the field and
// leaves the Requeue as it was.
func (r *Requeue) SetQuota(q *Quota) ([]types.NamespacedName, error) {
	var x *quotaIndex
	if q != nil {
		var err error
		if x, err = newQuotaIndexOf("Quota", q); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.quota
	r.quota = x
	r.begin()
	if old == nil || (old.owner == nil) != (x == nil || x.owner == nil) {
		var all []*rqClaim
		for _, set := range r.overQuota {
			for c := range set {
				all = append(all, c)
			}
		}
		for _, c := range all {
			r.wake(c)
			r.forgetQuota(c)
		}
		return r.end(), nil
	}
	before, after := effectiveLimits(old), effectiveLimits(x)
	for k, was := range before {
		if now, ok := after[k]; !ok || now.Cmp(was) > 0 {
			r.wakeForQuota(k.owner, k.class, false)
		}
	}
	return r.end(), nil
}

// quotaKey is what a limit counts, for whom.
type quotaKey struct {
	owner, class string
	kind         QuotaKind
	name         string
}

// effectiveLimits is the most each owner may hold of each resource: the smallest of its limits.
func effectiveLimits(x *quotaIndex) map[quotaKey]resource.Quantity {
	out := map[quotaKey]resource.Quantity{}
	if x == nil {
		return out
	}
	for _, l := range x.limits {
		k := quotaKey{l.Owner, l.Class, l.Kind, l.Name}
		if m, ok := out[k]; !ok || l.Max.Cmp(m) < 0 {
			out[k] = l.Max
		}
	}
	return out
}
