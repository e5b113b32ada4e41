package explainer

import (
	"context"
	"sync"

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
	// deferred, failed) and pods found to fit (fits).
	Records *prometheus.CounterVec

	devices *deviceCollector

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

// NewMetrics returns the metrics; the device gauges read src at every scrape.
func NewMetrics(src DeviceSource) *Metrics {
	return &Metrics{
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
		devices: &deviceCollector{src: src, desc: prometheus.NewDesc("dralloc_explainer_devices",
			"Devices per DeviceClass and pool by state: used (allocated to a claim), tainted (not used, with a NoSchedule or NoExecute taint), free.",
			[]string{"class", "driver", "pool", "state"}, nil)},
		reasons: map[string]string{},
	}
}

// Register registers every metric with reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.Pending, m.Latency, m.Records, m.devices} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// SetPending records the dominant reason of a pending pod; an empty reason removes the pod.
func (m *Metrics) SetPending(key, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if reason == "" {
		delete(m.reasons, key)
	} else {
		m.reasons[key] = reason
	}
	counts := map[string]int{}
	for _, r := range m.reasons {
		counts[r]++
	}
	m.Pending.Reset()
	for r, n := range counts {
		m.Pending.WithLabelValues(r).Set(float64(n))
	}
}

// deviceCollector computes the device gauges when scraped.
type deviceCollector struct {
	src  DeviceSource
	desc *prometheus.Desc
	env  *celenv.Env // built at the first scrape
	mu   sync.Mutex
}

func (d *deviceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d *deviceCollector) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.env == nil {
		env, err := celenv.NewEnv(celenv.Options{})
		if err != nil {
			ch <- prometheus.NewInvalidMetric(d.desc, err)
			return
		}
		d.env = env
	}
	counts, err := CountDevices(context.Background(), d.env, d.src)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(d.desc, err)
		return
	}
	for k, c := range counts {
		for state, n := range map[string]int{"used": c.Used, "tainted": c.Tainted, "free": c.Free} {
			ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(n), k.Class, k.Driver, k.Pool, state)
		}
	}
}

// PoolKey names a class's devices in one pool.
type PoolKey struct{ Class, Driver, Pool string }

// DeviceCounts splits the devices of a class in a pool: Used are allocated to a claim, Tainted are not
// and have a taint with effect NoSchedule or NoExecute (their own or a DeviceTaintRule's), Free are the
// rest.
type DeviceCounts struct{ Used, Tainted, Free int }

// CountDevices counts, per class and pool, the devices of the newest generation of every pool that the
// class's selectors match. A selector that fails to compile or evaluate counts the device as not
// matching (the allocator would refuse the claim; the count is a gauge, not a decision).
func CountDevices(ctx context.Context, env *celenv.Env, src DeviceSource) (map[PoolKey]DeviceCounts, error) {
	slices, err := src.Slices()
	if err != nil {
		return nil, err
	}
	classes, err := src.Classes()
	if err != nil {
		return nil, err
	}
	claims, err := src.Claims()
	if err != nil {
		return nil, err
	}
	rules, err := src.TaintRules()
	if err != nil {
		return nil, err
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
	out := map[PoolKey]DeviceCounts{}
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
			for _, c := range cls {
				if !c.ok || !matchesAll(ctx, c.sels, view) {
					continue
				}
				k := PoolKey{Class: c.name, Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name}
				n := out[k]
				switch state {
				case "used":
					n.Used++
				case "tainted":
					n.Tainted++
				default:
					n.Free++
				}
				out[k] = n
			}
		}
	}
	return out, nil
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
