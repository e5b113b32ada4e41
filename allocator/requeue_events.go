package allocator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/celenv"
)

// The events below each return the pending claims that may fit after the event. A device "made available"
// wakes every pending request whose class and request selectors select it (or fail on it). A device that
// disappears or changes wakes only what its old version can explain: requests for all devices of a class
// (fewer devices to take may now fit) and requests whose selectors failed on it (the failure made the whole
// allocation fail, as in Kubernetes).

// AddOrUpdateClass adds a DeviceClass or replaces the one with the same name, and returns the pending
// claims that may fit now: every claim that names the class when it did not exist before (unless the claim
// names another class that is still missing), otherwise those
// with a request for the class whose selectors now select a device they did not select before, and
// requests for all devices of the class whenever the selected set changed. A selector that does not compile is an error naming the class
// and field; the class then counts as missing, as the allocator treats it.
//
// The class is evaluated against every published device; when ctx ends before that is done, the error
// wraps the context's cause and the Requeue is left as it was (deliver the event again).
func (r *Requeue) AddOrUpdateClass(ctx context.Context, class *resourceapi.DeviceClass) ([]types.NamespacedName, error) {
	if class == nil {
		return nil, rqInputError("DeviceClass", "", errors.New("class is nil"))
	}
	if class.Name == "" {
		return nil, rqInputError("DeviceClass", "metadata.name", errors.New("name is required"))
	}
	sels, err := r.compileSelectors("DeviceClass "+class.Name, "spec.selectors", class.Spec.Selectors)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if derr := r.deleteClass(ctx, class.Name); derr != nil {
			return nil, derr
		}
		return nil, err
	}
	if err := rqCancelled(ctx, class.Name); err != nil {
		return nil, err
	}
	old := r.classes[class.Name]
	nc := &rqClass{selectors: sels}
	if old != nil && slices.Equal(old.selectors, nc.selectors) {
		// Compiled selectors come from the Env's cache: the same expressions give the same verdicts.
		r.classes[class.Name] = nc
		return nil, nil
	}
	// First evaluate the class against every device, then apply: an event cut short by ctx changes
	// nothing. Class verdicts are kept, so they are evaluated without ctx's deadline.
	verdictCtx := context.WithoutCancel(ctx)
	type change struct {
		d             *rqDevice
		i             int // index of the old verdict in d.classes, -1 when there was none
		before, after rqVerdict
		had, selected bool
	}
	var changes []change
	for _, s := range r.slices {
		if err := rqCancelled(ctx, class.Name); err != nil {
			return nil, err
		}
		for _, d := range s.devices {
			i := slices.IndexFunc(d.classes, func(v rqVerdict) bool { return v.class == class.Name })
			var before rqVerdict
			had := i >= 0
			if had {
				before = d.classes[i]
			}
			selected, failed := selectorsVerdict(verdictCtx, nc.selectors, d.view)
			after := rqVerdict{class: class.Name, failed: failed}
			if had == selected && (!had || before == after) {
				continue
			}
			changes = append(changes, change{d: d, i: i, before: before, after: after, had: had, selected: selected})
		}
	}
	r.classes[class.Name] = nc
	r.begin()
	if old == nil {
		// As in Kubernetes, a missing class fails the allocation of the whole claim, even when the request
		// that names it is only one alternative of a firstAvailable list: every claim that names the class
		// may fit now, whatever the class selects.
		for _, e := range r.byClass[class.Name] {
			e.claim.missing--
		}
		for _, e := range r.byClass[class.Name] {
			r.wake(e.claim)
		}
	}
	for _, c := range changes {
		d := c.d
		if c.had {
			r.wakeBy(ctx, d, c.before, true, false)
			d.classes = slices.Delete(d.classes, c.i, c.i+1)
		}
		if c.selected {
			d.classes = append(d.classes, c.after)
			r.wakeBy(ctx, d, c.after, false, false)
		}
	}
	return r.end(), nil
}

// DeleteClass removes a DeviceClass. Claims that use it cannot be allocated, so no claim is woken. When
// ctx ends before the class's verdicts are dropped from every device, the error wraps the context's cause
// and the Requeue is left as it was.
func (r *Requeue) DeleteClass(ctx context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleteClass(ctx, name)
}

