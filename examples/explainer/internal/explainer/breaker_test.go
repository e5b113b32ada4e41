package explainer

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcore "k8s.io/client-go/kubernetes/typed/core/v1"
	typedresource "k8s.io/client-go/kubernetes/typed/resource/v1"
)

// breaker breaks the watches of a client the way a compacted etcd does: Freeze drops the events of
// every open watch (a connection that lost them), Break ends every watch with the API server's
// "410 Gone: too old resource version" error, on which a reflector lists again and its DeltaFIFO
// delivers an object missing from the new list as a tombstone (cache.DeletedFinalStateUnknown).
type breaker struct {
	mu       sync.Mutex
	dropping bool
	open     map[*proxyWatch]struct{}
}

func newBreaker() *breaker { return &breaker{open: map[*proxyWatch]struct{}{}} }

// Freeze drops every event from now on until Break.
func (b *breaker) Freeze() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropping = true
}

// Break ends every open watch with 410 Gone and stops dropping events.
func (b *breaker) Break() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropping = false
	for w := range b.open {
		// An event of the old connection that arrives now is lost with it.
		w.dead.Store(true)
		w.breakOnce.Do(func() { close(w.broken) })
	}
	clear(b.open)
}

func (b *breaker) drop() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropping
}

func (b *breaker) wrap(inner watch.Interface, err error) (watch.Interface, error) {
	if err != nil {
		return nil, err
	}
	w := &proxyWatch{inner: inner, out: make(chan watch.Event), done: make(chan struct{}), broken: make(chan struct{})}
	b.mu.Lock()
	b.open[w] = struct{}{}
	b.mu.Unlock()
	go w.run(b)
	return w, nil
}

type proxyWatch struct {
	inner     watch.Interface
	out       chan watch.Event
	done      chan struct{}
	broken    chan struct{}
	dead      atomic.Bool
	stopOnce  sync.Once
	breakOnce sync.Once
}

func (w *proxyWatch) run(b *breaker) {
	defer close(w.out)
	defer w.inner.Stop()
	defer func() {
		b.mu.Lock()
		delete(b.open, w)
		b.mu.Unlock()
	}()
	broken := w.broken // Break closes it; the loop replaces its own copy
	for {
		select {
		case <-w.done:
			return
		case <-broken:
			gone := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
				Message: "too old resource version (the test broke the watch)"}
			select {
			case w.out <- watch.Event{Type: watch.Error, Object: gone}:
			case <-w.done:
			}
			return
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			if (w.dead.Load() || b.drop()) && ev.Type != watch.Bookmark {
				continue
			}
			select {
			case w.out <- ev:
			case <-w.done:
				return
			case <-broken:
				// The event is lost with the connection; the next loop reports the break.
				broken = closedChan
			}
		}
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (w *proxyWatch) Stop()                          { w.stopOnce.Do(func() { close(w.done) }) }
func (w *proxyWatch) ResultChan() <-chan watch.Event { return w.out }

// breakingClient is a clientset whose watches of the kinds the Feed reads go through a breaker.
type breakingClient struct {
	kubernetes.Interface
	b *breaker
}

func (c breakingClient) ResourceV1() typedresource.ResourceV1Interface {
	return breakingResource{c.Interface.ResourceV1(), c.b}
}
func (c breakingClient) CoreV1() typedcore.CoreV1Interface {
	return breakingCore{c.Interface.CoreV1(), c.b}
}

type breakingResource struct {
	typedresource.ResourceV1Interface
	b *breaker
}

func (r breakingResource) ResourceSlices() typedresource.ResourceSliceInterface {
	return slicesW{r.ResourceV1Interface.ResourceSlices(), r.b}
}
func (r breakingResource) DeviceClasses() typedresource.DeviceClassInterface {
	return classesW{r.ResourceV1Interface.DeviceClasses(), r.b}
}
func (r breakingResource) ResourceClaims(ns string) typedresource.ResourceClaimInterface {
	return claimsW{r.ResourceV1Interface.ResourceClaims(ns), r.b}
}
func (r breakingResource) ResourceClaimTemplates(ns string) typedresource.ResourceClaimTemplateInterface {
	return templatesW{r.ResourceV1Interface.ResourceClaimTemplates(ns), r.b}
}
func (r breakingResource) DeviceTaintRules() typedresource.DeviceTaintRuleInterface {
	return rulesW{r.ResourceV1Interface.DeviceTaintRules(), r.b}
}

type breakingCore struct {
	typedcore.CoreV1Interface
	b *breaker
}

func (c breakingCore) Nodes() typedcore.NodeInterface { return nodesW{c.CoreV1Interface.Nodes(), c.b} }

type slicesW struct {
	typedresource.ResourceSliceInterface
	b *breaker
}

func (s slicesW) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.b.wrap(s.ResourceSliceInterface.Watch(ctx, o))
}

type classesW struct {
	typedresource.DeviceClassInterface
	b *breaker
}

func (s classesW) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.b.wrap(s.DeviceClassInterface.Watch(ctx, o))
}

type claimsW struct {
	typedresource.ResourceClaimInterface
	b *breaker
}

func (s claimsW) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.b.wrap(s.ResourceClaimInterface.Watch(ctx, o))
}

type templatesW struct {
	typedresource.ResourceClaimTemplateInterface
	b *breaker
}

func (s templatesW) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.b.wrap(s.ResourceClaimTemplateInterface.Watch(ctx, o))
}

type rulesW struct {
	typedresource.DeviceTaintRuleInterface
	b *breaker
}

func (s rulesW) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.b.wrap(s.DeviceTaintRuleInterface.Watch(ctx, o))
}

type nodesW struct {
	typedcore.NodeInterface
	b *breaker
}

func (s nodesW) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.b.wrap(s.NodeInterface.Watch(ctx, o))
}
