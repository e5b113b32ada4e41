package explainer

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/taints"
)

// Metrics are the explainer's Prometheus metrics. Register them with [Metrics.Register].
type Metrics struct {
	// Pending is dralloc_explainer_pending_pods{reason}: pending DRA pods marked unschedulable, by
	// dominant reason.
	Pending *prometheus.GaugeVec
	// Latency is dralloc_explainer_explain_seconds: the time to explain one pod.
	Latency prometheus.Histogram
	// Records is dralloc_explainer_records_total{outcome}: what Record did (written, unchanged,
	// deferred, failed) and pods found to fit (fits); every outcome is present from the start, at 0.
	Records *prometheus.CounterVec
	// Leader is dralloc_explainer_leader: 1 while this replica explains (holds the Lease, or runs
	// without leader election), else 0.
	Leader prometheus.Gauge

	buildInfo prometheus.Gauge
	queue     *queueMetrics
	devices   *deviceCollector
	// leading gates the device gauges: only the leader exports them, so that a query summing over
	// replicas counts each device once.
	leading atomic.Bool

	mu      sync.Mutex
	reasons map[string]string // pod key → its dominant reason
}

// DeviceSource gives the objects the device counts are computed from (the informers' listers).
type DeviceSource interface {
	Slices() ([]*resourceapi.ResourceSlice, error)
	Classes() ([]*resourceapi.DeviceClass, error)
	Claims() ([]*resourceapi.ResourceClaim, error)
	TaintRules() ([]*resourceapi.DeviceTaintRule, error)
}

// Outcomes are the values of records_total's outcome label.
var outcomes = []string{Written.String(), Unchanged.String(), Deferred.String(), "failed", "fits"}

// NewMetrics returns the metrics; the device gauges read src at every scrape.
func NewMetrics(src DeviceSource) *Metrics {
	m := &Metrics{
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dralloc_explainer_pending_pods",
			Help: "Pending pods that use DRA and that kube-scheduler marked unschedulable, by dralloc's dominant reason.",
		}, []string{"reason"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dralloc_explainer_explain_seconds",
			Help:    "Time to explain one pod.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}),
		Records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dralloc_explainer_records_total",
			Help: "Explanations by outcome: written, unchanged, deferred, failed, fits.",
		}, []string{"outcome"}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dralloc_explainer_leader",
			Help: "1 while this replica explains pods (it holds the Lease), else 0.",
		}),
		buildInfo: newBuildInfo(),
		queue:     newQueueMetrics(),
		reasons:   map[string]string{},
	}
	// Present at 0 before the first of each, so that rate() and alerts see the series from the start.
	for _, o := range outcomes {
		m.Records.WithLabelValues(o)
	}
	m.devices = &deviceCollector{src: src, leading: &m.leading,
		devices: prometheus.NewDesc("dralloc_explainer_devices",
			"Devices per driver and pool by state, each device once: used (allocated to a claim), tainted (not used, with a NoSchedule or NoExecute taint), free. Exported by the leader only.",
			[]string{"driver", "pool", "state"}, nil),
		classPools: prometheus.NewDesc("dralloc_explainer_class_pool_devices",
			"Devices a DeviceClass matches, per pool and state; a device that several classes match counts in each, so do not sum over classes. Exported by the leader only.",
			[]string{"class", "driver", "pool", "state"}, nil),
		classes: prometheus.NewDesc("dralloc_explainer_class_devices",
			"Devices a DeviceClass matches over all pools, by state; every class is present, at 0 when it matches none. Exported by the leader only.",
			[]string{"class", "state"}, nil),
	}
	return m
}

// SetLeading says whether this replica explains: it sets the leader gauge and turns the device
// gauges on or off.
func (m *Metrics) SetLeading(leading bool) {
	m.leading.Store(leading)
	if leading {
		m.Leader.Set(1)
	} else {
		m.Leader.Set(0)
	}
}

// Register registers every metric with reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	cs := []prometheus.Collector{m.Pending, m.Latency, m.Records, m.Leader, m.buildInfo, m.devices, requestLatency, requestResult}
	for _, c := range append(cs, m.queue.collectors()...) {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// SetPending records the dominant reason of a pending pod; an empty reason removes the pod. A reason
// once reported stays, at 0 when no pod has it any more, rather than vanishing from the scrape.
func (m *Metrics) SetPending(key, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, had := m.reasons[key]
	if reason == "" {
		delete(m.reasons, key)
	} else {
		m.reasons[key] = reason
	}
	if had && old != reason {
		m.Pending.WithLabelValues(old).Dec()
	}
	if reason != "" && (!had || old != reason) {
		m.Pending.WithLabelValues(reason).Inc()
	}
}

// deviceCollector computes the device gauges when scraped, on the leader only.
type deviceCollector struct {
	src                          DeviceSource
	leading                      *atomic.Bool
	devices, classPools, classes *prometheus.Desc
	env                          *celenv.Env // built at the first scrape
	mu                           sync.Mutex
}

func (d *deviceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- d.devices
	ch <- d.classPools
	ch <- d.classes
}

func (d *deviceCollector) Collect(ch chan<- prometheus.Metric) {
	if !d.leading.Load() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.env == nil {
		env, err := celenv.NewEnv(celenv.Options{})
		if err != nil {
			ch <- prometheus.NewInvalidMetric(d.devices, err)
			return
		}
		d.env = env
	}
	inv, err := CountDevices(context.Background(), d.env, d.src)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(d.devices, err)
		return
	}
	emit := func(desc *prometheus.Desc, c DeviceCounts, labels ...string) {
		for _, s := range []struct {
			state string
			n     int
		}{{"used", c.Used}, {"tainted", c.Tainted}, {"free", c.Free}} {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(s.n), append(labels, s.state)...)
		}
	}
	for k, c := range inv.Devices {
		emit(d.devices, c, k.Driver, k.Pool)
	}
	for k, c := range inv.ClassPools {
		emit(d.classPools, c, k.Class, k.Driver, k.Pool)
	}
	for class, c := range inv.Classes {
		emit(d.classes, c, class)
	}
}

