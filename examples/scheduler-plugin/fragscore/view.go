package fragscore

import (
	"fmt"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
)

// view is dralloc's picture of the scheduler's DRA state: a Snapshot holding the ResourceSlices, the
// DeviceClasses, the DeviceTaintRules and the allocated ResourceClaims as the scheduler has them at
// PreScore, and the fragmentation measure's Inventory of the slices' devices. An object is handed to
// the snapshot again only when the scheduler holds another object for its name (informers and the
// assume cache replace an object on every change, never modify it), and the Inventory is built again
// only when a slice changed.
//
// It is kept up to date in one of two ways. With a feed (the scheduler's own DRA manager and informer
// factory, see [feed]), incrementally: the informers' events say which objects changed, and a sync
// reads only those and the claims not allocated yet (syncFeed), so that a pod's PreScore costs what
// changed since the last pod, not what the cluster holds. Without one (a DRA manager of another kind,
// such as a simulation's, whose changes no informer announces), by listing: every sync lists the
// manager's ResourceSlices (DeviceTaintRules applied), DeviceClasses and ResourceClaims and compares
// each with the view's (syncList).
type view struct {
	snap *allocator.Snapshot
	inv  *headroom.Inventory

	slices  map[string]*resourceapi.ResourceSlice
	classes map[string]*resourceapi.DeviceClass
	// claims are the allocated claims in the snapshot, by namespace and name (the snapshot's key).
	claims map[types.NamespacedName]*claimEntry
	// gen counts the listing syncs of the claims; an entry not marked with the current one was not
	// listed.
	gen uint64

	// The incremental view's state; feed is nil for a listing view.
	feed      *feed
	pendingMu sync.Mutex
	pending   changes
	rules     map[string]*resourceapi.DeviceTaintRule
	// informed is the informers' latest word on each claim, watched the claims read again at every
	// sync, and quiet the claims not allocated whose only possible change without an informer event is
	// a pending allocation, looked up by UID at every sync ([view.refreshClaim]).
	informed map[types.NamespacedName]claimEvent
	watched  map[types.NamespacedName]struct{}
	quiet    map[types.NamespacedName]types.UID
	// registrations are the event handlers' on the informers (none where a test feeds the view), and
	// handlersSynced says they have had the informers' initial objects.
	registrations  []cache.ResourceEventHandlerRegistration
	handlersSynced bool
}

// claimEntry is a claim in the view: the tracker's object, the allocation it was given from
// GetPendingAllocation (nil where the claim's own status holds it), and the last listing sync that
// listed it.
type claimEntry struct {
	claim   *resourceapi.ResourceClaim
	pending *resourceapi.AllocationResult
	gen     uint64
}

// newView returns a listing view.
func newView() *view {
	return &view{
		snap:    allocator.NewSnapshot(allocator.Options{}),
		slices:  map[string]*resourceapi.ResourceSlice{},
		classes: map[string]*resourceapi.DeviceClass{},
		claims:  map[types.NamespacedName]*claimEntry{},
	}
}

// newFeedView returns an incremental view reading the feed; it is empty until events are marked and a
// sync reads them.
func newFeedView(f feed) *view {
	v := newView()
	v.feed = &f
	v.pending = newChanges()
	v.rules = map[string]*resourceapi.DeviceTaintRule{}
	v.informed = map[types.NamespacedName]claimEvent{}
	v.watched = map[types.NamespacedName]struct{}{}
	v.quiet = map[types.NamespacedName]types.UID{}
	return v
}

// sync brings the view up to date: from the feed's events where it has a feed, else by listing the
// manager. It reports whether the Inventory was built anew (the devices changed). The scheduler's
// objects are not modified: the snapshot keeps its own copies, and a claim with a pending allocation
// is copied before the allocation is set.
func (v *view) sync(m fwk.SharedDRAManager) (bool, error) {
	if v.feed != nil {
		return v.syncFeed()
	}
	return v.syncList(m)
}

// syncList brings a listing view up to date with the manager.
func (v *view) syncList(m fwk.SharedDRAManager) (bool, error) {
	slices, err := m.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return false, fmt.Errorf("list ResourceSlices: %w", err)
	}
	changed := len(slices) != len(v.slices)
	seen := make(map[string]bool, len(slices))
	for _, s := range slices {
		seen[s.Name] = true
		if v.slices[s.Name] == s {
			continue
		}
		if err := v.snap.AddOrUpdateSlice(s); err != nil {
			return false, fmt.Errorf("ResourceSlice %s: %w", s.Name, err)
		}
		v.slices[s.Name] = s
		changed = true
	}
	for name := range v.slices {
		if !seen[name] {
			if err := v.snap.DeleteSlice(name); err != nil {
				return false, fmt.Errorf("ResourceSlice %s: %w", name, err)
			}
			delete(v.slices, name)
		}
	}

	classes, err := m.DeviceClasses().List()
	if err != nil {
		return false, fmt.Errorf("list DeviceClasses: %w", err)
	}
	seen = make(map[string]bool, len(classes))
	for _, c := range classes {
		seen[c.Name] = true
		if v.classes[c.Name] == c {
			continue
		}
		if err := v.snap.AddOrUpdateClass(c); err != nil {
			return false, fmt.Errorf("DeviceClass %s: %w", c.Name, err)
		}
		v.classes[c.Name] = c
	}
	for name := range v.classes {
		if !seen[name] {
			if err := v.snap.DeleteClass(name); err != nil {
				return false, fmt.Errorf("DeviceClass %s: %w", name, err)
			}
			delete(v.classes, name)
		}
	}

	if err := v.syncClaims(m.ResourceClaims()); err != nil {
		return false, err
	}

	if changed || v.inv == nil {
		inv, err := headroom.NewInventory(slices)
		if err != nil {
			return false, err
		}
		v.inv = inv
		return true, nil
	}
	return false, nil
}

// syncClaims puts the allocated claims into the snapshot. The tracker's List is its assume cache: claims
// as the informer has them and as the DRA plugin assumed them after writing their status
// (AssumeClaimAfterAPICall). An allocation the DRA plugin has reserved but not yet written
// (SignalClaimPendingAllocation, between Reserve and PreBind) is not in that list in v1.37.2
// (pkg/scheduler/framework/plugins/dynamicresources/dra_manager.go, claimTracker.List reads the assume
// cache only), so it is read with GetPendingAllocation and set on a copy of the claim: the devices a
// pod in its binding cycle takes count as taken.
func (v *view) syncClaims(t fwk.ResourceClaimTracker) error {
	claims, err := t.List()
	if err != nil {
		return fmt.Errorf("list ResourceClaims: %w", err)
	}
	// This runs for every pod over every claim of the cluster: one map lookup per claim listed and no
	// allocation where nothing changed (a set of the names seen, built per pod, cost more than the rest).
	v.gen++
	listed := 0
	for _, c := range claims {
		var pending *resourceapi.AllocationResult
		if c.Status.Allocation == nil {
			if pending = t.GetPendingAllocation(c.UID); pending == nil {
				continue
			}
		}
		listed++
		key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
		if err := v.putClaim(key, c, pending); err != nil {
			return err
		}
		v.claims[key].gen = v.gen
	}
	if listed == len(v.claims) {
		return nil
	}
	for key, e := range v.claims {
		if e.gen != v.gen {
			if err := v.snap.DeleteClaim(key.Namespace, key.Name); err != nil {
				return fmt.Errorf("ResourceClaim %s: %w", key, err)
			}
			delete(v.claims, key)
		}
	}
	return nil
}
