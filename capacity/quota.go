package capacity

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// InventoryDevice is one published device as a quota system sees it.
type InventoryDevice struct {
	Driver, Pool, Name string
	// Node is the node the device is attached to, "" when it is reachable from several nodes.
	Node                     string
	Capacity                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
	AllowMultipleAllocations bool
	ConsumesCounters         []resourceapi.DeviceCounterConsumption
}

// Inventory is what the cluster publishes, grouped by the DeviceClasses that select each device. Build it
// with [NewInventory]; the class membership is decided by the caller (for example with celenv), which keeps
// this package free of CEL.
//
// An Inventory is safe for concurrent use by [ChargeClaim] and [ChargeAllocation], which only read it, also
// when it was built as a struct literal (its index is then built once, on first use); Classes must not change
// after first use.
type Inventory struct {
	// Classes lists, per DeviceClass name, the devices that the class selects.
	Classes map[string][]InventoryDevice
	byID    map[[3]string]*InventoryDevice
	index   sync.Once // builds byID for an Inventory not built by NewInventory
}

// NewInventory builds an inventory from ResourceSlices. classes returns the names of the DeviceClasses that
// select a device; its error is returned, naming the device. Devices of slices with spec.nodeName belong to
// that node; all others are reachable from several nodes. Inputs are not retained.
func NewInventory(slices []*resourceapi.ResourceSlice, classes func(driver string, dev *resourceapi.Device) ([]string, error)) (*Inventory, error) {
	inv := &Inventory{Classes: map[string][]InventoryDevice{}, byID: map[[3]string]*InventoryDevice{}}
	for i, s := range slices {
		if s == nil {
			return nil, fmt.Errorf("slices[%d] is nil", i)
		}
		node := ""
		if s.Spec.NodeName != nil {
			node = *s.Spec.NodeName
		}
		for j := range s.Spec.Devices {
			d := &s.Spec.Devices[j]
			for _, name := range sortedNames(d.Capacity) {
				if err := ValidateCapacity(d.Capacity[name]); err != nil {
					return nil, fmt.Errorf("ResourceSlice %s: spec.devices[%d].capacity[%s].%w", s.Name, j, name, err)
				}
			}
			if err := validateConsumption(d.ConsumesCounters); err != nil {
				return nil, fmt.Errorf("ResourceSlice %s: spec.devices[%d].%w", s.Name, j, err)
			}
			names, err := classes(s.Spec.Driver, d)
			if err != nil {
				return nil, fmt.Errorf("ResourceSlice %s: spec.devices[%d] (%s): %w", s.Name, j, d.Name, err)
			}
			dev := InventoryDevice{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Name: d.Name, Node: node, Capacity: d.Capacity,
				AllowMultipleAllocations: d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations, ConsumesCounters: d.ConsumesCounters}
			inv.byID[[3]string{dev.Driver, dev.Pool, dev.Name}] = &dev
			for _, c := range names {
				inv.Classes[c] = append(inv.Classes[c], dev)
			}
		}
	}
	return inv, nil
}

func (inv *Inventory) device(driver, pool, name string) (*InventoryDevice, bool) {
	if inv == nil {
		return nil, false
	}
	inv.index.Do(func() {
		if inv.byID != nil {
			return // built by NewInventory
		}
		inv.byID = map[[3]string]*InventoryDevice{}
		for _, devs := range inv.Classes {
			for i := range devs {
				d := devs[i]
				inv.byID[[3]string{d.Driver, d.Pool, d.Name}] = &d
			}
		}
	})
	d, ok := inv.byID[[3]string{driver, pool, name}]
	return d, ok
}

// Charge is what a claim counts against a quota.
type Charge struct {
	// Devices is the number of devices per DeviceClass.
	Devices map[string]int64
	// Capacity is the consumed capacity per DeviceClass and capacity name: the policy-rounded consumption
	// of shares, and the whole capacity of devices allocated exclusively.
	Capacity map[string]map[resourceapi.QualifiedName]resource.Quantity
	// Counters is the shared-counter consumption of partitionable devices, per counter name (summed over
	// counter sets).
	Counters map[string]resource.Quantity
	// Unbounded lists the DeviceClasses of requests for All devices that could not be bounded because no
	// inventory was given; their device count is not included in Devices.
	Unbounded []string
}

func newCharge() Charge {
	return Charge{Devices: map[string]int64{}, Capacity: map[string]map[resourceapi.QualifiedName]resource.Quantity{}, Counters: map[string]resource.Quantity{}}
}

func (c *Charge) addCapacity(class string, name resourceapi.QualifiedName, q resource.Quantity) {
	m := c.Capacity[class]
	if m == nil {
		m = map[resourceapi.QualifiedName]resource.Quantity{}
		c.Capacity[class] = m
	}
	v := m[name]
	v.Add(q)
	m[name] = v
}

