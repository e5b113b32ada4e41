package fragscore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"pgregory.net/rapid"
)

// world is a scheduler's DRA state as the incremental view meets it: the informers' stores (slices,
// classes, rules, claims), the claim tracker's assume cache and in-flight allocations, and the events
// not yet handed over, one queue for the tracker's handler and one for the view's, delivered in order
// but each at its own pace (the informer runs its handlers on separate goroutines).
type world struct {
	fwk.ResourceClaimTracker // nil: a method the view must not call panics

	rv      int64
	slices  map[string]*resourceapi.ResourceSlice
	classes map[string]*resourceapi.DeviceClass
	rules   map[string]*resourceapi.DeviceTaintRule
	claims  map[types.NamespacedName]*resourceapi.ResourceClaim // the informer's store

	// The assume cache: the latest object (the informer's, or one assumed) and the informer's.
	latest, api map[types.NamespacedName]*resourceapi.ResourceClaim
	inFlight    map[types.UID]*resourceapi.AllocationResult

	toTracker, toView []claimEvent
	view              *view
}

func newWorld() *world {
	w := &world{slices: map[string]*resourceapi.ResourceSlice{}, classes: map[string]*resourceapi.DeviceClass{},
		rules: map[string]*resourceapi.DeviceTaintRule{}, claims: map[types.NamespacedName]*resourceapi.ResourceClaim{},
		latest: map[types.NamespacedName]*resourceapi.ResourceClaim{}, api: map[types.NamespacedName]*resourceapi.ResourceClaim{},
		inFlight: map[types.UID]*resourceapi.AllocationResult{}}
	w.view = newFeedView(w.feed())
	return w
}

func (w *world) feed() feed {
	return feed{
		slice:  func(name string) (*resourceapi.ResourceSlice, error) { return w.slices[name], nil },
		class:  func(name string) (*resourceapi.DeviceClass, error) { return w.classes[name], nil },
		rule:   func(name string) (*resourceapi.DeviceTaintRule, error) { return w.rules[name], nil },
		claims: w,
	}
}

func (w *world) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	if c, ok := w.latest[types.NamespacedName{Namespace: namespace, Name: name}]; ok {
		return c, nil
	}
	return nil, errors.New("not found")
}

func (w *world) List() ([]*resourceapi.ResourceClaim, error) {
	var out []*resourceapi.ResourceClaim
	for _, c := range w.latest {
		out = append(out, c)
	}
	return out, nil
}

func (w *world) GetPendingAllocation(uid types.UID) *resourceapi.AllocationResult {
	return w.inFlight[uid]
}

func (w *world) nextRV() string { w.rv++; return strconv.FormatInt(w.rv, 10) }

// write stores a claim (nil: deletes it) through the API: the informer's store changes, and its event
// is queued for both handlers.
func (w *world) write(key types.NamespacedName, c *resourceapi.ResourceClaim) {
	ev := claimEvent{obj: c}
	if c == nil {
		ev = claimEvent{obj: w.claims[key], deleted: true}
		delete(w.claims, key)
	} else {
		w.claims[key] = c
	}
	w.toTracker = append(w.toTracker, ev)
	w.toView = append(w.toView, ev)
}

// deliverTracker hands the next event to the assume cache, as assumecache.AssumeCache's handlers do:
// an object replaces the stored one (and the informer's object the cache restores) only when its
// version is newer than the stored one, an assumed one included.
func (w *world) deliverTracker() {
	ev := w.toTracker[0]
	w.toTracker = w.toTracker[1:]
	key := types.NamespacedName{Namespace: ev.obj.Namespace, Name: ev.obj.Name}
	if ev.deleted {
		delete(w.latest, key)
		delete(w.api, key)
		return
	}
	if old, ok := w.latest[key]; ok && !newerVersion(ev.obj, old) {
		return
	}
	w.latest[key], w.api[key] = ev.obj, ev.obj
}

func (w *world) deliverView() {
	ev := w.toView[0]
	w.toView = w.toView[1:]
	w.view.claimChanged(ev.obj, ev.deleted)
}

var worldNodes = []string{"node-0", "node-1", "node-2"}

func (w *world) slice(node string, devices int) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu", ResourceVersion: w.nextRV()},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, Generation: w.rv, ResourceSliceCount: 1}},
	}
	for i := range devices {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	return s
}

func (w *world) claim(name string, alloc *resourceapi.AllocationResult) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: w.nextRV()},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}}},
	}
	c.Status.Allocation = alloc
	return c
}

func deviceOn(node string, dev int) *resourceapi.AllocationResult {
	return &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: driver, Pool: node, Device: fmt.Sprintf("gpu-%d", dev)}}}}
}

