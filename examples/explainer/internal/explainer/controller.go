package explainer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/feed"
	"github.com/dralloc/dralloc/allocator/pods"
)

// Config configures a [Controller]. Client is required; the zero value of every other field is the
// default.
type Config struct {
	Client kubernetes.Interface
	// Recorder configures the Events (and the condition).
	Recorder RecorderOptions
	// Workers is how many pods are explained at once; 0 means 2.
	Workers int
	// ExplainTimeout bounds one explanation; 0 means 10 seconds.
	ExplainTimeout time.Duration
	// Requeue is how often, at most, every pending DRA pod is explained again after the cluster's DRA
	// objects changed; 0 means 5 seconds.
	Requeue time.Duration
	// Resync is the informers' resync period; 0 means none.
	Resync time.Duration
	// Pods configures the Cluster the pods are explained on (its predicates, the suffix of generated
	// claim names); the zero value is the default.
	Pods pods.Options
	// WaitGrace is how long a pod may wait for an object its explanation needs (a ResourceClaim, a
	// ResourceClaimTemplate, a PodGroup) before the wait is recorded; 0 means 10 seconds. Informers
	// deliver each kind on its own, so a pod is often seen before the claim created just before it; as
	// kube-scheduler holds such a pod back from scheduling without an Event (the DRA plugin's
	// PreEnqueue), the explainer records the wait only once it lasts.
	WaitGrace time.Duration
	// Observe, when set, is called after each pod is processed (for logs and tests).
	Observe func(pod *v1.Pod, res Result, out Outcome, err error)
	// EnforceQuota makes the explanations apply the devices' quota the cluster's ResourceQuotas
	// declare (an informer on them feeds [feed.Options.EnforceQuota]): a pod whose claims fit a node
	// but not their namespace's quota is explained by the limit, what the namespace holds and what the
	// claims ask for (reason [ReasonQuotaExceeded]), and pods are explained again when a ResourceQuota
	// changes. Off, quota is not looked at, as kube-scheduler v1.37.2 does not: ResourceQuota is
	// charged when a claim is created (admission), and the DRA plugin allocates the claims of a pending
	// pod, which were admitted, whatever the quota says now. It is for clusters whose placement also
	// applies quota (dralloc's pods layer under a quota); it needs list and watch on resourcequotas.
	EnforceQuota bool
}

// Controller explains unschedulable DRA pods. Create it with [NewController]; [Controller.Start]
// starts the informers (on every replica, so that a new leader has warm caches) and
// [Controller.Run] the workers (on the leader).
type Controller struct {
	cfg      Config
	cluster  *pods.Cluster
	feed     *feed.Feed
	recorder *Recorder
	metrics  *Metrics
	logger   klog.Logger

	factory, podFactory informers.SharedInformerFactory
	podLister           corelisters.PodLister
	synced              []cache.InformerSynced
	watched             []*listWatch
	ready               atomic.Bool
	changed             atomic.Bool
	// draEvents has the pending pods that an event of a DRA object concerns explained again.
	draEvents cache.ResourceEventHandler
	queue     workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	waiting map[string]time.Time // since when a pod's explanation is ReasonWaitingForObject, by key
	uids    map[string]types.UID // the UID of the pods the recorder or the metrics hold, by key
	left    map[string]types.UID // pods that left the informer with the condition True, by key
	// quotaChanged are the namespaces whose ResourceQuotas' limits changed since the last Requeue.
	quotaChanged map[string]struct{}
}

