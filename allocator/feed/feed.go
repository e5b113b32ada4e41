package feed

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// Options configure a [Feed]. The zero value reports nothing beyond the counts of [Feed.Stats].
type Options struct {
	// OnError is called with every event the Feed could not apply: an object the Cluster refused, an
	// object of a kind the Feed does not know, a tombstone without an object. It may be called from
	// several informers' goroutines at once.
	OnError func(err error)
	// EnforceQuota makes the Feed read ResourceQuotas (core/v1) too and keep the snapshot's quota
	// ([allocator.Snapshot.SetQuota]) the one they declare for devices, as
	// [allocator.QuotaFromResourceQuotas] reads them with the snapshot's DeviceClasses, after every
	// change of a ResourceQuota or a DeviceClass. Without it a ResourceQuota is a kind the Feed does not
	// know.
	EnforceQuota bool
}

// Feed applies informer events to a Cluster. It has client-go's ResourceEventHandler method set; see
// the package documentation.
type Feed struct {
	c    *pods.Cluster
	opts Options

	mu       sync.Mutex
	versions map[objectKey]uint64 // the newest resourceVersion applied, per object
	stats    Stats
	// quotas are the ResourceQuotas applied, with Options.EnforceQuota; guarded by mu.
	quotas map[objectKey]*v1.ResourceQuota
}

// Stats counts the events a Feed applied, dropped as not newer than what it holds (Stale: resyncs and
// re-lists included), and failed on.
type Stats struct {
	Applied, Stale, Failed map[string]int // by kind
}

type objectKey struct{ kind, namespace, name string }

// New returns a Feed that writes into c.
func New(c *pods.Cluster, opts Options) *Feed {
	return &Feed{c: c, opts: opts, versions: map[objectKey]uint64{}, quotas: map[objectKey]*v1.ResourceQuota{},
		stats: Stats{Applied: map[string]int{}, Stale: map[string]int{}, Failed: map[string]int{}}}
}

// OnAdd applies an object the informer added (or listed); isInInitialList is not needed.
func (f *Feed) OnAdd(obj any, isInInitialList bool) { f.apply(obj, false) }

// OnUpdate applies the new version of an object; the old one is not needed.
func (f *Feed) OnUpdate(oldObj, newObj any) { f.apply(newObj, false) }

// OnDelete removes an object, given as the object or as a tombstone holding it.
func (f *Feed) OnDelete(obj any) {
	if inner, ok := tombstone(obj); ok {
		if inner == nil {
			f.fail("", fmt.Errorf("delete: tombstone %v without an object", obj))
			return
		}
		obj = inner
	}
	f.apply(obj, true)
}

// Stats returns a copy of the counts so far.
func (f *Feed) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := Stats{Applied: map[string]int{}, Stale: map[string]int{}, Failed: map[string]int{}}
	for k, v := range f.stats.Applied {
		out.Applied[k] = v
	}
	for k, v := range f.stats.Stale {
		out.Stale[k] = v
	}
	for k, v := range f.stats.Failed {
		out.Failed[k] = v
	}
	return out
}

// tombstone recognises client-go's cache.DeletedFinalStateUnknown by its shape (a struct, or a pointer to
// one, with a string field Key and a field Obj) and returns the object it holds.
func tombstone(obj any) (any, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	key, inner := v.FieldByName("Key"), v.FieldByName("Obj")
	if !key.IsValid() || key.Kind() != reflect.String || !inner.IsValid() || !inner.CanInterface() {
		return nil, false
	}
	if inner.Kind() == reflect.Interface && inner.IsNil() {
		return nil, true
	}
	return inner.Interface(), true
}

// apply writes or deletes one object.
func (f *Feed) apply(obj any, del bool) {
	kind, err := f.write(obj, del)
	if err != nil {
		f.fail(kind, err)
		return
	}
	if kind != "" {
		f.mu.Lock()
		f.stats.Applied[kind]++
		f.mu.Unlock()
	}
}

func (f *Feed) fail(kind string, err error) {
	f.mu.Lock()
	f.stats.Failed[kind]++
	f.mu.Unlock()
	if f.opts.OnError != nil {
		f.opts.OnError(err)
	}
}