// caughtUp is a copy of the world whose tracker has had the events the view's handler has had.
func (w *world) caughtUp() *world {
	c := *w
	c.latest, c.api = maps.Clone(w.latest), maps.Clone(w.api)
	c.toTracker = slices.Clone(w.toTracker[:len(w.toTracker)-len(w.toView)])
	for len(c.toTracker) > 0 {
		c.deliverTracker()
	}
	return &c
}

// fresh builds a view from nothing: every object the stores hold now, read once, and synced. Its
// claims are the tracker's, or the informer's object where that is newer: after an
// AssumedClaimRestore the assume cache holds the informer's object it had before the assumed one, even
// where the informer has since delivered the written object (assumecache.AssumeCache drops an update
// whose version is not newer than the assumed object's), and the view counts the written one.
func (w *world) fresh(t interface{ Fatalf(string, ...any) }) *view {
	f := newFeedView(w.feed())
	for name := range w.slices {
		f.sliceChanged(name)
	}
	for name := range w.classes {
		f.classChanged(name)
	}
	for name := range w.rules {
		f.ruleChanged(name)
	}
	// The informer's objects, and the tracker's where the informer has none (not there yet).
	for _, c := range w.claims {
		f.claimChanged(c, false)
	}
	claims, _ := w.List()
	for _, c := range claims {
		if _, ok := w.claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}]; !ok {
			f.claimChanged(c, false)
		}
	}
	if _, err := f.sync(nil); err != nil {
		t.Fatalf("fresh view: %v", err)
	}
	return f
}

// TestPropIncrementalViewEqualsFresh: after any sequence of adds, updates and deletes of slices,
// classes, taint rules and claims, of pending allocations signalled and removed, of allocations
// assumed and restored, with the tracker's and the view's handlers each behind the informer by any
// number of events and the view synced at any point in between, the view, once every event is
// delivered and it is synced, equals one built afresh from the same state: the same objects, the same
// claims allocated in its snapshot, and the same allocation of a probe claim on every node.
func TestPropIncrementalViewEqualsFresh(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := newWorld()
		gpu := gpuClass()
		gpu.ResourceVersion = w.nextRV()
		w.classes["gpu"] = gpu
		w.view.classChanged("gpu")
		claimNames := []string{"a", "b"}
		steps := rapid.IntRange(1, 100).Draw(rt, "steps")
		for range steps {
			node := rapid.SampledFrom(worldNodes).Draw(rt, "node")
			name := rapid.SampledFrom(claimNames).Draw(rt, "claim")
			key := types.NamespacedName{Namespace: "default", Name: name}
			cur := w.latest[key]
			switch op := rapid.IntRange(0, 13).Draw(rt, "op"); op {
			case 0, 1: // a slice published or republished
				w.slices[node+"-gpu"] = w.slice(node, rapid.IntRange(1, 3).Draw(rt, "devices"))
				w.view.sliceChanged(node + "-gpu")
			case 2: // a slice deleted
				delete(w.slices, node+"-gpu")
				w.view.sliceChanged(node + "-gpu")
			case 3: // another class, added or updated, or deleted
				if rapid.Bool().Draw(rt, "delete") {
					delete(w.classes, "other")
				} else {
					c := gpuClass()
					c.Name, c.ResourceVersion = "other", w.nextRV()
					w.classes["other"] = c
				}
				w.view.classChanged("other")
			case 4: // a taint rule on the node's pool, added or updated, or deleted
				if rapid.Bool().Draw(rt, "delete") {
					delete(w.rules, "drain")
				} else {
					pool := node
					r := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "drain", ResourceVersion: w.nextRV()}}
					r.Spec.DeviceSelector = &resourceapi.DeviceTaintSelector{Pool: &pool}
					r.Spec.Taint = resourceapi.DeviceTaint{Key: "example.com/drain", Effect: resourceapi.DeviceTaintEffectNoSchedule}
					w.rules["drain"] = r
				}
				w.view.ruleChanged("drain")
			case 5: // a claim created, or written with an allocation or without
				var alloc *resourceapi.AllocationResult
				if rapid.Bool().Draw(rt, "allocated") {
					alloc = deviceOn(node, rapid.IntRange(0, 2).Draw(rt, "device"))
				}
				w.write(key, w.claim(name, alloc))
			case 6: // a claim deleted
				if _, ok := w.claims[key]; ok {
					w.write(key, nil)
				}
			case 7: // Reserve: an allocation reserved for a claim the tracker has without one, by a pod
				// of the plugin's profile (whose Reserve marks the claim) or of another profile
				if cur != nil && cur.Status.Allocation == nil && w.inFlight[cur.UID] == nil {
					w.inFlight[cur.UID] = deviceOn(node, rapid.IntRange(0, 2).Draw(rt, "device"))
					if rapid.Bool().Draw(rt, "plugin's profile") {
						w.view.claimsReserved([]types.NamespacedName{key})
					}
				}
			case 8: // PreBind succeeded: the reservation dropped, the assumed object kept
				if cur != nil {
					delete(w.inFlight, cur.UID)
				}
			case 9: // PreBind: the allocation written and the API's answer assumed; the events follow.
				// The write succeeds only where the tracker's object is the API's (else: a conflict);
				// the scheduler writes an allocation only to a claim that has none.
				if cur != nil && cur.Status.Allocation == nil && w.inFlight[cur.UID] != nil && w.claims[key] == cur {
					c := cur.DeepCopy()
					c.ResourceVersion = w.nextRV()
					c.Status.Allocation = w.inFlight[cur.UID]
					w.write(key, c.DeepCopy()) // the informer decodes its own object
					w.latest[key] = c
				}
			case 10: // Unreserve while the reservation stands: dropped, and the assumed object taken back
				if cur != nil && w.inFlight[cur.UID] != nil {
					delete(w.inFlight, cur.UID)
					if api, ok := w.api[key]; ok {
						w.latest[key] = api
					}
					if rapid.Bool().Draw(rt, "plugin's profile") {
						w.view.claimsReserved([]types.NamespacedName{key})
					}
				}
			case 11:
				if len(w.toTracker) > 0 {
					w.deliverTracker()
				}
			case 12:
				if len(w.toView) > 0 {
					w.deliverView()
				}
			case 13:
				if _, err := w.view.sync(nil); err != nil {
					rt.Fatalf("sync: %v", err)
				}
				// Where the view's handler has had every event, the view equals a fresh one read
				// from the tracker as it will be once it has them too.
				if len(w.toView) == 0 {
					if diff := viewDiff(w.view, w.caughtUp().fresh(rt)); diff != "" {
						rt.Fatalf("after a sync, the incremental view differs from a fresh one: %s", diff)
					}
				}
			}
		}
		for len(w.toTracker) > 0 || len(w.toView) > 0 {
			if len(w.toTracker) > 0 && (len(w.toView) == 0 || rapid.Bool().Draw(rt, "tracker first")) {
				w.deliverTracker()
			} else {
				w.deliverView()
			}
		}
		if _, err := w.view.sync(nil); err != nil {
			rt.Fatalf("sync: %v", err)
		}
		if diff := viewDiff(w.view, w.fresh(rt)); diff != "" {
			rt.Fatalf("incremental view differs from a fresh one: %s", diff)
		}
	})
}