func (c *Charge) addCounter(name string, q resource.Quantity) {
	v := c.Counters[name]
	v.Add(q)
	c.Counters[name] = v
}

// add adds o to c.
func (c *Charge) add(o Charge) {
	for k, v := range o.Devices {
		c.Devices[k] += v
	}
	for class, m := range o.Capacity {
		for n, q := range m {
			c.addCapacity(class, n, q)
		}
	}
	for n, q := range o.Counters {
		c.addCounter(n, q)
	}
	c.Unbounded = mergeNames(c.Unbounded, o.Unbounded)
}

// maxWith raises every entry of c to at least the one in o: the charge that covers either.
func (c *Charge) maxWith(o Charge) {
	for k, v := range o.Devices {
		c.Devices[k] = max(c.Devices[k], v)
	}
	for class, m := range o.Capacity {
		for n, q := range m {
			if cur, ok := c.Capacity[class][n]; !ok || cur.Cmp(q) < 0 {
				if c.Capacity[class] == nil {
					c.Capacity[class] = map[resourceapi.QualifiedName]resource.Quantity{}
				}
				c.Capacity[class][n] = q.DeepCopy()
			}
		}
	}
	for n, q := range o.Counters {
		if cur, ok := c.Counters[n]; !ok || cur.Cmp(q) < 0 {
			c.Counters[n] = q.DeepCopy()
		}
	}
	c.Unbounded = mergeNames(c.Unbounded, o.Unbounded)
}

func (c *Charge) scale(n int64) {
	for k := range c.Devices {
		c.Devices[k] *= n
	}
	for _, m := range c.Capacity {
		for name, q := range m {
			m[name] = mul(q, n)
		}
	}
	for name, q := range c.Counters {
		c.Counters[name] = mul(q, n)
	}
}

func mul(q resource.Quantity, n int64) resource.Quantity {
	out := q.DeepCopy()
	out.Mul(n) // exact: falls back to decimal arithmetic past int64
	return out
}

func mergeNames(a, b []string) []string {
	for _, n := range b {
		found := false
		for _, m := range a {
			found = found || m == n
		}
		if !found {
			a = append(a, n)
		}
	}
	sort.Strings(a)
	return a
}

// ErrQuota is wrapped by the errors of [ChargeClaim] and [ChargeAllocation] for input they cannot charge.
var ErrQuota = errors.New("cannot charge claim")

// ChargeClaim returns what a claim (or a claim template's spec) charges against a quota before it is
// allocated: the most it can consume, whatever devices the scheduler picks. Every request is charged; none
// is rejected:
//
//   - exactly with ExactCount charges count devices of its class; with adminAccess it charges nothing, as
//     admin access does not take the device from other users;
//   - exactly with All charges the devices of its class on the node where the class has the most (devices
//     not attached to one node count on every node); without inventory the class is listed in
//     Charge.Unbounded instead;
//   - firstAvailable charges, entry by entry, the largest of its alternatives' charges, so that whichever
//     alternative the scheduler picks is covered;
//   - capacity: with inventory, for each device the class selects, what the request consumes ([Consumed]:
//     policy-rounded for shares, the whole capacity for devices without allowMultipleAllocations), taking the
//     largest over the devices; devices that cannot serve the request are skipped. Without inventory the
//     requested amounts as written, since rounding depends on the device;
//   - counters: with inventory the largest consumesCounters of the class's devices, per counter name.
//
// inv may be nil. Unknown allocation modes, a negative count, a claim whose requests together need more
// devices than an allocation can hold (resourceapi.AllocationResultsMaxSize, 32) and requested amounts that
// fail [ValidateQuantity] are errors wrapping [ErrQuota] that name the field; the charges are therefore
// never negative and never overflow. A count of zero is the API's default, one.
//
// The limit is the claim's, as the Kubernetes allocator checks it before it looks at a device
// (k8s.io/dynamic-resource-allocation/structured, Allocate: "number of requested devices … exceeds the
// claim limit"): the sum over the requests of the fewest devices each needs, an ExactCount request its
// count (with adminAccess too), a firstAvailable request its smallest alternative, a request for All
// devices none before a node is known. A claim past it can never be allocated, so it is not charged.
func ChargeClaim(spec resourceapi.ResourceClaimSpec, inv *Inventory, opts Options) (Charge, error) {
	total := newCharge()
	var least int64 // the fewest devices the requests so far need
	for i, r := range spec.Devices.Requests {
		path := fmt.Sprintf("spec.devices.requests[%d]", i)
		need, err := fewestDevices(r, path)
		if err != nil {
			return Charge{}, err
		}
		if need > resourceapi.AllocationResultsMaxSize-least {
			return Charge{}, fmt.Errorf("%s: %w: adding %d devices exceeds the claim limit of %d, with %d already accounted for",
				path, ErrQuota, need, resourceapi.AllocationResultsMaxSize, least)
		}
		least += need
		switch {
		case r.Exactly != nil:
			c, err := chargeExact(*r.Exactly, inv, opts, path+".exactly")
			if err != nil {
				return Charge{}, err
			}
			total.add(c)
		case len(r.FirstAvailable) > 0:
			worst := newCharge()
			for j, sub := range r.FirstAvailable {
				exact := resourceapi.ExactDeviceRequest{DeviceClassName: sub.DeviceClassName, Selectors: sub.Selectors,
					AllocationMode: sub.AllocationMode, Count: sub.Count, Tolerations: sub.Tolerations, Capacity: sub.Capacity}
				c, err := chargeExact(exact, inv, opts, fmt.Sprintf("%s.firstAvailable[%d]", path, j))
				if err != nil {
					return Charge{}, err
				}
				worst.maxWith(c)
			}
			total.add(worst)
		default:
			return Charge{}, fmt.Errorf("%s: %w: neither exactly nor firstAvailable is set", path, ErrQuota)
		}
	}
	return total, nil
}

