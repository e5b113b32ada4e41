package explainer

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/dralloc/dralloc/fuzz/controlplane"
)

// schedServer is a second control plane: kube-apiserver with kube-scheduler and
// kube-controller-manager (`scripts/kube-apiserver start-scheduler`). It is apart from the shared
// server because a scheduler there would place, or mark unschedulable, the pods of the tests that
// play the scheduler's step themselves. Started by the first test that asks for it, stopped by
// TestMain.
var schedServer = &livePlane{opts: controlplane.Options{
	Scheduler: true, DirPrefix: "dralloc-explainer-sched-", StartTimeout: 4 * time.Minute,
	// No kubelet lifts the node.kubernetes.io/not-ready taint that this admission plugin puts on every
	// new Node; without it the Nodes are plain API objects with no taint.
	DisableAdmission: []string{"TaintNodesByCondition"},
}}

// schedulerClient returns a client of the control plane with a real kube-scheduler, or skips the test.
func schedulerClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c := maybeSchedulerClient(t)
	if c == nil {
		t.Skip("no kube-apiserver with kube-scheduler: " + schedServer.skip)
	}
	return c
}

// maybeSchedulerClient is schedulerClient, with nil where the binaries are not built.
func maybeSchedulerClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c := schedServer.clientOrNil(t, "kube-scheduler", "kube-controller-manager", "kube-apiserver")
	if c == nil {
		t.Logf("no kube-apiserver with kube-scheduler: %s", schedServer.skip)
	}
	return c
}

