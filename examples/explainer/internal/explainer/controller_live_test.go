package explainer

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
)

// observed keeps the last result the controller reached per pod name.
// observed keeps the last observation of each pod of one namespace, by the pod's name. The live tests
// share one API server, and a controller explains the pending pods of every namespace, those that
// earlier tests left included: a pod of another namespace with the same name must not count.
type observed struct {
	ns   string
	mu   sync.Mutex
	last map[string]observation
}

func newObserved(ns string) *observed { return &observed{ns: ns, last: map[string]observation{}} }

type observation struct {
	res Result
	out Outcome
	err error
	n   int
}

func (o *observed) observe(p *v1.Pod, res Result, out Outcome, err error) {
	if p.Namespace != o.ns {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	prev := o.last[p.Name]
	o.last[p.Name] = observation{res: res, out: out, err: err, n: prev.n + 1}
}

func (o *observed) get(name string) observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last[name]
}

// TestLiveControllerRecordsEvents runs the controller (leader election on a Lease, the metrics and
// health endpoints on a loopback port) against a real kube-apiserver. Pods marked unschedulable for
// a class selector that matches nothing, devices tainted by DeviceTaintRules, devices in use, a
// constraint no pair of devices meets and an extended resource no class maps each get one Warning
// Event naming what blocks them; a pod that fits gets none, nor does a pod whose devices are freed
// once it was explained. The metrics count the pods by reason and the devices by state.
func TestLiveControllerRecordsEvents(t *testing.T) {
	c := liveClient(t)
	testControllerRecordsEvents(t, c, markUnschedulable)
}

func testControllerRecordsEvents(t *testing.T, c kubernetes.Interface, schedule scheduleStep) {
	testControllerRecordsEventsWith(t, c, c, schedule)
}