// viewDiff says how two views differ in what scoring reads: their objects, the claims allocated in
// their snapshots, and the allocation of a probe claim on each node.
func viewDiff(got, want *view) string {
	if !reflect.DeepEqual(got.slices, want.slices) {
		return fmt.Sprintf("slices %v, want %v", keysOf(got.slices), keysOf(want.slices))
	}
	if !reflect.DeepEqual(got.classes, want.classes) {
		return fmt.Sprintf("classes %v, want %v", keysOf(got.classes), keysOf(want.classes))
	}
	if !reflect.DeepEqual(got.rules, want.rules) {
		return fmt.Sprintf("rules %v, want %v", keysOf(got.rules), keysOf(want.rules))
	}
	if (got.inv == nil) != (want.inv == nil) {
		return "one inventory missing"
	}
	gc, wc := got.snap.Claims(""), want.snap.Claims("")
	if len(gc) != len(wc) {
		return fmt.Sprintf("%d claims allocated, want %d", len(gc), len(wc))
	}
	for i := range gc {
		if gc[i].Name != wc[i].Name || gc[i].ResourceVersion != wc[i].ResourceVersion || !reflect.DeepEqual(gc[i].Status.Allocation, wc[i].Status.Allocation) {
			return fmt.Sprintf("claim %s version %s allocated %v, want %s version %s allocated %v", gc[i].Name, gc[i].ResourceVersion,
				gc[i].Status.Allocation, wc[i].Name, wc[i].ResourceVersion, wc[i].Status.Allocation)
		}
	}
	probe := []*resourceapi.ResourceClaim{shareProbe()}
	for _, n := range worldNodes {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
		gr, gerr := got.snap.Allocate(context.Background(), node, probe)
		wr, werr := want.snap.Allocate(context.Background(), node, probe)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(gr, wr) {
			return fmt.Sprintf("probe on %s: %v (%v), want %v (%v)", n, gr, gerr, wr, werr)
		}
	}
	return ""
}

func shareProbe() *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe", UID: "probe"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2}}}}},
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
