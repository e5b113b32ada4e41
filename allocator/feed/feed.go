package feed

import (
	"fmt"
	"reflect"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/dralloc/dralloc/allocator/pods"
)

// Options configure a [Feed]. The zero value reports nothing beyond the counts of [Feed.Stats].
type Options struct {
	// OnError is called with every event the Feed could not apply: an object the Cluster refused, an
	// object of a kind the Feed does not know, a tombstone without an object. It may be called from
	// several informers' goroutines at once.
	OnError func(err error)
}

// Feed applies informer events to a Cluster. It has client-go's ResourceEventHandler method set; see
// the package documentation.
type Feed struct {
	c    *pods.Cluster
	opts Options

	mu       sync.Mutex
	versions map[objectKey]uint64 // the newest resourceVersion applied, per object
	stats    Stats
}

// Stats counts the events a Feed applied, dropped as older than what it holds, and failed on.
type Stats struct {
	Applied, Stale, Failed map[string]int // by kind
}

type objectKey struct{ kind, namespace, name string }

// New returns a Feed that writes into c.
func New(c *pods.Cluster, opts Options) *Feed {
	return &Feed{c: c, opts: opts, versions: map[objectKey]uint64{},
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
	switch o := obj.(type) {
	case *resourceapi.ResourceSlice:
		return f.step("ResourceSlice", o, del, func() error { return snap.AddOrUpdateSlice(o) }, func() error { return snap.DeleteSlice(o.Name) })
	case *resourceapi.DeviceClass:
		return f.step("DeviceClass", o, del, func() error { return snap.AddOrUpdateClass(o) }, func() error { return snap.DeleteClass(o.Name) })
	case *resourceapi.ResourceClaim:
		return f.step("ResourceClaim", o, del, func() error { return snap.AddOrUpdateClaim(o) }, func() error { return snap.DeleteClaim(o.Namespace, o.Name) })
	case *resourceapi.DeviceTaintRule:
		return f.step("DeviceTaintRule", o, del, func() error { return snap.AddOrUpdateTaintRule(o) }, func() error { return snap.DeleteTaintRule(o.Name) })
	case *v1.Node:
		return f.step("Node", o, del, func() error { return snap.AddOrUpdateNode(o) }, func() error { return snap.DeleteNode(o.Name) })
	case *resourceapi.ResourceClaimTemplate:
		return f.step("ResourceClaimTemplate", o, del, func() error { return f.c.AddOrUpdateTemplate(o) }, func() error { f.c.DeleteTemplate(o.Namespace, o.Name); return nil })
	case *schedulingapi.PodGroup:
		return f.step("PodGroup", o, del, func() error { return f.c.AddOrUpdatePodGroup(o) }, func() error { f.c.DeletePodGroup(o.Namespace, o.Name); return nil })
	case nil:
		return "", fmt.Errorf("nil object")
	}
	return "", fmt.Errorf("object of type %T: not a kind the feed reads", obj)
}

// step applies one object of a kind unless it is older than the version applied last; a delete
// forgets the object's version, so that a later create with any version is applied.
func (f *Feed) step(kind string, obj any, del bool, add, remove func() error) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return kind, fmt.Errorf("%s: %w", kind, err)
	}
	key := objectKey{kind: kind, namespace: m.GetNamespace(), name: m.GetName()}
	name := kind + " " + m.GetName()
	if key.namespace != "" {
		name = kind + " " + key.namespace + "/" + key.name
	}
	rv, versioned := parseVersion(m.GetResourceVersion())
	// The check and the write are one step per object: two informers never deliver one object, but a
	// resync may race an update of the same informer's handler only through this lock.
	f.mu.Lock()
	defer f.mu.Unlock()
	if del {
		if err := remove(); err != nil {
			return kind, fmt.Errorf("delete %s: %w", name, err)
		}
		delete(f.versions, key)
		return kind, nil
	}
	if last, seen := f.versions[key]; versioned && seen && rv < last {
		f.stats.Stale[kind]++
		return "", nil
	}
	if err := add(); err != nil {
		return kind, fmt.Errorf("%s: %w", name, err)
	}
	if versioned {
		f.versions[key] = rv
	}
	return kind, nil
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