func (r *Requeue) deleteClass(ctx context.Context, name string) error {
	if err := rqCancelled(ctx, name); err != nil {
		return err
	}
	if _, ok := r.classes[name]; !ok {
		return nil
	}
	var marked []*rqDevice
	for _, s := range r.slices {
		if err := rqCancelled(ctx, name); err != nil {
			return err
		}
		for _, d := range s.devices {
			if slices.ContainsFunc(d.classes, func(v rqVerdict) bool { return v.class == name }) {
				marked = append(marked, d)
			}
		}
	}
	delete(r.classes, name)
	for _, e := range r.byClass[name] {
		e.claim.missing++
	}
	for _, d := range marked {
		d.classes = slices.DeleteFunc(d.classes, func(v rqVerdict) bool { return v.class == name })
	}
	return nil
}

// rqCancelled returns an error wrapping the context's cause once ctx has ended.
func rqCancelled(ctx context.Context, class string) error {
	if ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("requeue: DeviceClass %s: %w", class, context.Cause(ctx))
}

// AddOrUpdateSlice adds a ResourceSlice or replaces the one with the same name, and returns the pending
// claims that may fit now. When only devices changed (same device names and counter consumption, same
// node selection, pool and counters), only the new and changed devices count; otherwise the pool's
// completeness or validity may have changed and every device of the pool counts.
func (r *Requeue) AddOrUpdateSlice(ctx context.Context, slice *resourceapi.ResourceSlice) ([]types.NamespacedName, error) {
	if err := rqValidateSlice(slice); err != nil {
		return nil, err
	}
	shared := r.sharedEntry(slice)
	var spec *resourceapi.ResourceSliceSpec
	if shared != nil {
		spec = &shared.obj.Spec
	} else {
		spec = slice.Spec.DeepCopy()
	}
	ns := &rqSlice{name: slice.Name, pool: PoolID{Driver: spec.Driver, Pool: spec.Pool.Name}, spec: spec, shared: shared}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.slices[slice.Name]
	whole := old == nil || !rqSameShape(old, ns)
	var previous map[string]*rqDevice
	if whole && old != nil && old.pool == ns.pool {
		previous = make(map[string]*rqDevice, len(old.devices))
		for _, d := range old.devices {
			previous[d.id.Device] = d
		}
	}
	ns.devices = make([]*rqDevice, len(spec.Devices))
	for i := range spec.Devices {
		api := &spec.Devices[i]
		var prev *rqDevice
		if !whole {
			prev = old.devices[i]
			if rqSameDevice(prev.api, api) {
				// Point at the new copy (and the Snapshot's view of it) so that the old spec is not
				// kept alive.
				prev.api = api
				if v := ns.view(i); v != nil {
					prev.view = v()
				}
				ns.devices[i] = prev
				continue
			}
		} else {
			prev = previous[api.Name]
		}
		ns.devices[i] = r.newDevice(ctx, ns.pool, api, prev, ns.view(i))
	}
	if old != nil {
		r.unindexSlice(old)
	}
	r.indexSlice(ns)

	r.begin()
	if whole {
		if old != nil {
			for _, d := range old.devices {
				r.wakeGone(ctx, d)
			}
			if old.pool != ns.pool {
				r.wakePool(ctx, old.pool)
			}
		}
		r.wakePool(ctx, ns.pool)
		return r.end(), nil
	}
	for i, d := range ns.devices {
		if d != old.devices[i] {
			r.wakeGone(ctx, old.devices[i])
			r.wakeAvailable(ctx, d, false)
		}
	}
	return r.end(), nil
}

// DeleteSlice removes a ResourceSlice and returns the pending claims that may fit now: requests for all
// devices of a class its devices belonged to, requests whose selectors failed on them, and, because the
// pool's validity may have changed, whatever the pool's other devices can serve. An unknown name does
// nothing.
func (r *Requeue) DeleteSlice(ctx context.Context, name string) []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.slices[name]
	if old == nil {
		return nil
	}
	r.unindexSlice(old)
	r.begin()
	for _, d := range old.devices {
		r.wakeGone(ctx, d)
	}
	r.wakePool(ctx, old.pool)
	return r.end()
}

