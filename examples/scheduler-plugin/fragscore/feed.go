package fragscore

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/dralloc/dralloc/allocator/headroom"
)

// feed is where the incremental view reads the DRA state: the scheduler's informers for
// ResourceSlices, DeviceClasses and DeviceTaintRules (their stores hold an object before its event is
// handed to any handler, so reading one when its event has come is never behind it), and the DRA
// manager's claim tracker for ResourceClaims (its assume cache and its in-flight allocations, which
// no informer event announces). The view learns which objects changed from the informers' events and
// reads only those; see [view.syncFeed].
type feed struct {
	slice func(name string) (*resourceapi.ResourceSlice, error)
	class func(name string) (*resourceapi.DeviceClass, error)
	// rule is nil where DeviceTaintRules are off (the DRADeviceTaintRules feature gate): the scheduler's
	// ResourceSlice tracker then applies none, and neither does the view.
	rule   func(name string) (*resourceapi.DeviceTaintRule, error)
	claims fwk.ResourceClaimTracker
}

// informerFeed is the feed of a running kube-scheduler: the listers of its informer factory and its
// DRA manager's claim tracker. The informers are the ones the scheduler's DRA manager is built on
// (pkg/scheduler/scheduler.go in v1.37.2: the assume cache on the ResourceClaim informer, the
// ResourceSlice tracker on the ResourceSlice and DeviceTaintRule informers, the DeviceClass lister),
// so registering handlers on them starts no second watch.
func informerFeed(f informers.SharedInformerFactory, claims fwk.ResourceClaimTracker, taintRules bool) feed {
	r := f.Resource().V1()
	sl, cl := r.ResourceSlices().Lister(), r.DeviceClasses().Lister()
	fd := feed{
		slice:  func(name string) (*resourceapi.ResourceSlice, error) { return notFoundNil(sl.Get(name)) },
		class:  func(name string) (*resourceapi.DeviceClass, error) { return notFoundNil(cl.Get(name)) },
		claims: claims,
	}
	if taintRules {
		rl := r.DeviceTaintRules().Lister()
		fd.rule = func(name string) (*resourceapi.DeviceTaintRule, error) { return notFoundNil(rl.Get(name)) }
	}
	return fd
}