// podScheduled is the pod's PodScheduled condition, the one kube-scheduler writes.
func podScheduled(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// awaitUnschedulable is the scheduling step of a real kube-scheduler: it waits until the scheduler
// left the pod pending with PodScheduled=False, reason Unschedulable.
func awaitUnschedulable(ctx context.Context, t *testing.T, c kubernetes.Interface, p *v1.Pod) {
	t.Helper()
	eventually(t, 60*time.Second, "kube-scheduler leaves pod "+p.Name+" unschedulable", func() error {
		cur, err := c.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !Unschedulable(cur) {
			return fmt.Errorf("pod on node %q, PodScheduled %+v", cur.Spec.NodeName, podScheduled(cur))
		}
		return nil
	})
}

// TestLiveWithScheduler runs the controller against a kube-apiserver where a real kube-scheduler
// (v1.37.2, with kube-controller-manager's DRA controllers) does the scheduling: nothing in the test
// writes a pod's status. Pods the scheduler leaves pending for a class selector that matches nothing,
// devices tainted by DeviceTaintRules, devices in use, a constraint no pair of devices meets and an
// extended resource no class maps each get one Warning Event naming what blocks them; a pod that fits
// is bound by the scheduler and gets none. Once the devices a pod waits for are freed the scheduler
// binds it there and it gets no further Event. The metrics, scraped over HTTP, count the pods still
// pending by reason, the devices by state, and the Events written.
func TestLiveWithScheduler(t *testing.T) {
	c := schedulerClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	ns := podNamespace(t, c)
	p := uniqueName("s")
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
		want := node(n(nd))
		got, err := c.CoreV1().Nodes().Create(ctx, want, o)
		must("create node", err)
		// A kubelet registers its Node with the status; written again here so that it holds
		// whatever the API server's create strategy dropped.
		got.Status = *want.Status.DeepCopy()
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{})
		must("update node status", err)
		_, err = res.ResourceSlices().Create(ctx, slice(n("s-"+nd), n(nd), 1,
			dev{"d0", "a100", 0}, dev{"d1", "a100", 1}, dev{"d2", "t4", 0}, dev{"d3", "v100", 0}, dev{"d4", "v100", 1}, dev{"d5", "l4", 0}), o)
		must("create slice", err)
		_, err = res.DeviceTaintRules().Create(ctx, taintRule(n("r-"+nd), n(nd), "d2"), o)
		must("create rule", err)
		// Allocated and reserved for no pod: kube-scheduler counts its devices in use, and
		// kube-controller-manager leaves an allocation without its finalizer alone.
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
		reason, message string // empty: the scheduler binds the pod, no event
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
			Controller: Config{Client: c, Requeue: 300 * time.Millisecond, Observe: obs.observe,
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

	// Every claim before any pod: the scheduler (and the controller) then find a pod's claim in
	// their caches when the pod arrives, rather than waiting for it.
	for _, s := range scenarios {
		if s.class != "" {
			_, err := res.ResourceClaims(ns).Create(ctx, claim(ns, s.pod, s.class, s.count, s.sameNUMA), o)
			must("create claim", err)
		}
	}
	for _, s := range scenarios {
		pd := pod(ns, s.pod, "", "", s.extended)
		if s.class != "" {
			pd = pod(ns, s.pod, s.pod, "", "")
		}
		_, err := c.CoreV1().Pods(ns).Create(ctx, pd, o)
		must("create pod", err)
	}

	bound := func(name, nodeName string) func() error {
		return func() error {
			cur, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cur.Spec.NodeName == "" || (nodeName != "" && cur.Spec.NodeName != nodeName) {
				return fmt.Errorf("pod bound to %q, want %q; PodScheduled %+v", cur.Spec.NodeName, nodeName, podScheduled(cur))
			}
			cl, err := res.ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cl.Status.Allocation == nil {
				return fmt.Errorf("pod bound to %s, its claim not allocated", cur.Spec.NodeName)
			}
			return nil
		}
	}
	for _, s := range scenarios {
		if s.message == "" {
			eventually(t, 60*time.Second, "scheduler binds pod "+s.pod, bound(s.pod, ""))
			continue
		}
		// The newest event says what blocks the pod. An earlier one may say something else: the
		// controller may explain a pod before its informers have seen every object created before it.
		eventually(t, 60*time.Second, "event on pod "+s.pod+" the scheduler left pending", func() error {
			cur, err := c.CoreV1().Pods(ns).Get(ctx, s.pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cond := podScheduled(cur); cur.Spec.NodeName != "" || cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != v1.PodReasonUnschedulable {
				return fmt.Errorf("pod on node %q, PodScheduled %+v: not left pending by the scheduler", cur.Spec.NodeName, cond)
			}
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
			if cond := condition(cur); cond == nil || cond.Reason != s.reason {
				return fmt.Errorf("condition %s: %+v, want reason %s", ConditionType, cond, s.reason)
			}
			t.Logf("pod %s: kube-scheduler: %q; explainer: %q", s.pod, podScheduled(cur).Message, ev.Message)
			return nil
		})
	}

	counts := map[string]int{}
	for _, s := range scenarios {
		evs, err := podEvents(ctx, c, ns, s.pod)
		must("list events", err)
		counts[s.pod] = len(evs)
	}
	// Deallocating the claim that holds the a100 devices of n1 frees them (kube-scheduler requeues
	// pending pods on a claim's deallocation): the scheduler binds pod "used" to n1, the only node
	// with a free a100, and no further event is written.
	held, err := res.ResourceClaims(ns).Get(ctx, "held-n1", metav1.GetOptions{})
	must("get claim", err)
	held.Status.Allocation = nil
	_, err = res.ResourceClaims(ns).UpdateStatus(ctx, held, metav1.UpdateOptions{})
	must("deallocate claim", err)
	eventually(t, 60*time.Second, "scheduler binds pod used to "+n("n1")+" once its devices are freed", bound("used", n("n1")))
	// The condition written while it waited does not outlive the wait.
	eventually(t, 30*time.Second, "condition of pod used resolved once bound", conditionFalse(ctx, c, ns, "used", ConditionReasonScheduled))

	written := 0
	for _, s := range scenarios {
		evs, err := podEvents(ctx, c, ns, s.pod)
		must("list events", err)
		written += len(evs)
		if s.message == "" && len(evs) != 0 {
			t.Errorf("pod %s fits: %d DRAUnschedulable events, want none", s.pod, len(evs))
		}
		if len(evs) != counts[s.pod] {
			t.Errorf("pod %s: %d DRAUnschedulable events, %d before the devices were freed", s.pod, len(evs), counts[s.pod])
			for _, ev := range evs {
				t.Logf("event %s at %v: %s", ev.Name, ev.LastTimestamp, ev.Message)
			}
		}
	}

	// The bound pods leave the pending gauge once the controller's informer sees them bound.
	var metrics string
	eventually(t, 30*time.Second, "/metrics", func() error {
		if err := get(base+"/metrics", &metrics); err != nil {
			return err
		}
		var missing []string
		for _, line := range []string{
			`dralloc_explainer_pending_pods{reason="ClassSelectorFalse"} 1`,
			`dralloc_explainer_pending_pods{reason="UntoleratedTaint"} 1`,
			`dralloc_explainer_pending_pods{reason="ConstraintUnmet"} 1`,
			`dralloc_explainer_pending_pods{reason="` + ReasonExtendedResourceClass + `"} 1`,
			`dralloc_explainer_class_pool_devices{class="` + n("t4") + `",driver="` + testDriver + `",pool="` + n("n1") + `",state="tainted"} 1`,
			`dralloc_explainer_class_pool_devices{class="` + n("a100") + `",driver="` + testDriver + `",pool="` + n("n1") + `",state="used"} 1`,
			`dralloc_explainer_class_pool_devices{class="` + n("a100") + `",driver="` + testDriver + `",pool="` + n("n1") + `",state="free"} 1`,
			`dralloc_explainer_class_pool_devices{class="` + n("a100") + `",driver="` + testDriver + `",pool="` + n("n2") + `",state="used"} 2`,
			`dralloc_explainer_class_pool_devices{class="` + n("v100") + `",driver="` + testDriver + `",pool="` + n("n1") + `",state="free"} 2`,
			`dralloc_explainer_records_total{outcome="written"} ` + fmt.Sprint(written),
		} {
			if !strings.Contains(metrics, line+"\n") {
				missing = append(missing, line)
			}
		}
		// Pod used waited as AlreadyAllocated and is bound now: the reason stays, at 0. Fits, if a pod
		// was ever explained so before being bound, is 0 too.
		if !strings.Contains(metrics, `dralloc_explainer_pending_pods{reason="AlreadyAllocated"} 0`+"\n") {
			missing = append(missing, `dralloc_explainer_pending_pods{reason="AlreadyAllocated"} 0`)
		}
		if strings.Contains(metrics, `dralloc_explainer_pending_pods{reason="Fits"} `) && !strings.Contains(metrics, `dralloc_explainer_pending_pods{reason="Fits"} 0`+"\n") {
			missing = append(missing, `dralloc_explainer_pending_pods{reason="Fits"} 0`)
		}
		if len(missing) > 0 {
			return fmt.Errorf("/metrics lacks %s", strings.Join(missing, "; "))
		}
		return nil
	})
	// One l4 device is allocated to pod "fits", on whichever node the scheduler chose.
	usedL4 := 0
	for _, nd := range []string{"n1", "n2"} {
		if strings.Contains(metrics, `dralloc_explainer_class_pool_devices{class="`+n("l4")+`",driver="`+testDriver+`",pool="`+n(nd)+`",state="used"} 1`+"\n") {
			usedL4++
		}
	}
	if usedL4 != 1 {
		t.Errorf("/metrics: %d pools with a used l4 device, want 1", usedL4)
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", metrics)
	}
}