// ClaimDeallocated returns the pending claims that may fit now that the claim's devices are free: the
// devices of its allocation (results with adminAccess held nothing and free nothing) and the devices that
// draw on the same shared counters. Requests with adminAccess may use devices in use, so freeing a device
// wakes them only when counters or shared capacity are freed with it. A claim without an allocation frees
// nothing. Call it too for an allocated claim that is deleted.
//
// The claim's owner (under the Requeue's quota) then holds less: the claims of the same owner refused
// for quota ([Requeue.AddPendingOverQuota]) that ask for a class the claim's results were allocated
// for are woken too, when the owner has a limit on that class: in the Requeue's quota, or among the
// limits the pending claim was refused for (any class, when the Requeue has no quota).
func (r *Requeue) ClaimDeallocated(ctx context.Context, claim *resourceapi.ResourceClaim) ([]types.NamespacedName, error) {
	if claim == nil {
		return nil, rqInputError("ResourceClaim", "", errors.New("claim is nil"))
	}
	if claim.Status.Allocation == nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.begin()
	var owner string
	if len(r.overQuota) > 0 {
		owner = r.ownerOf(claim)
	}
	for i := range claim.Status.Allocation.Devices.Results {
		res := &claim.Status.Allocation.Devices.Results[i]
		if res.AdminAccess != nil && *res.AdminAccess {
			continue
		}
		// As the quota's held amounts (quotaIndex.heldIn): a result is charged to its request's class.
		if len(r.overQuota) > 0 {
			if class, ok := requestClass(claim, res.Request); ok {
				r.wakeForQuota(owner, class, true)
			}
		}
		id := DeviceID{Driver: res.Driver, Pool: res.Pool, Device: res.Device}
		for _, d := range r.devices[id] {
			shared := len(d.api.ConsumesCounters) > 0 ||
				(d.api.AllowMultipleAllocations != nil && *d.api.AllowMultipleAllocations)
			r.wakeAvailable(ctx, d, !shared)
			if len(d.api.ConsumesCounters) > 0 {
				r.wakeCounterUsers(ctx, d)
			}
		}
	}
	return r.end(), nil
}

// AddOrUpdateTaintRule adds a DeviceTaintRule or replaces the one with the same name and returns the
// pending claims that may fit now: a changed rule may no longer taint the devices the previous version
// selected. A new rule only adds taints and wakes nothing. With DRADeviceTaints off taints never block and
// nothing is woken.
func (r *Requeue) AddOrUpdateTaintRule(ctx context.Context, rule *resourceapi.DeviceTaintRule) ([]types.NamespacedName, error) {
	if rule == nil {
		return nil, rqInputError("DeviceTaintRule", "", errors.New("rule is nil"))
	}
	if rule.Name == "" {
		return nil, rqInputError("DeviceTaintRule", "metadata.name", errors.New("name is required"))
	}
	spec := *rule.Spec.DeepCopy()
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.rules[rule.Name]
	r.rules[rule.Name] = spec
	if !had || equality.Semantic.DeepEqual(old, spec) {
		return nil, nil
	}
	return r.untaint(ctx, old), nil
}

// DeleteTaintRule removes a DeviceTaintRule and returns the pending claims that may fit now that the
// devices it selected lost its taint.
func (r *Requeue) DeleteTaintRule(ctx context.Context, name string) []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.rules[name]
	if !had {
		return nil
	}
	delete(r.rules, name)
	return r.untaint(ctx, old)
}

// untaint wakes the claims that the devices a rule selected can serve.
func (r *Requeue) untaint(ctx context.Context, old resourceapi.DeviceTaintRuleSpec) []types.NamespacedName {
	// As the allocator: only NoSchedule and NoExecute block allocation.
	if !r.f.DRADeviceTaints || old.DeviceSelector == nil ||
		(old.Taint.Effect != resourceapi.DeviceTaintEffectNoSchedule && old.Taint.Effect != resourceapi.DeviceTaintEffectNoExecute) {
		return nil
	}
	sel := old.DeviceSelector
	r.begin()
	visit := func(s *rqSlice) {
		if (sel.Driver != nil && *sel.Driver != s.pool.Driver) || (sel.Pool != nil && *sel.Pool != s.pool.Pool) {
			return
		}
		for _, d := range s.devices {
			if sel.Device == nil || *sel.Device == d.id.Device {
				r.wakeAvailable(ctx, d, false)
			}
		}
	}
	if sel.Driver != nil && sel.Pool != nil {
		for _, s := range r.pools[PoolID{Driver: *sel.Driver, Pool: *sel.Pool}] {
			visit(s)
		}
	} else {
		for _, s := range r.slices {
			visit(s)
		}
	}
	return r.end()
}