// NewController wires the informers of every kind a Feed reads into a new Cluster, and an informer
// of the pods not bound to a node. PodGroups (scheduling.k8s.io/v1beta1) are read when the API server
// serves them, ResourceQuotas with Config.EnforceQuota.
func NewController(logger klog.Logger, cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, errors.New("explainer config: client is required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.ExplainTimeout <= 0 {
		cfg.ExplainTimeout = 10 * time.Second
	}
	if cfg.Requeue <= 0 {
		cfg.Requeue = 5 * time.Second
	}
	if cfg.WaitGrace <= 0 {
		cfg.WaitGrace = 10 * time.Second
	}
	// An informer fed snapshot: the API server validated every object already.
	snap := allocator.NewSnapshot(allocator.Options{TrustAPIServer: true})
	registerClientMetrics()
	queueMetrics := newQueueMetrics()
	c := &Controller{
		cfg:     cfg,
		cluster: pods.New(snap, cfg.Pods),
		logger:  logger,
		factory: informers.NewSharedInformerFactory(cfg.Client, cfg.Resync),
		// Only pods that wait for a node: a cluster's running pods are most of its pods.
		podFactory: informers.NewSharedInformerFactoryWithOptions(cfg.Client, cfg.Resync, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", "").String()
		})),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "dralloc-explainer", MetricsProvider: queueMetrics}),
		waiting: map[string]time.Time{},
		uids:    map[string]types.UID{},
		left:    map[string]types.UID{},

		quotaChanged: map[string]struct{}{},
	}
	c.feed = feed.New(c.cluster, feed.Options{OnError: func(err error) { logger.Error(err, "Feed refused an object") },
		EnforceQuota: cfg.EnforceQuota})
	c.recorder = NewRecorder(cfg.Client, cfg.Recorder)
	res := c.factory.Resource().V1()
	c.metrics = NewMetrics(listerSource{res.ResourceSlices().Lister(), res.DeviceClasses().Lister(), res.ResourceClaims().Lister(), res.DeviceTaintRules().Lister()})
	c.metrics.queue = queueMetrics
	infs := []cache.SharedIndexInformer{
		res.ResourceSlices().Informer(), res.DeviceClasses().Informer(), res.ResourceClaims().Informer(),
		res.ResourceClaimTemplates().Informer(), res.DeviceTaintRules().Informer(), c.factory.Core().V1().Nodes().Informer(),
	}
	if served(cfg.Client, "scheduling.k8s.io/v1beta1", "podgroups") {
		infs = append(infs, c.factory.Scheduling().V1beta1().PodGroups().Informer())
	}
	if cfg.EnforceQuota {
		// Through the Feed like the DRA kinds: a ResourceQuota added or deleted is marked as changed
		// like them; an update whose spec changed (raised or lowered) marks its namespace, one whose
		// status alone changed nothing (see concerns).
		infs = append(infs, c.factory.Core().V1().ResourceQuotas().Informer())
	}
	c.draEvents = cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.changed.Store(true) },
		UpdateFunc: c.updated,
		DeleteFunc: func(any) { c.changed.Store(true) },
	}
	podInf := c.podFactory.Core().V1().Pods()
	for _, inf := range append(infs, podInf.Informer()) {
		lw, err := watchInformer(inf)
		if err != nil {
			return nil, err
		}
		c.watched = append(c.watched, lw)
	}
	for _, inf := range infs {
		reg, err := inf.AddEventHandler(c.feed)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(c.draEvents); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	c.podLister = podInf.Lister()
	reg, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(obj) },
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: func(obj any) {
			c.leaving(obj)
			c.enqueue(obj)
		},
	})
	if err != nil {
		return nil, err
	}
	c.synced = append(c.synced, reg.HasSynced)
	return c, nil
}

// served reports whether the API server serves the resource; a discovery error counts as not served.
func served(client kubernetes.Interface, groupVersion, resource string) bool {
	list, err := client.Discovery().ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}

// Cluster is the Cluster the informers feed.
func (c *Controller) Cluster() *pods.Cluster { return c.cluster }

// Metrics are the controller's metrics.
func (c *Controller) Metrics() *Metrics { return c.metrics }

// Ready reports whether every informer has listed once.
func (c *Controller) Ready() bool { return c.ready.Load() }

// Listing is nil while the informers work: every one listed once, and none failed to list or watch
// since it last synced. It says which failed and why (a Forbidden list when the ServiceAccount's role
// lacks a resource).
func (c *Controller) Listing() error {
	for _, lw := range c.watched {
		if err := lw.Err(); err != nil {
			return err
		}
	}
	if !c.ready.Load() {
		return errors.New("informers have not listed yet")
	}
	return nil
}

