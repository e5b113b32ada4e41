package fragscore

import (
	"context"
	"errors"
	"testing"

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
