package verify

import (
	"errors"
	"fmt"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/capacity"
)

// usage is what allocated claims hold, as the Kubernetes scheduler gathers it: results with admin access hold
// nothing, results with a shareID hold a share and its consumed capacity, others hold the device exclusively.
type usage struct {
	exclusive map[DeviceID]string // device → claim holding it
	shares    map[DeviceID]map[types.UID]string
	consumed  map[DeviceID]map[resourceapi.QualifiedName]resource.Quantity
}

func (c *checker) gatherState(checked []*resourceapi.ResourceClaim) {
	c.state = usage{
		exclusive: map[DeviceID]string{},
		shares:    map[DeviceID]map[types.UID]string{},
		consumed:  map[DeviceID]map[resourceapi.QualifiedName]resource.Quantity{},
	}
	skip := map[string]bool{}
	for _, cl := range checked {
		skip[claimName(cl)] = true
	}
	for _, cl := range c.in.Claims {
		if cl == nil || cl.Status.Allocation == nil || skip[claimName(cl)] {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			c.state.add(claimName(cl), r, c.features.DRAConsumableCapacity)
		}
	}
}

// add records one result of an allocated claim as kube-scheduler gathers its allocated state: admin access holds
// nothing, a result with a share ID holds a share only while DRAConsumableCapacity is on, and anything else (a
// share written while the gate was on included) holds the device exclusively.
func (u *usage) add(claim string, r resourceapi.DeviceRequestAllocationResult, consumableCapacity bool) {
	id := DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
	switch {
	case ptr.Deref(r.AdminAccess, false):
	case r.ShareID != nil && consumableCapacity:
		if u.shares[id] == nil {
			u.shares[id] = map[types.UID]string{}
		}
		u.shares[id][*r.ShareID] = claim
		sum := u.consumed[id]
		if sum == nil {
			sum = map[resourceapi.QualifiedName]resource.Quantity{}
			u.consumed[id] = sum
		}
		for name, q := range r.ConsumedCapacity {
			v := sum[name]
			v.Add(q)
			sum[name] = v
		}
	default:
		u.exclusive[id] = claim
	}
}

type placed struct {
	claim, request string
	result         int
	admin          bool
}