// fewestDevices is the fewest devices a request needs, as the allocator counts them for the claim limit:
// count for ExactCount (0 is the API's default, 1), none for All, the smallest alternative of
// firstAvailable. A count that is negative or alone above the limit is an error naming it.
func fewestDevices(r resourceapi.DeviceRequest, path string) (int64, error) {
	one := func(mode resourceapi.DeviceAllocationMode, count int64, path string) (int64, error) {
		if mode != resourceapi.DeviceAllocationModeExactCount && mode != "" {
			return 0, nil // All, or a mode chargeExact names as unsupported
		}
		switch {
		case count == 0:
			return 1, nil
		case count < 0:
			return 0, fmt.Errorf("%s.count: %w: must be greater than zero, got %d", path, ErrQuota, count)
		case count > resourceapi.AllocationResultsMaxSize:
			return 0, fmt.Errorf("%s.count: %w: %d exceeds the claim limit of %d devices", path, ErrQuota, count, resourceapi.AllocationResultsMaxSize)
		}
		return count, nil
	}
	if r.Exactly != nil {
		return one(r.Exactly.AllocationMode, r.Exactly.Count, path+".exactly")
	}
	var least int64
	for j, sub := range r.FirstAvailable {
		n, err := one(sub.AllocationMode, sub.Count, fmt.Sprintf("%s.firstAvailable[%d]", path, j))
		if err != nil {
			return 0, err
		}
		if j == 0 || n < least {
			least = n
		}
	}
	return least, nil
}

func chargeExact(r resourceapi.ExactDeviceRequest, inv *Inventory, opts Options, path string) (Charge, error) {
	c := newCharge()
	if r.AdminAccess != nil && *r.AdminAccess {
		return c, nil
	}
	class := r.DeviceClassName
	var requests map[resourceapi.QualifiedName]resource.Quantity
	if r.Capacity != nil {
		requests = r.Capacity.Requests
	}
	for _, name := range sortedNames(requests) {
		if err := ValidateQuantity(requests[name]); err != nil {
			return Charge{}, fmt.Errorf("%s.capacity.requests[%s]: %w: %w", path, name, ErrQuota, err)
		}
	}
	var candidates []InventoryDevice
	if inv != nil {
		candidates = inv.Classes[class]
	}
	switch r.AllocationMode {
	case resourceapi.DeviceAllocationModeExactCount, "":
		count := r.Count
		if count == 0 {
			count = 1 // as API defaulting; ChargeClaim checked the count (fewestDevices)
		}
		one := newCharge()
		one.Devices[class] = 1
		if inv == nil {
			for name, q := range requests {
				one.addCapacity(class, name, q)
			}
		} else {
			worst := newCharge()
			for _, d := range candidates {
				dc, ok := deviceCharge(class, d, requests, opts)
				if ok {
					worst.maxWith(dc)
				}
			}
			worst.Devices[class] = 1
			if len(worst.Capacity[class]) == 0 {
				// No device of the class can serve the request: charge what it asks for.
				for name, q := range requests {
					worst.addCapacity(class, name, q)
				}
			}
			one = worst
		}
		one.scale(count)
		return one, nil
	case resourceapi.DeviceAllocationModeAll:
		if inv == nil {
			c.Unbounded = []string{class}
			return c, nil
		}
		shared := newCharge()
		perNode := map[string]*Charge{}
		for _, d := range candidates {
			dc, ok := deviceCharge(class, d, requests, opts)
			if !ok {
				continue
			}
			if d.Node == "" {
				shared.add(dc)
				continue
			}
			n := perNode[d.Node]
			if n == nil {
				nc := newCharge()
				n = &nc
				perNode[d.Node] = n
			}
			n.add(dc)
		}
		worst := newCharge()
		for _, n := range perNode {
			worst.maxWith(*n)
		}
		worst.add(shared)
		return worst, nil
	default:
		return Charge{}, fmt.Errorf("%s.allocationMode: %w: unsupported mode %q", path, ErrQuota, r.AllocationMode)
	}
}