// Start starts the informers and waits, until ctx ends, for their first lists.
func (c *Controller) Start(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	c.podFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("informers did not sync: %w", context.Cause(ctx))
	}
	c.ready.Store(true)
	return nil
}

// Shutdown stops the work queue and waits for the informers to end (after ctx of Start ended).
func (c *Controller) Shutdown() {
	c.queue.ShutDown()
	c.factory.Shutdown()
	c.podFactory.Shutdown()
}

// Run explains pods until ctx ends; call it after Start.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	// A change of a DRA object that may change every pending pod's explanation (see updated) has
	// them looked at again at most once per Requeue, and so has a change of a namespace's quota the
	// pods of the namespace.
	wg.Go(func() { wait.Until(c.requeueChanged, c.cfg.Requeue, ctx.Done()) })
	c.enqueueAll()
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.queue.Add(key)
}

// leaving notes a pod that leaves the informer with the condition: kube-scheduler bound it (the
// informer lists only pods without a node) or it was deleted. Its condition is resolved when its key is
// synced, from the pod the API server has then.
func (c *Controller) leaving(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok || pod == nil || !hasCondition(pod) {
		return
	}
	c.mu.Lock()
	c.left[podKey(pod)] = pod.UID
	c.mu.Unlock()
}

// resolveLeft resolves the condition of a pod that left the informer.
func (c *Controller) resolveLeft(ctx context.Context, key string) error {
	c.mu.Lock()
	uid, ok := c.left[key]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	if err := c.recorder.Resolve(ctx, ns, name, uid, ""); err != nil {
		return err
	}
	c.mu.Lock()
	if c.left[key] == uid {
		delete(c.left, key)
	}
	c.mu.Unlock()
	return nil
}

// resolve sets the pod's condition False when it is True (or Scheduled on a bound pod).
func (c *Controller) resolve(ctx context.Context, pod *v1.Pod, reason string) error {
	if !toResolve(pod) {
		return nil
	}
	return c.recorder.Resolve(ctx, pod.Namespace, pod.Name, pod.UID, reason)
}

func hasCondition(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == ConditionType {
			return true
		}
	}
	return false
}

// requeueChanged queues the pending pods that the changes since its last call may concern: every one
// after a change marked as concerning all, else those of the namespaces whose quota changed.
func (c *Controller) requeueChanged() {
	c.mu.Lock()
	namespaces := c.quotaChanged
	c.quotaChanged = map[string]struct{}{}
	c.mu.Unlock()
	if c.changed.Swap(false) {
		c.enqueueAll()
		return
	}
	for ns := range namespaces {
		c.enqueueNamespace(ns)
	}
}

func (c *Controller) enqueueAll() {
	list, err := c.podLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range list {
		if Unschedulable(p) {
			c.queue.Add(podKey(p))
		}
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	retry, err := c.sync(ctx, key)
	switch {
	case err != nil:
		c.logger.Error(err, "Explaining pod failed", "pod", key)
		c.queue.AddRateLimited(key)
	case retry > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, retry)
	default:
		c.queue.Forget(key)
	}
	return true
}

