package livescale

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/feed"
	"github.com/dralloc/dralloc/allocator/pods"
)

// stampAnnotation carries the time a claim update was sent, so that the feed's lag can be read when
// the update is applied.
const stampAnnotation = "livescale.dralloc.dev/sent"

// timedFeed is a feed.Feed that measures the time each event takes to apply and, for the stamped
// claim updates, the time from the write to the event applied.
type timedFeed struct {
	f              *feed.Feed
	events, nanos  atomic.Int64
	mu             sync.Mutex
	lags           []time.Duration
	stampedApplied atomic.Int64
}

func (t *timedFeed) timed(apply func()) {
	start := time.Now()
	apply()
	t.nanos.Add(int64(time.Since(start)))
	t.events.Add(1)
}

func (t *timedFeed) OnAdd(obj any, initial bool) { t.timed(func() { t.f.OnAdd(obj, initial) }) }
func (t *timedFeed) OnDelete(obj any)            { t.timed(func() { t.f.OnDelete(obj) }) }
func (t *timedFeed) OnUpdate(oldObj, newObj any) {
	t.timed(func() { t.f.OnUpdate(oldObj, newObj) })
	if c, ok := newObj.(*resourceapi.ResourceClaim); ok {
		if sent, err := strconv.ParseInt(c.Annotations[stampAnnotation], 10, 64); err == nil {
			lag := time.Since(time.Unix(0, sent))
			t.mu.Lock()
			t.lags = append(t.lags, lag)
			t.mu.Unlock()
			t.stampedApplied.Add(1)
		}
	}
}

// feedResult is what measureFeed measured.
type feedResult struct {
	listTime, replayTime     time.Duration // informers' initial lists; the feed applying them
	objects                  int64         // objects the feed applied from the lists
	informerHeap, feedHeap   uint64        // live heap of the informers' caches; of the Cluster
	perListedObject          time.Duration // the feed's time per listed object
	streamRate               float64       // claim updates applied per second
	perEvent                 time.Duration // the feed's time per streamed update
	lagP50, lagP99, lagMax   time.Duration // from the write sent to the update applied
	written, applied, failed int64
}

func heapNow() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// measureFeed lists the cluster into informers, then into a Cluster through a Feed (registered after
// the lists, so that the two costs are apart: client-go replays its cache to a handler added late),
// then streams claim updates for the given time and measures what the feed applies.
func measureFeed(ctx context.Context, c kubernetes.Interface, s shape, stream time.Duration) (feedResult, *pods.Cluster, error) {
	var r feedResult
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	base := heapNow()
	start := time.Now()
	factory := informers.NewSharedInformerFactory(c, 0)
	res := factory.Resource().V1()
	infs := []cache.SharedIndexInformer{res.ResourceSlices().Informer(), res.DeviceClasses().Informer(), res.ResourceClaims().Informer(),
		res.ResourceClaimTemplates().Informer(), res.DeviceTaintRules().Informer(), factory.Core().V1().Nodes().Informer()}
	factory.Start(ctx.Done())
	// The informers end with ctx, and Shutdown waits for them.
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	for _, inf := range infs {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return r, nil, fmt.Errorf("informers did not sync: %w", ctx.Err())
		}
	}
	r.listTime = time.Since(start)
	listed := heapNow()
	r.informerHeap = listed - base

	cluster := pods.New(allocator.NewSnapshot(allocator.Options{TrustAPIServer: true}), pods.Options{})
	tf := &timedFeed{f: feed.New(cluster, feed.Options{})}
	start = time.Now()
	var regs []cache.InformerSynced
	for _, inf := range infs {
		reg, err := inf.AddEventHandler(tf)
		if err != nil {
			return r, nil, err
		}
		regs = append(regs, reg.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), regs...) {
		return r, nil, fmt.Errorf("feed did not sync: %w", ctx.Err())
	}
	r.replayTime = time.Since(start)
	r.objects = tf.events.Load()
	if r.objects > 0 {
		r.perListedObject = time.Duration(tf.nanos.Load() / r.objects)
	}
	r.feedHeap = heapNow() - listed
	st := tf.f.Stats()
	want := map[string]int{"Node": s.nodes, "ResourceSlice": s.nodes, "DeviceClass": 1, "ResourceClaimTemplate": 2,
		"ResourceClaim": s.bound + (s.pending+4*sharedBy-1)/(4*sharedBy)}
	for kind, n := range want {
		if st.Applied[kind] != n {
			return r, nil, fmt.Errorf("the feed applied %d %s objects from the lists, want %d (stats %+v)", st.Applied[kind], kind, n, st)
		}
	}

	// The stream: workers patch bound claims' annotations as fast as the API server takes them.
	events0, nanos0 := tf.events.Load(), tf.nanos.Load()
	var written, failed atomic.Int64
	var next atomic.Int64
	streamCtx, stop := context.WithTimeout(ctx, stream)
	start = time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for streamCtx.Err() == nil {
				i := int(next.Add(1)-1) % s.bound
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%d"}}}`, stampAnnotation, time.Now().UnixNano())
				_, err := c.ResourceV1().ResourceClaims(namespace).Patch(streamCtx, fmt.Sprintf("bound-%05d", i), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				switch {
				case err == nil:
					written.Add(1)
				case streamCtx.Err() == nil:
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	stop()
	elapsed := time.Since(start)
	// Let the last updates arrive; an update lost would show as applied < written.
	for deadline := time.Now().Add(30 * time.Second); tf.stampedApplied.Load() < written.Load() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	r.written, r.applied, r.failed = written.Load(), tf.stampedApplied.Load(), failed.Load()
	r.streamRate = float64(r.applied) / elapsed.Seconds()
	if n := tf.events.Load() - events0; n > 0 {
		r.perEvent = time.Duration((tf.nanos.Load() - nanos0) / n)
	}
	tf.mu.Lock()
	lags := slices.Clone(tf.lags)
	tf.mu.Unlock()
	slices.Sort(lags)
	if len(lags) > 0 {
		r.lagP50, r.lagP99, r.lagMax = lags[len(lags)/2], lags[len(lags)*99/100], lags[len(lags)-1]
	}
	if r.applied < r.written {
		return r, nil, fmt.Errorf("the feed applied %d of the %d claim updates written", r.applied, r.written)
	}
	return r, cluster, nil
}