// deviceCharge is what allocating one device of the class for the request charges, false when the device
// cannot serve the request.
func deviceCharge(class string, d InventoryDevice, requests map[resourceapi.QualifiedName]resource.Quantity, opts Options) (Charge, bool) {
	c := newCharge()
	c.Devices[class] = 1
	consumed, err := Consumed(requests, d.Capacity, opts)
	if err != nil {
		return Charge{}, false
	}
	for name, q := range consumed {
		if !d.AllowMultipleAllocations {
			q = d.Capacity[name].Value
		}
		c.addCapacity(class, name, q)
	}
	for _, cc := range d.ConsumesCounters {
		for name, v := range cc.Counters {
			c.addCounter(name, v.Value)
		}
	}
	return c, true
}

// ChargeAllocation returns the exact charge of an allocated claim, from its status.allocation: one device
// per result, under the DeviceClass of the request (or firstAvailable alternative) that got it; nothing for
// results with adminAccess; the recorded consumedCapacity for shares, and with inventory the whole capacity
// of devices allocated exclusively and their consumesCounters. The counters of a device with
// allowMultipleAllocations are consumed once for the device, not per share, and are not charged to shares.
// A claim without allocation charges nothing; a result whose request is not in the spec is an error naming it.
func ChargeAllocation(claim *resourceapi.ResourceClaim, inv *Inventory) (Charge, error) {
	c := newCharge()
	if claim == nil || claim.Status.Allocation == nil {
		return c, nil
	}
	classes := map[string]string{}
	for _, r := range claim.Spec.Devices.Requests {
		if r.Exactly != nil {
			classes[r.Name] = r.Exactly.DeviceClassName
		}
		for _, sub := range r.FirstAvailable {
			classes[r.Name+"/"+sub.Name] = sub.DeviceClassName
		}
	}
	for i, res := range claim.Status.Allocation.Devices.Results {
		class, ok := classes[res.Request]
		if !ok {
			return Charge{}, fmt.Errorf("ResourceClaim %s/%s: status.allocation.devices.results[%d].request: %w: request %q is not in the spec",
				claim.Namespace, claim.Name, i, ErrQuota, res.Request)
		}
		if res.AdminAccess != nil && *res.AdminAccess {
			continue
		}
		c.Devices[class]++
		d, known := inv.device(res.Driver, res.Pool, res.Device)
		if res.ShareID != nil || res.ConsumedCapacity != nil {
			for _, name := range sortedNames(res.ConsumedCapacity) {
				q := res.ConsumedCapacity[name]
				if err := ValidateQuantity(q); err != nil {
					return Charge{}, fmt.Errorf("ResourceClaim %s/%s: status.allocation.devices.results[%d].consumedCapacity[%s]: %w: %w",
						claim.Namespace, claim.Name, i, name, ErrQuota, err)
				}
				c.addCapacity(class, name, q)
			}
			continue
		}
		if !known {
			continue
		}
		for name, dc := range d.Capacity {
			c.addCapacity(class, name, dc.Value)
		}
		for _, cc := range d.ConsumesCounters {
			for name, v := range cc.Counters {
				c.addCounter(name, v.Value)
			}
		}
	}
	return c, nil
}

// String formats a charge compactly and deterministically, for logs and examples.
func (c Charge) String() string {
	var b strings.Builder
	for _, class := range sortedKeys(c.Devices) {
		fmt.Fprintf(&b, "%s: %d devices", class, c.Devices[class])
		if m := c.Capacity[class]; len(m) > 0 {
			for _, n := range sortedNames(m) {
				q := m[n]
				fmt.Fprintf(&b, ", %s %s", n, q.String())
			}
		}
		b.WriteString("; ")
	}
	for _, n := range sortedKeys(c.Counters) {
		q := c.Counters[n]
		fmt.Fprintf(&b, "counter %s %s; ", n, q.String())
	}
	if len(c.Unbounded) > 0 {
		fmt.Fprintf(&b, "unbounded: %s; ", strings.Join(c.Unbounded, ", "))
	}
	return strings.TrimSuffix(b.String(), "; ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