// sync explains one pod; a positive retry is when to look again.
func (c *Controller) sync(ctx context.Context, key string) (retry time.Duration, err error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return 0, c.resolveLeft(ctx, key)
	}
	if err != nil {
		return 0, err
	}
	snap := c.cluster.Snapshot()
	if !Unschedulable(pod) || !UsesDRA(pod, snap.Classes(), snap.Nodes()) {
		c.forget(key)
		return 0, c.resolve(ctx, pod, "")
	}
	c.mu.Lock()
	if prev, ok := c.uids[key]; ok && prev != pod.UID {
		c.recorder.Forget(ns, name, prev) // a new pod with the name of a deleted one
	}
	c.uids[key] = pod.UID
	c.mu.Unlock()

	ectx, cancel := context.WithTimeout(ctx, c.cfg.ExplainTimeout)
	start := time.Now()
	res, err := explainOrWait(ectx, c.cluster, pod)
	c.metrics.Latency.Observe(time.Since(start).Seconds())
	cancel()
	if err != nil {
		c.metrics.Records.WithLabelValues("failed").Inc()
		c.observe(pod, res, 0, err)
		return 0, err
	}
	c.metrics.SetPending(key, res.Reason)
	if left := c.waitLeft(key, res); left > 0 {
		c.metrics.Records.WithLabelValues(Deferred.String()).Inc()
		c.observe(pod, res, Deferred, nil)
		return left, nil
	}
	if res.Fits {
		c.metrics.Records.WithLabelValues("fits").Inc()
		c.logger.V(4).Info("Pod fits by dralloc's answer; nothing recorded", "pod", key, "explanation", res.Message)
		err := c.resolve(ctx, pod, ConditionReasonFits)
		c.observe(pod, res, Unchanged, err)
		return 0, err
	}
	out, retry, err := c.recorder.Record(ctx, pod, res)
	if err != nil {
		c.metrics.Records.WithLabelValues("failed").Inc()
		c.observe(pod, res, out, err)
		return 0, err
	}
	c.metrics.Records.WithLabelValues(out.String()).Inc()
	if out == Written {
		c.logger.V(2).Info("Recorded explanation", "pod", key, "reason", res.Reason, "message", res.Message)
	}
	c.observe(pod, res, out, nil)
	return retry, nil
}

// explainOrWait is Explain, with the claims the pod waits for (not created yet, or held by others) as
// the explanation: kube-scheduler waits for them too, and says so in its own message.
func explainOrWait(ctx context.Context, cluster *pods.Cluster, pod *v1.Pod) (Result, error) {
	res, err := Explain(ctx, cluster, pod)
	switch {
	case errors.Is(err, pods.ErrClaimNotFound), errors.Is(err, pods.ErrTemplateNotFound), errors.Is(err, pods.ErrPodGroupNotFound):
		return Result{Message: err.Error(), Reason: ReasonWaitingForObject}, nil
	case errors.Is(err, pods.ErrClaimNotUsable):
		return Result{Message: err.Error(), Reason: ReasonClaimNotUsable}, nil
	}
	return res, err
}

// waitLeft is how much longer a pod waiting for an object is left unrecorded (Config.WaitGrace from
// the first explanation that found it waiting); 0 once the grace is over or the pod waits no more.
func (c *Controller) waitLeft(key string, res Result) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if res.Reason != ReasonWaitingForObject {
		delete(c.waiting, key)
		return 0
	}
	now := c.now()
	since, ok := c.waiting[key]
	if !ok {
		since = now
		c.waiting[key] = now
	}
	return max(c.cfg.WaitGrace-now.Sub(since), 0)
}

// now is the recorder's clock, which tests may set.
func (c *Controller) now() time.Time {
	if c.cfg.Recorder.Clock != nil {
		return c.cfg.Recorder.Clock.Now()
	}
	return time.Now()
}

func (c *Controller) observe(pod *v1.Pod, res Result, out Outcome, err error) {
	if c.cfg.Observe != nil {
		c.cfg.Observe(pod, res, out, err)
	}
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	uid, ok := c.uids[key]
	delete(c.uids, key)
	delete(c.waiting, key)
	c.mu.Unlock()
	if ok {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		c.recorder.Forget(ns, name, uid)
		c.metrics.SetPending(key, "")
	}
}

// listerSource reads the device metrics' objects from the informers' caches.
type listerSource struct {
	slices  resourcelisters.ResourceSliceLister
	classes resourcelisters.DeviceClassLister
	claims  resourcelisters.ResourceClaimLister
	rules   resourcelisters.DeviceTaintRuleLister
}

func (l listerSource) Slices() ([]*resourceapi.ResourceSlice, error) {
	return l.slices.List(labels.Everything())
}
func (l listerSource) Classes() ([]*resourceapi.DeviceClass, error) {
	return l.classes.List(labels.Everything())
}
func (l listerSource) Claims() ([]*resourceapi.ResourceClaim, error) {
	return l.claims.List(labels.Everything())
}
func (l listerSource) TaintRules() ([]*resourceapi.DeviceTaintRule, error) {
	return l.rules.List(labels.Everything())
}
