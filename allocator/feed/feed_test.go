package feed_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/feed"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/fuzz"
)

// deletedFinalStateUnknown has the shape of client-go's tombstone.
type deletedFinalStateUnknown struct {
	Key string
	Obj any
}

func newCluster() *pods.Cluster {
	snap := allocator.NewSnapshot(allocator.Options{TrustAPIServer: true})
	return pods.New(snap, pods.Options{})
}

func withVersion[T metav1.Object](obj T, rv int) T {
	obj.SetResourceVersion(strconv.Itoa(rv))
	return obj
}

func TestFeedAppliesEvents(t *testing.T) {
	c := newCluster()
	var errs []error
	f := feed.New(c, feed.Options{OnError: func(err error) { errs = append(errs, err) }})
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}
	f.OnAdd(withVersion(node, 5), true)
	f.OnAdd(withVersion(class.DeepCopy(), 7), true)
	labelled := withVersion(class.DeepCopy(), 9)
	labelled.Labels = map[string]string{"v": "9"}
	f.OnUpdate(nil, labelled)
	// A resync or a late event of an older version changes nothing.
	older := withVersion(class.DeepCopy(), 8)
	f.OnUpdate(nil, older)
	if got := c.Snapshot().Classes(); len(got) != 1 || got[0].Labels["v"] != "9" {
		t.Fatalf("classes %v, want the version 9", got)
	}
	f.OnDelete(deletedFinalStateUnknown{Key: "gpu", Obj: labelled})
	if got := c.Snapshot().Classes(); len(got) != 0 {
		t.Fatalf("classes after a tombstone: %v", got)
	}
	f.OnDelete(&deletedFinalStateUnknown{Key: "n1"})
	f.OnAdd("not an object", false)
	if len(errs) != 2 {
		t.Fatalf("errors %v, want two (tombstone without object, unknown kind)", errs)
	}
	st := f.Stats()
	if st.Applied["DeviceClass"] != 3 || st.Stale["DeviceClass"] != 1 || st.Applied["Node"] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// An object the Cluster refuses is reported, and the feed goes on.
func TestFeedReportsRefusedObjects(t *testing.T) {
	snap := allocator.NewSnapshot(allocator.Options{}) // validating
	c := pods.New(snap, pods.Options{})
	var errs []error
	f := feed.New(c, feed.Options{OnError: func(err error) { errs = append(errs, err) }})
	bad := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"}}
	f.OnAdd(bad, false)
	f.OnAdd(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}, false)
	if len(errs) != 1 || !errors.Is(errs[0], allocator.ErrInvalidInput) {
		t.Fatalf("errors %v, want one input error", errs)
	}
	if got := snap.Classes(); len(got) != 1 || got[0].Name != "gpu" {
		t.Fatalf("classes %v", got)
	}
}

// event is one informer delivery.
type event struct {
	kind int // 0 add, 1 update, 2 delete, 3 delete by tombstone
	obj  metav1.Object
}

// Every object of a generated cluster goes through a history of versions delivered out of order
// (stale versions after newer ones, resyncs repeating versions), and some objects are deleted, by
// tombstone or not. The fed Cluster then answers as one loaded with the surviving objects' newest
// versions: the same claims, classes, nodes, and the same Fits on every node for the pending claims.
func TestPropFeedEqualsLoadedCluster(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		var objs []metav1.Object
		for _, s := range c.Slices {
			objs = append(objs, s)
		}
		for _, o := range c.Classes {
			objs = append(objs, o)
		}
		for _, o := range c.TaintRules {
			objs = append(objs, o)
		}
		for _, o := range c.Allocated {
			objs = append(objs, o)
		}
		for _, o := range c.Nodes {
			objs = append(objs, o)
		}
		var events []event
		var kept []metav1.Object
		rv := 0
		for i, o := range objs {
			n := rapid.IntRange(1, 3).Draw(t, "versions")
			var last metav1.Object
			for v := range n {
				rv++
				cp := reflect.ValueOf(o).MethodByName("DeepCopy").Call(nil)[0].Interface().(metav1.Object)
				cp.SetResourceVersion(strconv.Itoa(rv))
				cp.SetAnnotations(map[string]string{"example.com/version": fmt.Sprint(v)})
				kind := 1
				if v == 0 {
					kind = 0
				}
				events = append(events, event{kind: kind, obj: cp})
				last = cp
			}
			switch rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("fate-%d", i)) {
			case 0:
				events = append(events, event{kind: 2, obj: last})
			case 1:
				events = append(events, event{kind: 3, obj: last})
			default:
				kept = append(kept, last)
			}
		}
		// Deliver: per object in order (as one informer does), objects interleaved, with repeats.
		byObject := map[string][]event{}
		var keys []string
		for _, e := range events {
			k := fmt.Sprintf("%T/%s/%s", e.obj, e.obj.GetNamespace(), e.obj.GetName())
			if _, ok := byObject[k]; !ok {
				keys = append(keys, k)
			}
			byObject[k] = append(byObject[k], e)
		}
		fed := newCluster()
		var errs []error
		f := feed.New(fed, feed.Options{OnError: func(err error) { errs = append(errs, err) }})
		next := map[string]int{}
		for len(keys) > 0 {
			i := rapid.IntRange(0, len(keys)-1).Draw(t, "informer")
			k := keys[i]
			e := byObject[k][next[k]]
			switch e.kind {
			case 0:
				f.OnAdd(e.obj, false)
			case 1:
				f.OnUpdate(nil, e.obj)
			case 2:
				f.OnDelete(e.obj)
			case 3:
				f.OnDelete(deletedFinalStateUnknown{Key: k, Obj: e.obj})
			}
			if e.kind < 2 && rapid.IntRange(0, 2).Draw(t, "again") == 0 {
				// A resync delivers the version again; a late event delivers the one before.
				again := e.obj
				if next[k] > 0 && rapid.Bool().Draw(t, "stale") {
					again = byObject[k][next[k]-1].obj
				}
				f.OnUpdate(nil, again)
			}
			if next[k]++; next[k] == len(byObject[k]) {
				keys = slices.Delete(keys, i, i+1)
			}
		}
		if len(errs) > 0 {
			t.Fatalf("feed errors: %v", errs)
		}
		loaded := newCluster()
		for _, o := range kept {
			f2 := feed.New(loaded, feed.Options{OnError: func(err error) { t.Fatal(err) }})
			f2.OnAdd(o, true)
		}
		compare(t, c, fed.Snapshot(), loaded.Snapshot())
	})
}

func compare(t *rapid.T, c *fuzz.Cluster, a, b *allocator.Snapshot) {
	names := func(s *allocator.Snapshot) []string {
		var out []string
		for _, x := range s.Claims("") {
			out = append(out, "claim "+x.Name+" "+x.Annotations["example.com/version"])
		}
		for _, x := range s.Classes() {
			out = append(out, "class "+x.Name+" "+x.Annotations["example.com/version"])
		}
		for _, x := range s.Nodes() {
			out = append(out, "node "+x.Name+" "+x.Annotations["example.com/version"])
		}
		slices.Sort(out)
		return out
	}
	if x, y := names(a), names(b); !slices.Equal(x, y) {
		t.Fatalf("fed %v, loaded %v", x, y)
	}
	ctx := context.Background()
	for _, n := range b.Nodes() {
		fa, ea := a.Fits(ctx, n, c.Claims)
		fb, eb := b.Fits(ctx, n, c.Claims)
		if fa != fb || (ea == nil) != (eb == nil) {
			t.Fatalf("node %s: fed fits %v (%v), loaded fits %v (%v)", n.Name, fa, ea, fb, eb)
		}
	}
}
