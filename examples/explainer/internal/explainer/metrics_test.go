package explainer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/dralloc/dralloc/celenv"
)

type staticSource struct {
	slices  []*resourceapi.ResourceSlice
	classes []*resourceapi.DeviceClass
	claims  []*resourceapi.ResourceClaim
	rules   []*resourceapi.DeviceTaintRule
}

func (s staticSource) Slices() ([]*resourceapi.ResourceSlice, error)       { return s.slices, nil }
func (s staticSource) Classes() ([]*resourceapi.DeviceClass, error)        { return s.classes, nil }
func (s staticSource) Claims() ([]*resourceapi.ResourceClaim, error)       { return s.claims, nil }
func (s staticSource) TaintRules() ([]*resourceapi.DeviceTaintRule, error) { return s.rules, nil }

func countFixture() staticSource {
	old := slice("s-old", "n1", 1, dev{"x0", "a100", 0}, dev{"x1", "a100", 0})
	cur := slice("s-new", "n1", 2, dev{"d0", "a100", 0}, dev{"d1", "a100", 1}, dev{"d2", "a100", 0}, dev{"d3", "t4", 0}, dev{"d4", "a100", 0})
	cur.Spec.Devices[4].Taints = []resourceapi.DeviceTaint{{Key: "own", Effect: resourceapi.DeviceTaintEffectNoExecute}}
	other := slice("s-n2", "n2", 1, dev{"d0", "t4", 0})
	bad := class("bad", "")
	bad.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "device.nonsense +"}}}
	return staticSource{
		slices: []*resourceapi.ResourceSlice{old, cur, other},
		// "any" has no selector: it matches every device, as a100 and t4 do theirs.
		classes: []*resourceapi.DeviceClass{class("a100", "a100"), class("t4", "t4"), class("h100", "h100"), class("any", ""), bad},
		claims:  []*resourceapi.ResourceClaim{allocatedClaim("held", "n1", "d0")},
		rules:   []*resourceapi.DeviceTaintRule{taintRule("broken", "n1", "d1")},
	}
}