// write applies obj to the Cluster; kind is empty for an event the Feed dropped as stale.
func (f *Feed) write(obj any, del bool) (kind string, err error) {
	snap := f.c.Snapshot()
	var o op
	switch x := obj.(type) {
	case *resourceapi.ResourceSlice:
		o = op{"ResourceSlice", func() error { return snap.AddOrUpdateSlice(x) }, func() error { return snap.DeleteSlice(x.Name) }, nil}
	case *resourceapi.DeviceClass:
		o = op{"DeviceClass", func() error { return f.classChanged(snap.AddOrUpdateClass(x)) }, func() error { return f.classChanged(snap.DeleteClass(x.Name)) }, nil}
	case *resourceapi.ResourceClaim:
		o = op{"ResourceClaim", func() error { return snap.AddOrUpdateClaim(x) }, func() error { return snap.DeleteClaim(x.Namespace, x.Name) },
			func() string {
				if held, ok := snap.Claim(x.Namespace, x.Name); ok {
					return held.ResourceVersion
				}
				return ""
			}}
	case *resourceapi.DeviceTaintRule:
		o = op{"DeviceTaintRule", func() error { return snap.AddOrUpdateTaintRule(x) }, func() error { return snap.DeleteTaintRule(x.Name) }, nil}
	case *v1.Node:
		o = op{"Node", func() error { return snap.AddOrUpdateNode(x) }, func() error { return snap.DeleteNode(x.Name) }, nil}
	case *resourceapi.ResourceClaimTemplate:
		o = op{"ResourceClaimTemplate", func() error { return f.c.AddOrUpdateTemplate(x) }, func() error { f.c.DeleteTemplate(x.Namespace, x.Name); return nil }, nil}
	case *schedulingapi.PodGroup:
		o = op{"PodGroup", func() error { return f.c.AddOrUpdatePodGroup(x) }, func() error { f.c.DeletePodGroup(x.Namespace, x.Name); return nil }, nil}
	case *v1.ResourceQuota:
		if !f.opts.EnforceQuota {
			return "", fmt.Errorf("object of type %T: not a kind the feed reads without Options.EnforceQuota", obj)
		}
		key := objectKey{"ResourceQuota", x.Namespace, x.Name}
		o = op{"ResourceQuota",
			func() error { f.quotas[key] = x; return f.setQuota() },
			func() error { delete(f.quotas, key); return f.setQuota() }, nil}
	case nil:
		return "", fmt.Errorf("nil object")
	default:
		return "", fmt.Errorf("object of type %T: not a kind the feed reads", obj)
	}
	// A typed nil (a *v1.Node that is nil, or a tombstone holding one) passes the type switch; every
	// case above is a pointer type.
	if reflect.ValueOf(obj).IsNil() {
		return o.kind, fmt.Errorf("%s: nil object (%T)", o.kind, obj)
	}
	return f.step(o, obj, del)
}

// classChanged follows a DeviceClass change that succeeded (err nil) with the quota it may change (a
// class's extendedResourceName names the quota key that limits it). The caller holds mu.
func (f *Feed) classChanged(err error) error {
	if err != nil || !f.opts.EnforceQuota {
		return err
	}
	return f.setQuota()
}

// setQuota gives the snapshot the quota of the ResourceQuotas held. The caller holds mu.
func (f *Feed) setQuota() error {
	quotas := make([]*v1.ResourceQuota, 0, len(f.quotas))
	for _, q := range f.quotas {
		quotas = append(quotas, q)
	}
	// A deterministic order of limits: by namespace and name.
	slices.SortFunc(quotas, func(a, b *v1.ResourceQuota) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	snap := f.c.Snapshot()
	q, err := allocator.QuotaFromResourceQuotas(quotas, snap.Classes())
	if err != nil {
		return err
	}
	return snap.SetQuota(q)
}

// op is what the Feed does with the objects of one kind.
type op struct {
	kind        string
	add, remove func() error
	// held returns the resourceVersion of the object the Cluster holds now, whoever wrote it: nil for
	// the kinds only the Feed writes. Claims are also written by Cluster.Assume and Cluster.Remove,
	// whose copies keep the resourceVersion of the version they were derived from.
	held func() string
}

// step applies one object of a kind unless it is not newer than the version held: the one the Feed
// applied last, or for a claim the one the Cluster holds, which Assume may have written. This is
// kube-scheduler's assume cache (pkg/scheduler/util/assumecache): an informer's object replaces the
// stored one only if its resourceVersion is greater, so that a resync or a re-list, which delivers the
// version already applied, never undoes an allocation assumed on top of it; the assumed allocation
// goes when the API server's write of it (or any later change) arrives with a newer version. A delete
// forgets the object's version, so that a later create with any version is applied.
func (f *Feed) step(o op, obj any, del bool) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return o.kind, fmt.Errorf("%s: %w", o.kind, err)
	}
	key := objectKey{kind: o.kind, namespace: m.GetNamespace(), name: m.GetName()}
	name := o.kind + " " + m.GetName()
	if key.namespace != "" {
		name = o.kind + " " + key.namespace + "/" + key.name
	}
	rv, versioned := parseVersion(m.GetResourceVersion())
	// The check and the write are one step per object: two informers never deliver one object, but a
	// resync may race an update of the same informer's handler only through this lock.
	f.mu.Lock()
	defer f.mu.Unlock()
	if del {
		if err := o.remove(); err != nil {
			return o.kind, fmt.Errorf("delete %s: %w", name, err)
		}
		delete(f.versions, key)
		return o.kind, nil
	}
	if versioned && !f.newer(key, rv, o.held) {
		f.stats.Stale[o.kind]++
		return "", nil
	}
	if err := o.add(); err != nil {
		return o.kind, fmt.Errorf("%s: %w", name, err)
	}
	if versioned {
		f.versions[key] = rv
	}
	return o.kind, nil
}

// newer reports whether version rv of the object is newer than every version held of it.
func (f *Feed) newer(key objectKey, rv uint64, held func() string) bool {
	if last, seen := f.versions[key]; seen && rv <= last {
		return false
	}
	if held != nil {
		if h, ok := parseVersion(held()); ok && rv <= h {
			return false
		}
	}
	return true
}

// parseVersion reads a resourceVersion as the integer the API server (etcd's revision) writes; false
// when it is empty or not an integer, in which case no order is assumed.
func parseVersion(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