// testControllerRecordsEventsWith sets the scenarios up through c and runs the controller on ctrl (the
// same objects through another client, whose requests are then the controller's alone).
func testControllerRecordsEventsWith(t *testing.T, c, ctrl kubernetes.Interface, schedule scheduleStep) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	ns := podNamespace(t, c)
	p := uniqueName("b")
	cleanupClusterObjects(t, c, p)
	n := func(s string) string { return p + "-" + s }
	res := c.ResourceV1()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	o := metav1.CreateOptions{}
	for _, nd := range []string{"n1", "n2"} {
		_, err := c.CoreV1().Nodes().Create(ctx, node(n(nd)), o)
		must("create node", err)
		_, err = res.ResourceSlices().Create(ctx, slice(n("s-"+nd), n(nd), 1,
			dev{"d0", "a100", 0}, dev{"d1", "a100", 1}, dev{"d2", "t4", 0}, dev{"d3", "v100", 0}, dev{"d4", "v100", 1}, dev{"d5", "l4", 0}), o)
		must("create slice", err)
		_, err = res.DeviceTaintRules().Create(ctx, taintRule(n("r-"+nd), n(nd), "d2"), o)
		must("create rule", err)
		held, err := res.ResourceClaims(ns).Create(ctx, claim(ns, "held-"+nd, n("a100"), 2, false), o)
		must("create claim", err)
		held.Status.Allocation = allocation(n(nd), "d0", "d1")
		_, err = res.ResourceClaims(ns).UpdateStatus(ctx, held, metav1.UpdateOptions{})
		must("allocate claim", err)
	}
	for _, m := range []string{"h100", "t4", "a100", "v100", "l4"} {
		_, err := res.DeviceClasses().Create(ctx, class(n(m), m), o)
		must("create class", err)
	}
	type scenario struct {
		pod, class      string
		count           int64
		sameNUMA        bool
		extended        string
		reason, message string // empty: no event
	}
	scenarios := []scenario{
		{pod: "selector", class: n("h100"), count: 1, reason: "ClassSelectorFalse", message: "class " + n("h100") + " matched no device"},
		{pod: "taint", class: n("t4"), count: 1, reason: "UntoleratedTaint", message: "by DeviceTaintRule " + n("r-")},
		{pod: "used", class: n("a100"), count: 1, reason: "AlreadyAllocated", message: "allocated to ResourceClaim " + ns + "/held-"},
		{pod: "numa", class: n("v100"), count: 2, sameNUMA: true, reason: "ConstraintUnmet", message: "matchAttribute on " + testDriver + "/numa: at most 1 of the 2 devices"},
		{pod: "extended", extended: "live.example/fpga", reason: ReasonExtendedResourceClass, message: "extended resource live.example/fpga: no DeviceClass"},
		{pod: "fits", class: n("l4"), count: 1},
	}

	obs := newObserved(ns)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must("listen", err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(runCtx, ktesting.NewLogger(t, ktesting.NewConfig()), RunOptions{
			Controller: Config{Client: ctrl, Requeue: 300 * time.Millisecond, Observe: obs.observe,
				Recorder: RecorderOptions{MinInterval: time.Second, Instance: "test-replica", Condition: true}},
			Listener: lis, LeaderElection: true, Namespace: ns, Name: "explainer", Identity: "test-replica",
			RetryPeriod: 200 * time.Millisecond,
		})
	}()
	defer func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return within 30s of its context's end")
		}
	}()
	base := "http://" + lis.Addr().String()
	eventually(t, 30*time.Second, "/readyz", func() error { return get(base+"/readyz", nil) })

	for _, s := range scenarios {
		pd := pod(ns, s.pod, "", "", s.extended)
		if s.class != "" {
			_, err := res.ResourceClaims(ns).Create(ctx, claim(ns, s.pod, s.class, s.count, s.sameNUMA), o)
			must("create claim", err)
			pd = pod(ns, s.pod, s.pod, "", "")
		}
		_, err := c.CoreV1().Pods(ns).Create(ctx, pd, o)
		must("create pod", err)
		schedule(ctx, t, c, pd)
	}

	for _, s := range scenarios {
		if s.message == "" {
			eventually(t, 30*time.Second, "pod "+s.pod+" explained", func() error {
				if ob := obs.get(s.pod); !ob.res.Fits {
					return fmt.Errorf("last result %+v", ob)
				}
				return nil
			})
			continue
		}
		// The newest event says what blocks the pod. An earlier one may say something else: the
		// controller may explain a pod before its informers have seen every object created before it.
		eventually(t, 30*time.Second, "event on pod "+s.pod, func() error {
			evs, err := podEvents(ctx, c, ns, s.pod)
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				return fmt.Errorf("no event (last result %+v)", obs.get(s.pod))
			}
			ev := evs[len(evs)-1]
			if ev.Type != v1.EventTypeWarning || !strings.Contains(ev.Message, s.message) {
				return fmt.Errorf("event %s %s %q, want a Warning containing %q", ev.Type, ev.Reason, ev.Message, s.message)
			}
			if got := obs.get(s.pod).res.Reason; got != s.reason {
				return fmt.Errorf("reason %s, want %s", got, s.reason)
			}
			return nil
		})
		cur, err := c.CoreV1().Pods(ns).Get(ctx, s.pod, metav1.GetOptions{})
		must("get pod", err)
		if cond := condition(cur); cond == nil || cond.Reason != s.reason {
			t.Errorf("pod %s: condition %s: %+v, want reason %s", s.pod, ConditionType, cond, s.reason)
		}
	}

	// Changes of DRA objects make every pod be explained again: the same message writes nothing.
	counts := map[string]int{}
	written := 0
	for _, s := range scenarios {
		evs, err := podEvents(ctx, c, ns, s.pod)
		must("list events", err)
		counts[s.pod] = len(evs)
		written += len(evs)
	}
	before := obs.get("selector").n
	cl, err := res.DeviceClasses().Get(ctx, n("h100"), metav1.GetOptions{})
	must("get class", err)
	cl.Labels = map[string]string{"touched": "true"}
	_, err = res.DeviceClasses().Update(ctx, cl, metav1.UpdateOptions{})
	must("update class", err)
	eventually(t, 30*time.Second, "pod selector explained again", func() error {
		if ob := obs.get("selector"); ob.n <= before || ob.out != Unchanged {
			return fmt.Errorf("last result %+v (explained %d times before the change)", ob, before)
		}
		return nil
	})
	// Freeing the devices of both nodes makes pod "used" fit: no further event.
	for _, nd := range []string{"n1", "n2"} {
		must("delete claim", res.ResourceClaims(ns).Delete(ctx, "held-"+nd, metav1.DeleteOptions{}))
	}
	eventually(t, 30*time.Second, "pod used fits once the devices are freed", func() error {
		if ob := obs.get("used"); !ob.res.Fits {
			return fmt.Errorf("last result %+v", ob)
		}
		return nil
	})
	for _, s := range scenarios {
		evs, err := podEvents(ctx, c, ns, s.pod)
		must("list events", err)
		if s.message == "" && len(evs) != 0 {
			t.Errorf("pod %s fits: %d DRAUnschedulable events, want none", s.pod, len(evs))
		}
		if len(evs) != counts[s.pod] {
			t.Errorf("pod %s: %d DRAUnschedulable events, %d before its explanation was repeated or it fit", s.pod, len(evs), counts[s.pod])
			for _, ev := range evs {
				t.Logf("event %s at %v: %s", ev.Name, ev.LastTimestamp, ev.Message)
			}
		}
	}

	var metrics string
	must("scrape /metrics", get(base+"/metrics", &metrics))
	for _, line := range []string{
		`dralloc_explainer_pending_pods{reason="ClassSelectorFalse"} 1`,
		`dralloc_explainer_pending_pods{reason="UntoleratedTaint"} 1`,
		`dralloc_explainer_pending_pods{reason="ConstraintUnmet"} 1`,
		`dralloc_explainer_pending_pods{reason="` + ReasonExtendedResourceClass + `"} 1`,
		`dralloc_explainer_pending_pods{reason="Fits"} 2`,
		`dralloc_explainer_class_pool_devices{class="` + n("t4") + `",driver="` + testDriver + `",pool="` + n("n1") + `",state="tainted"} 1`,
		`dralloc_explainer_class_pool_devices{class="` + n("a100") + `",driver="` + testDriver + `",pool="` + n("n2") + `",state="free"} 2`,
		`dralloc_explainer_class_pool_devices{class="` + n("v100") + `",driver="` + testDriver + `",pool="` + n("n1") + `",state="free"} 2`,
		`dralloc_explainer_records_total{outcome="written"} ` + fmt.Sprint(written),
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if !strings.Contains(metrics, "dralloc_explainer_explain_seconds_count ") {
		t.Errorf("/metrics lacks the explanation latency histogram")
	}
	must("/healthz", get(base+"/healthz", nil))
	lease, err := c.CoordinationV1().Leases(ns).Get(ctx, "explainer", metav1.GetOptions{})
	must("get lease", err)
	if h := lease.Spec.HolderIdentity; h == nil || *h != "test-replica" {
		t.Errorf("lease holder %v, want test-replica", h)
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", metrics)
	}

	// Pod "used" fits once its devices are freed: its condition turns False. Bound to a node (as
	// kube-scheduler binds), pod "taint" leaves the informer of pending pods: its condition turns False
	// too, rather than staying True on a scheduled pod.
	eventually(t, 30*time.Second, "condition of pod used resolved", conditionFalse(ctx, c, ns, "used", ConditionReasonFits))
	bindPod(ctx, t, c, ns, "taint", n("n1"))
	eventually(t, 30*time.Second, "condition of bound pod taint resolved", conditionFalse(ctx, c, ns, "taint", ConditionReasonScheduled))
}

// conditionFalse checks that the pod's condition ConditionType is False with the reason.
func conditionFalse(ctx context.Context, c kubernetes.Interface, ns, name, reason string) func() error {
	return func() error {
		cur, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cond := condition(cur); cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != reason {
			return fmt.Errorf("pod %s on node %q: condition %s %+v, want False with reason %s", name, cur.Spec.NodeName, ConditionType, cond, reason)
		}
		return nil
	}
}

func podEvents(ctx context.Context, c kubernetes.Interface, ns, name string) ([]v1.Event, error) {
	list, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []v1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == name && ev.Reason == EventReason {
			out = append(out, ev)
		}
	}
	// Oldest first; the recorder names events by the time written.
	slices.SortFunc(out, func(a, b v1.Event) int {
		if c := a.LastTimestamp.Compare(b.LastTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func condition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ConditionType {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// get fetches url; a status other than 200 is an error. body, when not nil, receives the body.
func get(url string, body *string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	if body != nil {
		*body = string(b)
	}
	return nil
}

// String prints the error's text, which %+v of the struct would print as a pointer.
func (o observation) String() string {
	return fmt.Sprintf("{res:%+v out:%v err:%v n:%d}", o.res, o.out, o.err, o.n)
}
