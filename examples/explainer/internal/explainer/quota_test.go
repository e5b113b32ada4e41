package explainer

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

// TestQuota is TestLiveQuota on client-go's fake clientset.
func TestQuota(t *testing.T) { testQuota(t, fake.NewClientset(), markUnschedulable) }

// TestLiveQuota: a namespace holds one of the node's two a100 devices and its ResourceQuota allows one
// device of the class. With EnforceQuota its pending pod, whose claim fits the free device, is
// explained by the quota (the limit, the one device held, the one asked for), reason QuotaExceeded;
// once the quota is raised to two the pod fits and its condition-less Event stays the only one. The
// same pod on a controller without EnforceQuota fits from the start.
func TestLiveQuota(t *testing.T) { testQuota(t, liveClient(t), markUnschedulable) }

func testQuota(t *testing.T, c kubernetes.Interface, schedule scheduleStep) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := podNamespace(t, c)
	p := uniqueName("q")
	cleanupClusterObjects(t, c, p)
	nd, cls := p+"-n1", p+"-a100"
	res := c.ResourceV1()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	o := metav1.CreateOptions{}
	_, err := c.CoreV1().Nodes().Create(ctx, node(nd), o)
	must("create node", err)
	_, err = res.ResourceSlices().Create(ctx, slice(p+"-s", nd, 1, dev{"d0", "a100", 0}, dev{"d1", "a100", 0}), o)
	must("create slice", err)
	_, err = res.DeviceClasses().Create(ctx, class(cls, "a100"), o)
	must("create class", err)
	held, err := res.ResourceClaims(ns).Create(ctx, claim(ns, "held", cls, 1, false), o)
	must("create claim", err)
	held.Status.Allocation = allocation(nd, "d0")
	_, err = res.ResourceClaims(ns).UpdateStatus(ctx, held, metav1.UpdateOptions{})
	must("allocate claim", err)
	// The claims exist before the quota, as claims admitted before it was lowered: kube-apiserver's
	// quota admission refuses claims while a quota of the namespace has no status yet, and no
	// controller manager computes one here.
	_, err = res.ResourceClaims(ns).Create(ctx, claim(ns, "wait", cls, 1, false), o)
	must("create claim", err)
	key := v1.ResourceName(cls + ".deviceclass.resource.k8s.io/devices")
	rq := &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpus"},
		Spec: v1.ResourceQuotaSpec{Hard: v1.ResourceList{key: resource.MustParse("1")}}}
	_, err = c.CoreV1().ResourceQuotas(ns).Create(ctx, rq, o)
	must("create quota", err)

	run := func(enforce bool, obs *observed) (addr string, stop func()) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		must("listen", err)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- Run(runCtx, ktesting.NewLogger(t, ktesting.NewConfig()), RunOptions{
				Controller: Config{Client: c, Requeue: 200 * time.Millisecond, Observe: obs.observe, EnforceQuota: enforce,
					Recorder: RecorderOptions{MinInterval: 200 * time.Millisecond, Instance: "test-replica"}},
				Listener: lis,
			})
		}()
		eventually(t, 30*time.Second, "/readyz", func() error { return get("http://"+lis.Addr().String()+"/readyz", nil) })
		return lis.Addr().String(), func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Run did not return within 30s of its context's end")
			}
		}
	}

	pd := pod(ns, "wait", "wait", "", "")
	_, err = c.CoreV1().Pods(ns).Create(ctx, pd, o)
	must("create pod", err)
	schedule(ctx, t, c, pd)

	// Without EnforceQuota the claim fits the free device: nothing is recorded.
	plain := newObserved(ns)
	_, stopPlain := run(false, plain)
	eventually(t, 30*time.Second, "the pod fits without quota", func() error {
		if got := plain.get("wait"); got.n == 0 || !got.res.Fits {
			return fmt.Errorf("last result %+v, want Fits", got)
		}
		return nil
	})
	stopPlain()
	if evs, err := podEvents(ctx, c, ns, "wait"); err != nil || len(evs) != 0 {
		t.Fatalf("events %v (%v) without quota, want none", evs, err)
	}

	obs := newObserved(ns)
	addr, stop := run(true, obs)
	defer stop()
	// Releasing the claim held frees quota too: the explanation says so first.
	want := fmt.Sprintf("would fit on 1 node (%s) once claim %s/held releases its devices; "+
		"1 node: quota owner %s, DeviceClass %s, devices ≤ 1: holds 1, asks for 1 more", nd, ns, ns, cls)
	eventually(t, 30*time.Second, "the pod's explanation by its quota", func() error {
		evs, err := podEvents(ctx, c, ns, "wait")
		if err != nil || len(evs) != 1 || evs[0].Message != want {
			return fmt.Errorf("events %v (%v; last result %+v), want one saying %q", evs, err, obs.get("wait"), want)
		}
		return nil
	})
	// The controller writes the Event and then reports its result: wait for the report too.
	eventually(t, 30*time.Second, "the pod's result by its quota", func() error {
		if got := obs.get("wait"); got.res.Reason != ReasonQuotaExceeded || got.res.Blockers == "" {
			return fmt.Errorf("last result %+v, want reason %s and blockers", got, ReasonQuotaExceeded)
		}
		return nil
	})
	eventually(t, 30*time.Second, "the pending gauge", func() error {
		var body string
		if err := get("http://"+addr+"/metrics", &body); err != nil {
			return err
		}
		if line := `dralloc_explainer_pending_pods{reason="` + ReasonQuotaExceeded + `"} 1`; !strings.Contains(body, line+"\n") {
			return fmt.Errorf("no line %q in %s", line, grepLines(body, "pending_pods"))
		}
		return nil
	})

	// The quota raised by what the explanation asks for: the pod fits, and no Event follows.
	cur, err := c.CoreV1().ResourceQuotas(ns).Get(ctx, "gpus", metav1.GetOptions{})
	must("get quota", err)
	cur.Spec.Hard[key] = resource.MustParse("2")
	_, err = c.CoreV1().ResourceQuotas(ns).Update(ctx, cur, metav1.UpdateOptions{})
	must("raise quota", err)
	eventually(t, 30*time.Second, "the pod fits within the raised quota", func() error {
		if got := obs.get("wait"); !got.res.Fits {
			return fmt.Errorf("last result %+v, want Fits", got)
		}
		return nil
	})
	if evs, err := podEvents(ctx, c, ns, "wait"); err != nil || len(evs) != 1 {
		t.Errorf("events %v (%v) after the quota was raised, want the one", evs, err)
	}
	// The requests on ResourceQuotas are those apicalls.go lists under withQuota (the overlay that
	// enables --enforce-quota grants them).
	if f, ok := c.(*fake.Clientset); ok {
		quotaCalls := callsIn(withQuota)
		seen := map[grant]bool{}
		for _, a := range f.Actions() {
			if a.GetResource().Resource == "resourcequotas" && a.GetVerb() != "create" && a.GetVerb() != "get" && a.GetVerb() != "update" {
				seen[grant{a.GetResource().Group, "resourcequotas", a.GetVerb()}] = true
			}
		}
		for g := range quotaCalls {
			if !seen[g] {
				t.Errorf("the controller did not make %s, which apicalls.go lists for --enforce-quota", g)
			}
		}
		for g := range seen {
			if !quotaCalls[g] {
				t.Errorf("the controller made %s, which apicalls.go does not list for --enforce-quota", g)
			}
		}
	}
}
