package fragscore

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// informerHandle is a framework handle with the scheduler's DRA manager and informer factory.
type informerHandle struct {
	fwk.Handle
	dra fwk.SharedDRAManager
	f   informers.SharedInformerFactory
}

func (h informerHandle) SharedDRAManager() fwk.SharedDRAManager                 { return h.dra }
func (h informerHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.f }

// With the scheduler's own DRA manager (built as kube-scheduler v1.37.2 builds it, on an informer
// factory), the plugin keeps its view from the informers' events: it rates no pod before its handlers
// have had the informers' objects, and then rates as the listing view does.
func TestNewFollowsTheSchedulersInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, sa := gpuNode("node-a")
	b, sb := gpuNode("node-b")
	used := shareClaim("used", 500)
	used.Status.Allocation = halfOn("node-a")
	client := fake.NewClientset(sa, sb, gpuClass(), used, shareClaim("new", 500))
	f := informers.NewSharedInformerFactory(client, 0)
	claims := assumecache.NewAssumeCache(klog.Background(), f.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	tracker, err := resourceslicetracker.StartTracker(ctx, resourceslicetracker.Options{EnableDeviceTaintRules: true,
		SliceInformer: f.Resource().V1().ResourceSlices(), TaintInformer: f.Resource().V1().DeviceTaintRules(), KubeClient: client})
	if err != nil {
		t.Fatal(err)
	}
	defer tracker.Stop()
	m := dynamicresources.NewDRAManager(ctx, claims, tracker, f)
	pl, err := New(ctx, nil, informerHandle{dra: m, f: f})
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Plugin)
	if p.view.feed == nil {
		t.Fatal("the plugin lists the DRA manager per pod, want its view kept from the informers' events")
	}
	p.args.Mix, p.mix = MixOf(wholeGPUMix), wholeGPUMix
	// The factory is not started: the handlers have nothing yet, and the view is not synced.
	if _, err := p.view.sync(m); !errors.Is(err, errNotSynced) {
		t.Fatalf("sync before the informers started: %v, want %v", err, errNotSynced)
	}
	f.Start(ctx.Done())
	// What the scheduler waits for before it schedules (its handlers, the assume cache's among them,
	// and the slice tracker), and the view's handlers.
	synced := []cache.InformerSynced{tracker.HasSynced, claims.AddEventHandler(cache.ResourceEventHandlerFuncs{}).HasSynced}
	for _, reg := range p.view.registrations {
		synced = append(synced, reg.HasSynced)
	}
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v not synced", typ)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("event handlers not synced")
	}
	if got := scores(t, p, podWith("new"), a, b); got["node-a"] != 100 || got["node-b"] != 0 {
		t.Errorf("scores %v, want node-a 100 (fills its half-used GPU), node-b 0 (breaks a whole GPU)", got)
	}
	if len(p.view.slices) != 2 || len(p.view.claims) != 1 || p.view.classes["gpu"] == nil {
		t.Errorf("view has slices %v, allocated claims %d, classes %v; want both slices, the used claim, the class", keysOf(p.view.slices), len(p.view.claims), keysOf(p.view.classes))
	}
}

// A claim waiting for its pod is quiet: a sync looks up its pending allocation only. A pod of the
// plugin's profile whose claim is reserved, written, assumed and released between two syncs (its
// binding cycle ran meanwhile) is counted at the next sync through Reserve's mark, before the
// informer's event of the write; without the mark (a pod of another profile) the view counts the
// allocation from that event, and a pending allocation seen at a sync counts at once.
func TestQuietClaimsAreReadAgainWhenReserved(t *testing.T) {
	for _, marked := range []bool{true, false} {
		w := newWorld()
		gpu := gpuClass()
		gpu.ResourceVersion = w.nextRV()
		w.classes["gpu"] = gpu
		w.view.classChanged("gpu")
		w.slices["node-0-gpu"] = w.slice("node-0", 2)
		w.view.sliceChanged("node-0-gpu")
		key := types.NamespacedName{Namespace: "default", Name: "a"}
		w.write(key, w.claim("a", nil))
		w.deliverTracker()
		w.deliverView()
		sync := func() {
			t.Helper()
			if _, err := w.view.sync(nil); err != nil {
				t.Fatal(err)
			}
		}
		sync()
		if _, ok := w.view.quiet[key]; !ok || len(w.view.watched) != 0 {
			t.Fatalf("claim waiting: quiet %v, watched %v; want it quiet", w.view.quiet, w.view.watched)
		}
		cur := w.latest[key]

		// A pending allocation seen at a sync counts.
		w.inFlight[cur.UID] = deviceOn("node-0", 0)
		sync()
		if got := len(w.view.snap.Claims("")); got != 1 {
			t.Fatalf("pending allocation: %d claims allocated in the view, want 1", got)
		}
		// Released again (Unreserve of another profile): read again, as it is watched meanwhile.
		delete(w.inFlight, cur.UID)
		sync()
		if got := len(w.view.snap.Claims("")); got != 0 {
			t.Fatalf("pending allocation released: %d claims allocated in the view, want 0", got)
		}

		// Reserve, PreBind's write and assumption, and the release, all between two syncs.
		w.inFlight[cur.UID] = deviceOn("node-0", 1)
		if marked {
			if st := (&Plugin{view: w.view}).Reserve(context.Background(), nil, podWith("a"), "node-0"); !st.IsSuccess() {
				t.Fatalf("Reserve: %v", st)
			}
		}
		c := cur.DeepCopy()
		c.ResourceVersion = w.nextRV()
		c.Status.Allocation = w.inFlight[cur.UID]
		w.write(key, c.DeepCopy())
		w.latest[key] = c
		delete(w.inFlight, cur.UID)
		sync()
		want := 0
		if marked {
			want = 1
		}
		if got := len(w.view.snap.Claims("")); got != want {
			t.Errorf("marked %v: assumed between two syncs: %d claims allocated in the view, want %d", marked, got, want)
		}
		// The informer's event of the write closes the gap either way.
		w.deliverTracker()
		w.deliverView()
		sync()
		if got := len(w.view.snap.Claims("")); got != 1 {
			t.Errorf("marked %v: after the informer's event: %d claims allocated in the view, want 1", marked, got)
		}
		if len(w.view.quiet) != 0 || len(w.view.watched) != 0 {
			t.Errorf("marked %v: allocated and agreed: quiet %v, watched %v; want neither", marked, w.view.quiet, w.view.watched)
		}
	}
}