// notFoundNil turns a lister's NotFound into a nil object.
func notFoundNil[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// watchInformers registers the view's event handlers on the scheduler's informers. kube-scheduler
// waits for its own handlers to have the informers' initial objects before it schedules, not for a
// plugin's; the view is not synced (errNotSynced) until these have them too.
func (v *view) watchInformers(f informers.SharedInformerFactory, taintRules bool) error {
	r := f.Resource().V1()
	add := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
		reg, err := inf.AddEventHandler(h)
		if err == nil {
			v.registrations = append(v.registrations, reg)
		}
		return err
	}
	named := func(mark func(string)) cache.ResourceEventHandler {
		name := func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(interface{ GetName() string }); ok {
				mark(o.GetName())
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { name(obj) }, UpdateFunc: func(_, obj any) { name(obj) }, DeleteFunc: name}
	}
	if err := add(r.ResourceSlices().Informer(), named(v.sliceChanged)); err != nil {
		return fmt.Errorf("ResourceSlice event handler: %w", err)
	}
	if err := add(r.DeviceClasses().Informer(), named(v.classChanged)); err != nil {
		return fmt.Errorf("DeviceClass event handler: %w", err)
	}
	if taintRules {
		if err := add(r.DeviceTaintRules().Informer(), named(v.ruleChanged)); err != nil {
			return fmt.Errorf("DeviceTaintRule event handler: %w", err)
		}
	}
	claimEvent := func(obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if c, ok := obj.(*resourceapi.ResourceClaim); ok {
			v.claimChanged(c, deleted)
		}
	}
	err := add(r.ResourceClaims().Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { claimEvent(obj, false) },
		UpdateFunc: func(_, obj any) { claimEvent(obj, false) },
		DeleteFunc: func(obj any) { claimEvent(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("ResourceClaim event handler: %w", err)
	}
	return nil
}

// errNotSynced is a sync's answer while the view's event handlers have not had every object the
// informers held when they were registered.
var errNotSynced = errors.New("the informers' initial objects are not all handed to the view yet")

// changes are what the informers reported since the view's last sync: names of the objects that
// changed and, for claims, the informer's latest object (or that it was deleted).
type changes struct {
	slices  map[string]struct{}
	classes map[string]struct{}
	rules   map[string]struct{}
	claims  map[types.NamespacedName]claimEvent
	// reserved are claims of pods that the plugin's Reserve or Unreserve saw: the DRA plugin may
	// have signalled, assumed or restored their allocations, which no informer event announces.
	reserved map[types.NamespacedName]struct{}
}

// claimEvent is the informer's latest word on a claim: its object, and whether it was deleted.
type claimEvent struct {
	obj     *resourceapi.ResourceClaim
	deleted bool
}

func (v *view) sliceChanged(name string) { v.mark(func(c *changes) { c.slices[name] = struct{}{} }) }
func (v *view) classChanged(name string) { v.mark(func(c *changes) { c.classes[name] = struct{}{} }) }
func (v *view) ruleChanged(name string)  { v.mark(func(c *changes) { c.rules[name] = struct{}{} }) }

func (v *view) claimChanged(obj *resourceapi.ResourceClaim, deleted bool) {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	v.mark(func(c *changes) { c.claims[key] = claimEvent{obj: obj, deleted: deleted} })
}

// claimsReserved records that the DRA plugin may have changed the claims' state in the tracker (a
// pod's Reserve or Unreserve): the next sync reads them again.
func (v *view) claimsReserved(keys []types.NamespacedName) {
	v.mark(func(c *changes) {
		for _, k := range keys {
			c.reserved[k] = struct{}{}
		}
	})
}

// mark records a change. Event handlers run on the informers' goroutines, the sync on the
// scheduling cycle's: hence the lock.
func (v *view) mark(fn func(*changes)) {
	v.pendingMu.Lock()
	fn(&v.pending)
	v.pendingMu.Unlock()
}

// take hands over the changes gathered so far and starts a new set.
func (v *view) take() changes {
	v.pendingMu.Lock()
	defer v.pendingMu.Unlock()
	out := v.pending
	v.pending = newChanges()
	return out
}

func newChanges() changes {
	return changes{slices: map[string]struct{}{}, classes: map[string]struct{}{}, rules: map[string]struct{}{},
		claims: map[types.NamespacedName]claimEvent{}, reserved: map[types.NamespacedName]struct{}{}}
}

// giveBack returns changes a failed sync did not apply, under the ones that came since (which are
// newer).
func (v *view) giveBack(old changes) {
	v.pendingMu.Lock()
	defer v.pendingMu.Unlock()
	c := &v.pending
	for n := range old.slices {
		c.slices[n] = struct{}{}
	}
	for n := range old.classes {
		c.classes[n] = struct{}{}
	}
	for n := range old.rules {
		c.rules[n] = struct{}{}
	}
	for k, e := range old.claims {
		if _, newer := c.claims[k]; !newer {
			c.claims[k] = e
		}
	}
	for k := range old.reserved {
		c.reserved[k] = struct{}{}
	}
}

// syncFeed brings the incremental view up to date: it reads the objects the informers reported as
// changed since the last sync, and the claims whose state in the tracker can change without an
// informer event (watched or quiet, see [view.refreshClaim]). The per-pod cost is that of the changes,
// of the watched claims (those in binding cycles) and of one lookup per quiet claim (the claims not
// allocated: those of pods waiting to be scheduled), not of the cluster.
// It reports whether the Inventory was built anew (the devices changed).
func (v *view) syncFeed() (bool, error) {
	if !v.handlersSynced {
		for _, reg := range v.registrations {
			if !reg.HasSynced() {
				return false, errNotSynced
			}
		}
		v.handlersSynced = true
	}
	ch := v.take()
	rebuilt, err := v.apply(ch)
	if err != nil {
		v.giveBack(ch)
		return false, err
	}
	return rebuilt, nil
}

func (v *view) apply(ch changes) (bool, error) {
	f := v.feed
	slicesChanged := v.inv == nil
	for _, name := range sortedKeys(ch.slices) {
		s, err := f.slice(name)
		if err != nil {
			return false, fmt.Errorf("ResourceSlice %s: %w", name, err)
		}
		if s == nil {
			if _, ok := v.slices[name]; ok {
				if err := v.snap.DeleteSlice(name); err != nil {
					return false, fmt.Errorf("ResourceSlice %s: %w", name, err)
				}
				delete(v.slices, name)
				slicesChanged = true
			}
			continue
		}
		if v.slices[name] == s {
			continue
		}
		if err := v.snap.AddOrUpdateSlice(s); err != nil {
			return false, fmt.Errorf("ResourceSlice %s: %w", name, err)
		}
		v.slices[name] = s
		slicesChanged = true
	}
	for _, name := range sortedKeys(ch.classes) {
		c, err := f.class(name)
		if err != nil {
			return false, fmt.Errorf("DeviceClass %s: %w", name, err)
		}
		if c == nil {
			if _, ok := v.classes[name]; ok {
				if err := v.snap.DeleteClass(name); err != nil {
					return false, fmt.Errorf("DeviceClass %s: %w", name, err)
				}
				delete(v.classes, name)
			}
			continue
		}
		if v.classes[name] == c {
			continue
		}
		if err := v.snap.AddOrUpdateClass(c); err != nil {
			return false, fmt.Errorf("DeviceClass %s: %w", name, err)
		}
		v.classes[name] = c
	}
	if f.rule != nil {
		for _, name := range sortedKeys(ch.rules) {
			r, err := f.rule(name)
			if err != nil {
				return false, fmt.Errorf("DeviceTaintRule %s: %w", name, err)
			}
			if r == nil {
				if _, ok := v.rules[name]; ok {
					if err := v.snap.DeleteTaintRule(name); err != nil {
						return false, fmt.Errorf("DeviceTaintRule %s: %w", name, err)
					}
					delete(v.rules, name)
				}
				continue
			}
			if v.rules[name] == r {
				continue
			}
			if err := v.snap.AddOrUpdateTaintRule(r); err != nil {
				return false, fmt.Errorf("DeviceTaintRule %s: %w", name, err)
			}
			v.rules[name] = r
		}
	}
	for key, e := range ch.claims {
		v.informed[key] = e
		if err := v.refreshClaim(key); err != nil {
			return false, err
		}
	}
	for key := range ch.reserved {
		if _, done := ch.claims[key]; done {
			continue
		}
		// A claim the informer has not announced to the view (not yet, or deleted since) is not read
		// from the tracker alone, which may lag the informer: its event will say what it is.
		if _, heard := v.informed[key]; !heard {
			continue
		}
		if err := v.refreshClaim(key); err != nil {
			return false, err
		}
	}
	for key := range v.watched {
		if _, done := ch.claims[key]; done {
			continue
		}
		if _, done := ch.reserved[key]; done {
			continue
		}
		if err := v.refreshClaim(key); err != nil {
			return false, err
		}
	}
	// A quiet claim changes in the tracker without an informer event only when the DRA plugin reserves
	// an allocation for it: one lookup by UID, not a read of the assume cache.
	for key, uid := range v.quiet {
		if v.feed.claims.GetPendingAllocation(uid) == nil {
			continue
		}
		if err := v.refreshClaim(key); err != nil {
			return false, err
		}
	}
	if !slicesChanged {
		return false, nil
	}
	// The fragmentation measure's Inventory of the slices' devices, rebuilt when a slice changed (rare:
	// drivers publish once and on health changes). Device taints of DeviceTaintRules are not in these
	// slices; the measure reads them from the snapshot.
	all := make([]*resourceapi.ResourceSlice, 0, len(v.slices))
	for _, name := range sortedKeys(v.slices) {
		all = append(all, v.slices[name])
	}
	inv, err := headroom.NewInventory(all)
	if err != nil {
		return false, err
	}
	v.inv = inv
	return true, nil
}

// refreshClaim puts the claim as the DRA manager has it now into the snapshot, as the listing sync
// does: its allocation in the tracker (the assume cache: the informer's object, or the scheduler's
// newer one assumed after writing it) or, where it has none, its pending allocation (reserved in a
// binding cycle, not yet written). The informer's latest word on the claim (v.informed) may be newer
// than the tracker's object (the tracker's handler and this view's run on different goroutines), so
// of the two objects the newer, by resourceVersion as the assume cache compares them, counts, and a
// claim the informer deleted is gone unless the tracker holds a newer one (created again). One
// difference from the listing follows: after the DRA plugin's Unreserve takes back an allocation it
// assumed (AssumedClaimRestore), the assume cache holds its older informer object even where the
// informer has delivered the written one since (it drops an update whose version is not newer than
// the assumed object's), while this view counts the written allocation, as the API has it.
//
// A claim whose state in the tracker can change with no informer event stays watched, read again at
// every sync: one with a pending allocation (it may go, and the scheduler assumes the allocation it
// wrote before the informer's event arrives), one whose tracker object is newer than the informer's
// (assumed: AssumedClaimRestore may take it back), and one the informer and the tracker do not agree
// on yet. A claim without an allocation or a pending one, on whose object the two agree, is quiet:
// only the DRA plugin's Reserve can change it without an event, by signalling a pending allocation
// (SignalClaimPendingAllocation; PreBind assumes only what was signalled), so a sync looks up its
// pending allocation by UID, and the plugin's own Reserve and Unreserve mark the pod's claims to be
// read again (they may have been reserved, written, assumed and released between two syncs). Once
// the claim is allocated and the informer has caught up, only the informer's events change what the
// view counts (a deallocation is an API write). So a sync reads again only the claims of pods in
// their binding cycles and of those reserved since the last sync, and looks up one UID per claim
// waiting, not the cluster's claims.
//
// One gap is left, for pods of another profile of the same scheduler (whose Reserve does not call
// this plugin's): a claim reserved, written, assumed and released entirely between two syncs is
// counted from the informer's event of the write, not from the assumption, a few milliseconds later.
func (v *view) refreshClaim(key types.NamespacedName) error {
	cur, err := v.feed.claims.Get(key.Namespace, key.Name)
	if err != nil {
		cur = nil // not in the tracker (deleted, or not there yet)
	}
	inf, heard := v.informed[key]
	switch {
	case heard && inf.deleted:
		if cur == nil || !newerVersion(cur, inf.obj) {
			cur = nil
		}
	case heard:
		if cur == nil || newerVersion(inf.obj, cur) {
			cur = inf.obj
		}
	}
	if cur == nil {
		delete(v.informed, key)
		delete(v.watched, key)
		delete(v.quiet, key)
		return v.dropClaim(key)
	}
	var pending *resourceapi.AllocationResult
	if cur.Status.Allocation == nil {
		pending = v.feed.claims.GetPendingAllocation(cur.UID)
	}
	agreed := heard && !inf.deleted && !newerVersion(cur, inf.obj)
	delete(v.watched, key)
	delete(v.quiet, key)
	switch {
	case cur.Status.Allocation == nil && pending == nil && agreed:
		v.quiet[key] = cur.UID
	case cur.Status.Allocation == nil || !agreed:
		v.watched[key] = struct{}{}
	}
	if cur.Status.Allocation == nil && pending == nil {
		return v.dropClaim(key)
	}
	return v.putClaim(key, cur, pending)
}

// newerVersion reports whether a's resourceVersion is newer than b's, read as the assume cache reads
// them (integers). Versions that are not integers count as newer when they differ.
func newerVersion(a, b *resourceapi.ResourceClaim) bool {
	x, errX := strconv.ParseInt(a.ResourceVersion, 10, 64)
	y, errY := strconv.ParseInt(b.ResourceVersion, 10, 64)
	if errX != nil || errY != nil {
		return a.ResourceVersion != b.ResourceVersion
	}
	return x > y
}

// putClaim puts the claim with its allocation, or its pending allocation set on a copy, into the
// snapshot, unless it is there as it is.
func (v *view) putClaim(key types.NamespacedName, c *resourceapi.ResourceClaim, pending *resourceapi.AllocationResult) error {
	e := v.claims[key]
	if e != nil && e.claim == c && e.pending == pending {
		return nil
	}
	obj := c
	if pending != nil {
		obj = c.DeepCopy()
		obj.Status.Allocation = pending.DeepCopy()
	}
	if err := v.snap.AddOrUpdateClaim(obj); err != nil {
		return fmt.Errorf("ResourceClaim %s: %w", key, err)
	}
	if e == nil {
		v.claims[key] = &claimEntry{claim: c, pending: pending}
	} else {
		e.claim, e.pending = c, pending
	}
	return nil
}

func (v *view) dropClaim(key types.NamespacedName) error {
	if _, ok := v.claims[key]; !ok {
		return nil
	}
	if err := v.snap.DeleteClaim(key.Namespace, key.Name); err != nil {
		return fmt.Errorf("ResourceClaim %s: %w", key, err)
	}
	delete(v.claims, key)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