// newDevice prepares a device and records the classes that select it. prev is the device's previous
// version in the same pool, if any: when CEL sees the same device (same attributes, capacity and
// allowMultipleAllocations; taints, counters and binding conditions are not visible to CEL), its prepared
// view and class verdicts are reused.
//
// view, when not nil, gives the device's prepared view from the Snapshot.
func (r *Requeue) newDevice(ctx context.Context, pool PoolID, api *resourceapi.Device, prev *rqDevice, view func() *celenv.Device) *rqDevice {
	d := &rqDevice{
		id:  DeviceID{Driver: pool.Driver, Pool: pool.Pool, Device: api.Name},
		api: api,
	}
	if prev != nil && prev.id == d.id && rqSameForCEL(prev.api, api) {
		d.view = prev.view
		if view != nil {
			d.view = view() // the Snapshot's, so that the old version is not kept alive
		}
		d.classes = slices.Clone(prev.classes)
		return d
	}
	if view != nil {
		d.view = view()
	} else {
		d.view = celenv.NewDevice(pool.Driver, api)
	}
	// Class verdicts are kept until the device or the class changes, so a cancelled ctx must not record
	// failures; selectors are cost-bounded, so the evaluation ends anyway.
	verdictCtx := context.WithoutCancel(ctx)
	for name, c := range r.classes {
		if selected, failed := selectorsVerdict(verdictCtx, c.selectors, d.view); selected {
			d.classes = append(d.classes, rqVerdict{class: name, failed: failed})
		}
	}
	return d
}

func (r *Requeue) indexSlice(s *rqSlice) {
	r.slices[s.name] = s
	p := r.pools[s.pool]
	if p == nil {
		p = map[string]*rqSlice{}
		r.pools[s.pool] = p
	}
	p[s.name] = s
	for _, d := range s.devices {
		r.devices[d.id] = append(r.devices[d.id], d)
	}
}

func (r *Requeue) unindexSlice(s *rqSlice) {
	delete(r.slices, s.name)
	if p := r.pools[s.pool]; p != nil {
		delete(p, s.name)
		if len(p) == 0 {
			delete(r.pools, s.pool)
		}
	}
	for _, d := range s.devices {
		list := slices.DeleteFunc(r.devices[d.id], func(x *rqDevice) bool { return x == d })
		if len(list) == 0 {
			delete(r.devices, d.id)
		} else {
			r.devices[d.id] = list
		}
	}
}

// wakeBy wakes the pending requests for one class that a device serves. gone means the device (in this
// version) is going away: only requests for all devices and requests whose selectors fail on it care.
// skipAdmin leaves out requests with adminAccess, which may use the device
// while it is in use. A request that cannot fit its owner's quota on devices (rqEntry.overQuota) is
// woken only by a failing selector.
func (r *Requeue) wakeBy(ctx context.Context, d *rqDevice, v rqVerdict, gone, skipAdmin bool) {
	for _, e := range r.byClass[v.class] {
		if e.claim.mark == r.epoch || (skipAdmin && e.admin) {
			continue
		}
		if v.failed {
			r.wake(e.claim)
			continue
		}
		selected, failed := selectorsVerdict(ctx, e.selectors, d.view)
		if failed || (selected && !e.overQuota && (!gone || e.all)) {
			r.wake(e.claim)
		}
	}
}

func (r *Requeue) wakeAvailable(ctx context.Context, d *rqDevice, skipAdmin bool) {
	for _, v := range d.classes {
		r.wakeBy(ctx, d, v, false, skipAdmin)
	}
}

func (r *Requeue) wakeGone(ctx context.Context, d *rqDevice) {
	for _, v := range d.classes {
		r.wakeBy(ctx, d, v, true, false)
	}
	if len(r.quotaGone) > 0 {
		r.wakeQuotaGone(d)
	}
}

// wakePool treats every device of a pool as made available.
func (r *Requeue) wakePool(ctx context.Context, pool PoolID) {
	for _, s := range r.pools[pool] {
		for _, d := range s.devices {
			r.wakeAvailable(ctx, d, false)
		}
	}
}

// wakeCounterUsers treats the devices of d's pool that consume one of d's counter sets as made available:
// the counters d held are free again.
func (r *Requeue) wakeCounterUsers(ctx context.Context, d *rqDevice) {
	for _, s := range r.pools[PoolID{Driver: d.id.Driver, Pool: d.id.Pool}] {
		for _, o := range s.devices {
			if o != d && rqSharesCounters(d.api, o.api) {
				r.wakeAvailable(ctx, o, false)
			}
		}
	}
}

// sharedEntry returns the Snapshot's entry for the slice when the Snapshot holds it unchanged: the same
// object (Options.NoCopy) or a copy whose spec equals it. The entry is immutable (a change of the slice
// builds a new one), so the Requeue may keep it.
func (r *Requeue) sharedEntry(slice *resourceapi.ResourceSlice) *sliceEntry {
	if r.snap == nil {
		return nil
	}
	r.snap.mu.RLock()
	e := r.snap.st.slices[slice.Name]
	r.snap.mu.RUnlock()
	if e == nil || (e.obj != slice && !equality.Semantic.DeepEqual(&e.obj.Spec, &slice.Spec)) {
		return nil
	}
	return e
}