// checkUsage checks what the results take together with the allocated state: exclusive use, shares and their
// capacity, shared counters and compatibility groups.
func (c *checker) checkUsage(claims []*resourceapi.ResourceClaim, results []resourceapi.AllocationResult) {
	exclusive := map[DeviceID]placed{}
	shareIDs := map[DeviceID]map[types.UID]bool{}
	newConsumed := map[DeviceID]map[resourceapi.QualifiedName]resource.Quantity{}
	counted := map[DeviceID]bool{} // devices drawing counters: held by the state or taken without admin access
	var newDevices []DeviceID
	lastUse := map[DeviceID]placed{}
	for ci, claim := range claims {
		name := claimName(claim)
		inClaim := map[DeviceID]placed{}
		for ri, r := range results[ci].Devices.Results {
			id := DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			d := c.devices[id]
			if d == nil {
				continue
			}
			admin := ptr.Deref(r.AdminAccess, false)
			here := placed{name, r.Request, ri, admin}
			v := func(rule Rule, format string, args ...any) {
				c.report(Violation{Claim: name, Request: r.Request, Result: ri, Device: id, Rule: rule, Message: fmt.Sprintf(format, args...)})
			}
			multi := c.features.DRAConsumableCapacity && ptr.Deref(d.dev.AllowMultipleAllocations, false)
			req := c.requestOf(claim, r.Request)
			if !multi {
				if r.ShareID != nil {
					v(RuleShare, "shareID %s set, but the device does not allow multiple allocations", *r.ShareID)
				}
				if len(r.ConsumedCapacity) > 0 {
					v(RuleCapacity, "consumedCapacity set, but the device does not allow multiple allocations")
				}
				if prev, dup := inClaim[id]; dup && (admin || prev.admin) {
					v(RuleAdminAccess, "device already allocated in the claim for request %s (result %d)", prev.request, prev.result)
				}
				inClaim[id] = here
				if !admin {
					// Exclusive holders include shares recorded while DRAConsumableCapacity was on: with the gate
					// off, kube-scheduler counts them as exclusive allocations.
					if holder := c.state.exclusive[id]; holder != "" {
						v(RuleInUse, "device already allocated to claim %s", holder)
					}
					if prev, dup := exclusive[id]; dup {
						v(RuleInUse, "device also allocated to claim %s, request %s (result %d)", prev.claim, prev.request, prev.result)
					}
					exclusive[id] = here
				}
				if c.features.DRAConsumableCapacity && req != nil {
					if _, err := c.consumedFor(req, d); err != nil {
						v(RuleCapacity, "%v", capacityMessage(err))
					}
				}
			} else {
				if holder := c.state.exclusive[id]; holder != "" && !admin {
					v(RuleInUse, "device already allocated exclusively to claim %s", holder)
				}
				if r.ShareID == nil {
					v(RuleShare, "the device allows multiple allocations, but the result has no shareID")
				} else {
					if shareIDs[id] == nil {
						shareIDs[id] = map[types.UID]bool{}
					}
					if shareIDs[id][*r.ShareID] || c.state.shares[id][*r.ShareID] != "" {
						v(RuleShare, "shareID %s is not unique for the device", *r.ShareID)
					}
					shareIDs[id][*r.ShareID] = true
				}
				if req != nil {
					want, err := c.consumedFor(req, d)
					switch {
					case err != nil:
						v(RuleCapacity, "%v", capacityMessage(err))
					case equality.Semantic.DeepEqual(nilIfEmptyMap(r.ConsumedCapacity), nilIfEmptyMap(want)):
					case c.in.RangedShares && c.rangedShareOK(req, d, r.ConsumedCapacity):
					case c.in.RangedShares:
						v(RuleCapacity, "consumedCapacity %v, the request consumes %v, and a ranged share records at least that, in values the device's request policy allows", r.ConsumedCapacity, want)
					default:
						v(RuleCapacity, "consumedCapacity %v, the request consumes %v", r.ConsumedCapacity, want)
					}
				}
				sum := newConsumed[id]
				if sum == nil {
					sum = map[resourceapi.QualifiedName]resource.Quantity{}
					newConsumed[id] = sum
				}
				for n, q := range r.ConsumedCapacity {
					s := sum[n]
					s.Add(q)
					sum[n] = s
				}
			}
			if !admin {
				if !counted[id] {
					newDevices = append(newDevices, id)
				}
				counted[id] = true
				lastUse[id] = here
			}
		}
	}
	c.checkCapacityTotals(newConsumed, lastUse)
	for id := range c.state.exclusive {
		counted[id] = true
	}
	// The stable variant of the Kubernetes allocator only sees exclusive allocations, so shares draw no counters
	// there.
	if c.features.Implementation() >= variantIncubating {
		for id := range c.state.shares {
			counted[id] = true
		}
	}
	c.checkCounters(counted, newDevices, lastUse)
}

func nilIfEmptyMap[K comparable, V any](m map[K]V) map[K]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

func capacityMessage(err error) string {
	if errors.Is(err, capacity.ErrUnsuitable) {
		return "the device cannot serve the capacity request: " + err.Error()
	}
	return "capacity request invalid for the device: " + err.Error()
}

// requestOf finds the request or subrequest a result names; nil when there is none (reported elsewhere).
func (c *checker) requestOf(claim *resourceapi.ResourceClaim, ref string) *request {
	for i := range claim.Spec.Devices.Requests {
		dr := &claim.Spec.Devices.Requests[i]
		if dr.Exactly != nil && dr.Name == ref {
			return exactRequest(dr.Name, dr.Exactly)
		}
		for j := range dr.FirstAvailable {
			if dr.Name+"/"+dr.FirstAvailable[j].Name == ref {
				return subRequest(dr.Name, &dr.FirstAvailable[j])
			}
		}
	}
	return nil
}

func (c *checker) consumedFor(req *request, d *device) (map[resourceapi.QualifiedName]resource.Quantity, error) {
	return capacity.Consumed(req.capacityRequests(), d.dev.Capacity, capacity.Options{Features: &c.features})
}

// capacityRequests are the request's capacity.requests; nil when it has none.
func (r *request) capacityRequests() map[resourceapi.QualifiedName]resource.Quantity {
	if r.capacity == nil {
		return nil
	}
	return r.capacity.Requests
}

// rangedShareOK reports whether a share's recorded capacity is one a ranged share may record: the largest
// policy-valid amount up to the recorded one is the recorded one itself, for every capacity of the device,
// and at least what the point request consumes (capacity.ConsumedRange with the record as preferred).
func (c *checker) rangedShareOK(req *request, d *device, recorded map[resourceapi.QualifiedName]resource.Quantity) bool {
	got, err := capacity.ConsumedRange(capacity.RangeRequest{Min: req.capacityRequests(), Preferred: recorded}, d.dev.Capacity, nil, capacity.Options{Features: &c.features})
	return err == nil && equality.Semantic.DeepEqual(nilIfEmptyMap(got.Consumed), nilIfEmptyMap(recorded))
}