func TestCountDevices(t *testing.T) {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := CountDevices(context.Background(), env, countFixture())
	if err != nil {
		t.Fatal(err)
	}
	// In n1: d0 allocated, d1 tainted by the rule, d4 by its own NoExecute taint, d2 and d3 free; the
	// old generation's x0 and x1 are not counted. In n2: d0 free.
	want := DeviceInventory{
		// Each device once, though "any" and a100 (or t4) both match it.
		Devices: map[PoolKey]DeviceCounts{
			{Driver: testDriver, Pool: "n1"}: {Used: 1, Tainted: 2, Free: 2},
			{Driver: testDriver, Pool: "n2"}: {Free: 1},
		},
		ClassPools: map[PoolKey]DeviceCounts{
			{Class: "a100", Driver: testDriver, Pool: "n1"}: {Used: 1, Tainted: 2, Free: 1},
			{Class: "t4", Driver: testDriver, Pool: "n1"}:   {Free: 1},
			{Class: "t4", Driver: testDriver, Pool: "n2"}:   {Free: 1},
			{Class: "any", Driver: testDriver, Pool: "n1"}:  {Used: 1, Tainted: 2, Free: 2},
			{Class: "any", Driver: testDriver, Pool: "n2"}:  {Free: 1},
		},
		// h100 matches nothing and bad's selector does not compile: both present, at zero.
		Classes: map[string]DeviceCounts{
			"a100": {Used: 1, Tainted: 2, Free: 1}, "t4": {Free: 2}, "any": {Used: 1, Tainted: 2, Free: 3},
			"h100": {}, "bad": {},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counts\n%v\nwant\n%v", got, want)
	}
}

// scrape is the registry's exposition, as /metrics serves it.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	Handler(reg, nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// Every series an alert may rely on is there before anything happened: each outcome at 0 (a failure
// rate is 0, not absent), the leader gauge at 0, build_info at 1; the device gauges only on the
// leader, with a class that matches nothing at 0.
func TestMetricsPresentAtZero(t *testing.T) {
	m := NewMetrics(countFixture())
	follower := scrape(t, m)
	for _, line := range []string{
		`dralloc_explainer_records_total{outcome="failed"} 0`,
		`dralloc_explainer_records_total{outcome="written"} 0`,
		`dralloc_explainer_records_total{outcome="unchanged"} 0`,
		`dralloc_explainer_records_total{outcome="deferred"} 0`,
		`dralloc_explainer_records_total{outcome="fits"} 0`,
		`dralloc_explainer_leader 0`,
	} {
		if !strings.Contains(follower, line+"\n") {
			t.Errorf("a follower's scrape lacks %s", line)
		}
	}
	if !regexp.MustCompile(`(?m)^dralloc_explainer_build_info\{goversion="go[^"]+",revision="[^"]+",version="[^"]+"\} 1$`).MatchString(follower) {
		t.Errorf("no build_info 1 with goversion, revision and version:\n%s", grepLines(follower, "build_info"))
	}
	if strings.Contains(follower, "dralloc_explainer_devices{") || strings.Contains(follower, "dralloc_explainer_class_devices{") {
		t.Errorf("a follower exports device gauges:\n%s", grepLines(follower, "devices{"))
	}

	m.SetLeading(true)
	leader := scrape(t, m)
	for _, line := range []string{
		`dralloc_explainer_leader 1`,
		`dralloc_explainer_class_devices{class="h100",state="free"} 0`,
		`dralloc_explainer_class_devices{class="h100",state="used"} 0`,
		`dralloc_explainer_class_devices{class="any",state="free"} 3`,
		`dralloc_explainer_devices{driver="` + testDriver + `",pool="n1",state="free"} 2`,
		`dralloc_explainer_devices{driver="` + testDriver + `",pool="n2",state="free"} 1`,
		`dralloc_explainer_class_pool_devices{class="a100",driver="` + testDriver + `",pool="n1",state="tainted"} 2`,
	} {
		if !strings.Contains(leader, line+"\n") {
			t.Errorf("the leader's scrape lacks %s:\n%s", line, grepLines(leader, "devices{"))
		}
	}
	// Summed over pools and states the device gauge is the fleet, each device once: 6 in the newest
	// generations (5 in n1, 1 in n2), though "any" and a model class both match each.
	sum := 0.0
	for _, l := range strings.Split(leader, "\n") {
		if strings.HasPrefix(l, "dralloc_explainer_devices{") {
			var v float64
			if _, err := fmt.Sscan(l[strings.LastIndex(l, " ")+1:], &v); err != nil {
				t.Fatal(err)
			}
			sum += v
		}
	}
	if sum != 6 {
		t.Errorf("dralloc_explainer_devices sums to %v, want 6", sum)
	}
	m.SetLeading(false)
	if s := scrape(t, m); strings.Contains(s, "dralloc_explainer_devices{") || !strings.Contains(s, "dralloc_explainer_leader 0\n") {
		t.Errorf("after leading, the replica still exports device gauges or leader 1")
	}
}

// client-go's request metrics and the controller's workqueue metrics are exported with the
// controller's own.
func TestClientAndQueueMetrics(t *testing.T) {
	c := fake.NewClientset()
	ctrl, err := NewController(ktesting.NewLogger(t, ktesting.NewConfig()), Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	ctrl.queue.Add("ns/p")
	s := scrape(t, ctrl.Metrics())
	for _, line := range []string{
		`workqueue_adds_total{name="dralloc-explainer"} 1`,
		`workqueue_depth{name="dralloc-explainer"} 1`,
		`workqueue_retries_total{name="dralloc-explainer"} 0`,
	} {
		if !strings.Contains(s, line+"\n") {
			t.Errorf("scrape lacks %s:\n%s", line, grepLines(s, "workqueue_"))
		}
	}
	// client-go's request metrics: one GET to a server that answers 404 is counted, by code, method
	// and host (the fake clientset above sends no HTTP request).
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	real, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := real.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{}); err == nil {
		t.Fatal("a 404 server answered a get")
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	s = scrape(t, ctrl.Metrics())
	for _, line := range []string{
		`rest_client_requests_total{code="404",host="` + host + `",method="GET"} 1`,
		`rest_client_request_duration_seconds_count{host="` + host + `",verb="GET"} 1`,
	} {
		if !strings.Contains(s, line+"\n") {
			t.Errorf("scrape lacks %s:\n%s", line, grepLines(s, "rest_client_"))
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A reason's count follows its pods, and a reason that had pods stays at 0 rather than vanishing.
func TestPendingByReason(t *testing.T) {
	m := NewMetrics(staticSource{})
	m.SetPending("ns/a", "ClassSelectorFalse")
	m.SetPending("ns/b", "ClassSelectorFalse")
	m.SetPending("ns/c", "UntoleratedTaint")
	m.SetPending("ns/a", "AlreadyAllocated") // a pod's reason changed
	m.SetPending("ns/c", "")                 // scheduled
	m.SetPending("ns/c", "")                 // again: nothing to remove
	for reason, want := range map[string]float64{"ClassSelectorFalse": 1, "AlreadyAllocated": 1, "UntoleratedTaint": 0} {
		if got := testutil.ToFloat64(m.Pending.WithLabelValues(reason)); got != want {
			t.Errorf("%s: %v, want %v", reason, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.Pending); n != 3 {
		t.Errorf("%d reasons reported, want 3 (a reason without pods stays at 0)", n)
	}
}