// view returns how to get device i's prepared view from the Snapshot, or nil when the slice is the
// Requeue's own copy.
func (s *rqSlice) view(i int) func() *celenv.Device {
	if s.shared == nil {
		return nil
	}
	return func() *celenv.Device { return s.shared.devices()[i].view() }
}

// rqSameForCEL reports whether CEL sees two devices alike: the same name, attributes, capacity values and
// allowMultipleAllocations. It compares field by field because reflection-based equality dominated the cost
// of a slice update.
func rqSameForCEL(a, b *resourceapi.Device) bool {
	if a.Name != b.Name || !rqSameBoolPtr(a.AllowMultipleAllocations, b.AllowMultipleAllocations) ||
		len(a.Attributes) != len(b.Attributes) || len(a.Capacity) != len(b.Capacity) {
		return false
	}
	for name, x := range a.Attributes {
		y, ok := b.Attributes[name]
		if !ok || !rqSameAttribute(&x, &y) {
			return false
		}
	}
	for name, x := range a.Capacity {
		y, ok := b.Capacity[name]
		if !ok || x.Value.Cmp(y.Value) != 0 {
			return false
		}
	}
	return true
}

// rqSameDevice reports whether two versions of a device are equal in everything the allocator reads.
func rqSameDevice(a, b *resourceapi.Device) bool {
	if !rqSameForCEL(a, b) {
		return false
	}
	for name, x := range a.Capacity {
		if y := b.Capacity[name]; (x.RequestPolicy != nil || y.RequestPolicy != nil) &&
			!equality.Semantic.DeepEqual(x.RequestPolicy, y.RequestPolicy) {
			return false
		}
	}
	ra, rb := *a, *b
	ra.Attributes, ra.Capacity, rb.Attributes, rb.Capacity = nil, nil, nil, nil
	return equality.Semantic.DeepEqual(ra, rb)
}

func rqSameAttribute(a, b *resourceapi.DeviceAttribute) bool {
	return rqSamePtr(a.IntValue, b.IntValue) && rqSameBoolPtr(a.BoolValue, b.BoolValue) &&
		rqSamePtr(a.StringValue, b.StringValue) && rqSamePtr(a.VersionValue, b.VersionValue) &&
		rqSameList(a.IntValues, b.IntValues) && rqSameList(a.BoolValues, b.BoolValues) &&
		rqSameList(a.StringValues, b.StringValues) && rqSameList(a.VersionValues, b.VersionValues)
}

func rqSamePtr[T int64 | string](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func rqSameBoolPtr(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// rqSameList tells an empty list from a missing one, as the API does.
func rqSameList[T comparable](a, b []T) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

func rqSharesCounters(a, b *resourceapi.Device) bool {
	for i := range a.ConsumesCounters {
		for j := range b.ConsumesCounters {
			if a.ConsumesCounters[i].CounterSet == b.ConsumesCounters[j].CounterSet {
				return true
			}
		}
	}
	return false
}

// rqSameShape reports whether a new version of a slice differs from the old one only in the content of
// devices that keep their names and counter consumption, so that the pool's completeness and validity
// cannot have changed.
func rqSameShape(old, ns *rqSlice) bool {
	if old.pool != ns.pool || len(old.spec.Devices) != len(ns.spec.Devices) {
		return false
	}
	a, b := *old.spec, *ns.spec
	a.Devices, b.Devices = nil, nil
	if !equality.Semantic.DeepEqual(a, b) {
		return false
	}
	for i := range ns.spec.Devices {
		od, nd := &old.spec.Devices[i], &ns.spec.Devices[i]
		if od.Name != nd.Name || !equality.Semantic.DeepEqual(od.ConsumesCounters, nd.ConsumesCounters) {
			return false
		}
	}
	return true
}

func rqValidateSlice(slice *resourceapi.ResourceSlice) error {
	if slice == nil {
		return rqInputError("ResourceSlice", "", errors.New("slice is nil"))
	}
	obj := "ResourceSlice " + slice.Name
	switch {
	case slice.Name == "":
		return rqInputError(obj, "metadata.name", errors.New("name is required"))
	case slice.Spec.Driver == "":
		return rqInputError(obj, "spec.driver", errors.New("driver is required"))
	case slice.Spec.Pool.Name == "":
		return rqInputError(obj, "spec.pool.name", errors.New("pool name is required"))
	}
	for i := range slice.Spec.Devices {
		if slice.Spec.Devices[i].Name == "" {
			return rqInputError(obj, fmt.Sprintf("spec.devices[%d].name", i), errors.New("name is required"))
		}
	}
	return nil
}