// PoolKey names a pool's devices, or with Class those of them the class matches.
type PoolKey struct{ Class, Driver, Pool string }

// DeviceInventory is what [CountDevices] counts.
type DeviceInventory struct {
	// Devices counts every device once, per driver and pool (Class is empty).
	Devices map[PoolKey]DeviceCounts
	// ClassPools counts the devices each class matches, per pool; a device that several classes
	// match counts in each.
	ClassPools map[PoolKey]DeviceCounts
	// Classes counts the devices each class matches over all pools; every class is present, with
	// zero counts when it matches none (or its selectors do not compile).
	Classes map[string]DeviceCounts
}

// DeviceCounts splits the devices of a class in a pool: Used are allocated to a claim, Tainted are not
// and have a taint with effect NoSchedule or NoExecute (their own or a DeviceTaintRule's), Free are the
// rest.
type DeviceCounts struct{ Used, Tainted, Free int }

// CountDevices counts the devices of the newest generation of every pool: once each per pool, and per
// class (and pool) that the class's selectors match. A selector that fails to compile or evaluate counts the device as not
// matching (the allocator would refuse the claim; the count is a gauge, not a decision).
func CountDevices(ctx context.Context, env *celenv.Env, src DeviceSource) (DeviceInventory, error) {
	slices, err := src.Slices()
	if err != nil {
		return DeviceInventory{}, err
	}
	classes, err := src.Classes()
	if err != nil {
		return DeviceInventory{}, err
	}
	claims, err := src.Claims()
	if err != nil {
		return DeviceInventory{}, err
	}
	rules, err := src.TaintRules()
	if err != nil {
		return DeviceInventory{}, err
	}
	eval, err := taints.NewEvaluator(rules)
	if err != nil {
		eval = nil // an invalid rule: count the slices' own taints only
	}
	type devKey struct{ driver, pool, device string }
	used := map[devKey]bool{}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			used[devKey{r.Driver, r.Pool, r.Device}] = true
		}
	}
	// As the allocator: only the slices of a pool's newest generation count.
	newest := map[[2]string]int64{}
	for _, s := range slices {
		k := [2]string{s.Spec.Driver, s.Spec.Pool.Name}
		if g, ok := newest[k]; !ok || s.Spec.Pool.Generation > g {
			newest[k] = s.Spec.Pool.Generation
		}
	}
	type compiled struct {
		name string
		sels []*celenv.Selector
		ok   bool
	}
	cls := make([]compiled, len(classes))
	for i, c := range classes {
		cls[i] = compiled{name: c.Name, ok: true}
		for _, s := range c.Spec.Selectors {
			if s.CEL == nil {
				continue
			}
			sel, err := env.Compile(s.CEL.Expression)
			if err != nil {
				cls[i].ok = false
				break
			}
			cls[i].sels = append(cls[i].sels, sel)
		}
	}
	out := DeviceInventory{Devices: map[PoolKey]DeviceCounts{}, ClassPools: map[PoolKey]DeviceCounts{}, Classes: map[string]DeviceCounts{}}
	for _, c := range cls {
		out.Classes[c.name] = DeviceCounts{}
	}
	for _, s := range slices {
		if s.Spec.Pool.Generation != newest[[2]string{s.Spec.Driver, s.Spec.Pool.Name}] {
			continue
		}
		for di := range s.Spec.Devices {
			dev := &s.Spec.Devices[di]
			view := celenv.NewDevice(s.Spec.Driver, dev)
			state := "free"
			switch {
			case used[devKey{s.Spec.Driver, s.Spec.Pool.Name, dev.Name}]:
				state = "used"
			case blocking(eval.Taints(s.Spec.Driver, s.Spec.Pool.Name, dev)):
				state = "tainted"
			}
			pool := PoolKey{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name}
			out.Devices[pool] = out.Devices[pool].add(state)
			for _, c := range cls {
				if !c.ok || !matchesAll(ctx, c.sels, view) {
					continue
				}
				k := PoolKey{Class: c.name, Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name}
				out.ClassPools[k] = out.ClassPools[k].add(state)
				out.Classes[c.name] = out.Classes[c.name].add(state)
			}
		}
	}
	return out, nil
}

// add counts one more device in state.
func (c DeviceCounts) add(state string) DeviceCounts {
	switch state {
	case "used":
		c.Used++
	case "tainted":
		c.Tainted++
	default:
		c.Free++
	}
	return c
}

func matchesAll(ctx context.Context, sels []*celenv.Selector, d *celenv.Device) bool {
	for _, s := range sels {
		if ok, err := s.Matches(ctx, d); err != nil || !ok {
			return false
		}
	}
	return true
}

func blocking(ts []resourceapi.DeviceTaint) bool {
	for _, t := range ts {
		if t.Effect == resourceapi.DeviceTaintEffectNoSchedule || t.Effect == resourceapi.DeviceTaintEffectNoExecute {
			return true
		}
	}
	return false
}

// podKey is "namespace/name".
func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