func (c *checker) checkCapacityTotals(newConsumed map[DeviceID]map[resourceapi.QualifiedName]resource.Quantity, lastUse map[DeviceID]placed) {
	ids := make([]DeviceID, 0, len(newConsumed))
	for id := range newConsumed {
		ids = append(ids, id)
	}
	sortIDs(ids)
	for _, id := range ids {
		d := c.devices[id]
		names := make([]string, 0, len(d.dev.Capacity))
		for n := range d.dev.Capacity {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names {
			qn := resourceapi.QualifiedName(n)
			total := c.state.consumed[id][qn].DeepCopy()
			total.Add(newConsumed[id][qn])
			if limit := d.dev.Capacity[qn].Value; total.Cmp(limit) > 0 {
				at := lastUse[id]
				c.report(Violation{Claim: at.claim, Request: at.request, Result: at.result, Device: id, Rule: RuleCapacity,
					Message: fmt.Sprintf("capacity %s overdrawn: %s consumed by all shares, %s available", n, total.String(), limit.String())})
			}
		}
	}
}

func sortIDs(ids []DeviceID) {
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
}

// checkCounters adds up, per pool and counter set, what the devices in use draw, and checks the compatibility
// groups of the devices drawing on each counter set. Only counter sets that a newly allocated device draws on
// are reported.
func (c *checker) checkCounters(counted map[DeviceID]bool, newDevices []DeviceID, lastUse map[DeviceID]placed) {
	if !c.features.DRAPartitionableDevices {
		return
	}
	type setKey struct {
		pool poolKey
		set  string
	}
	drawn := map[setKey]map[string]resource.Quantity{}
	groups := map[setKey][][]string{}
	touched := map[setKey]DeviceID{}
	var order []setKey
	all := make([]DeviceID, 0, len(counted))
	for id := range counted {
		all = append(all, id)
	}
	sortIDs(all)
	isNew := map[DeviceID]bool{}
	for _, id := range newDevices {
		isNew[id] = true
	}
	for _, id := range all {
		d := c.devices[id]
		if d == nil {
			continue
		}
		for _, cc := range d.dev.ConsumesCounters {
			k := setKey{d.pool.key, cc.CounterSet}
			if drawn[k] == nil {
				drawn[k] = map[string]resource.Quantity{}
				order = append(order, k)
			}
			for n, q := range cc.Counters {
				s := drawn[k][n]
				s.Add(q.Value)
				drawn[k][n] = s
			}
			groups[k] = append(groups[k], cc.CompatibilityGroups)
			if isNew[id] {
				touched[k] = id
			}
		}
	}
	for _, k := range order {
		id, ok := touched[k]
		if !ok {
			continue
		}
		at := lastUse[id]
		avail := c.pools[k.pool].counters[k.set]
		names := make([]string, 0, len(drawn[k]))
		for n := range drawn[k] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			a, known := avail[n]
			if used := drawn[k][n]; known && used.Cmp(a) > 0 {
				c.report(Violation{Claim: at.claim, Request: at.request, Result: at.result, Device: id, Rule: RuleCounters,
					Message: fmt.Sprintf("counter %s of counter set %s overdrawn: %s drawn, %s available", n, k.set, used.String(), a.String())})
			}
		}
		if c.features.DRADeviceCompatibilityGroups && !compatible(groups[k]) {
			c.report(Violation{Claim: at.claim, Request: at.request, Result: at.result, Device: id, Rule: RuleCompatibility,
				Message: fmt.Sprintf("devices drawing on counter set %s share no compatibility group: %v", k.set, groups[k])})
		}
	}
}

// compatible is the co-allocation rule of compatibility groups on one counter set: either no device declares
// groups, or every device declares groups and one group is common to all.
func compatible(members [][]string) bool {
	grouped, empty := 0, 0
	count := map[string]int{}
	for _, g := range members {
		if len(g) == 0 {
			empty++
			continue
		}
		grouped++
		seen := map[string]bool{}
		for _, n := range g {
			if !seen[n] {
				seen[n] = true
				count[n]++
			}
		}
	}
	if grouped == 0 {
		return true
	}
	if empty > 0 {
		return false
	}
	for _, n := range count {
		if n == grouped {
			return true
		}
	}
	return false
}
