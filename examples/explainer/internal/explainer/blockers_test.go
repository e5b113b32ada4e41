package explainer

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

// TestBlockersChange is TestLiveBlockersChange on client-go's fake clientset.
func TestBlockersChange(t *testing.T) { testBlockersChange(t, fake.NewClientset(), markUnschedulable) }

// TestLiveBlockersChange: five claims hold the five a100 devices of the only node, and a pod waits for
// one. Another tenant's claim taking the device one of them let go leaves the message as it was (it
// names the first three holders and "2 others"), but the pod now waits for another claim: the
// explanation is written again.
func TestLiveBlockersChange(t *testing.T) { testBlockersChange(t, liveClient(t), markUnschedulable) }

func testBlockersChange(t *testing.T, c kubernetes.Interface, schedule scheduleStep) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := podNamespace(t, c)
	p := uniqueName("k")
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
	_, err = res.ResourceSlices().Create(ctx, slice(p+"-s", nd, 1,
		dev{"d0", "a100", 0}, dev{"d1", "a100", 0}, dev{"d2", "a100", 0}, dev{"d3", "a100", 1}, dev{"d4", "a100", 1}), o)
	must("create slice", err)
	_, err = res.DeviceClasses().Create(ctx, class(cls, "a100"), o)
	must("create class", err)
	hold := func(name, device string) {
		t.Helper()
		cl, err := res.ResourceClaims(ns).Create(ctx, claim(ns, name, cls, 1, false), o)
		must("create claim", err)
		cl.Status.Allocation = allocation(nd, device)
		_, err = res.ResourceClaims(ns).UpdateStatus(ctx, cl, metav1.UpdateOptions{})
		must("allocate claim", err)
	}
	for i, h := range []string{"h-a", "h-b", "h-c", "h-d", "h-e"} {
		hold(h, fmt.Sprintf("d%d", i))
	}

	obs := newObserved(ns)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must("listen", err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(runCtx, ktesting.NewLogger(t, ktesting.NewConfig()), RunOptions{
			Controller: Config{Client: c, Requeue: 200 * time.Millisecond, Observe: obs.observe,
				Recorder: RecorderOptions{MinInterval: 500 * time.Millisecond, Instance: "test-replica"}},
			Listener: lis, LeaderElection: true, Namespace: ns, Name: "explainer", Identity: "test-replica",
			RetryPeriod: 100 * time.Millisecond,
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
	eventually(t, 30*time.Second, "/readyz", func() error { return get("http://"+lis.Addr().String()+"/readyz", nil) })

	_, err = res.ResourceClaims(ns).Create(ctx, claim(ns, "wait", cls, 1, false), o)
	must("create claim", err)
	pd := pod(ns, "wait", "wait", "", "")
	_, err = c.CoreV1().Pods(ns).Create(ctx, pd, o)
	must("create pod", err)
	schedule(ctx, t, c, pd)

	want := fmt.Sprintf("would fit on 1 node (%s) once claims %s/h-a, %s/h-b, %s/h-c and 2 others release their devices; "+
		`1 node: claim %s/wait, request "gpu": 5 of 5 matching devices allocated to ResourceClaim %s/h-a and 4 others`, nd, ns, ns, ns, ns, ns)
	var first string
	eventually(t, 30*time.Second, "the pod's explanation", func() error {
		evs, err := podEvents(ctx, c, ns, "wait")
		if err != nil || len(evs) != 1 || evs[0].Message != want {
			return fmt.Errorf("events %v (%v), want one saying %q", evs, err, want)
		}
		first = evs[0].Annotations[BlockersAnnotation]
		return nil
	})
	if first == "" {
		t.Fatalf("event without annotation %s", BlockersAnnotation)
	}

	// h-e lets its device go and another tenant's claim h-f takes it.
	he, err := res.ResourceClaims(ns).Get(ctx, "h-e", metav1.GetOptions{})
	must("get claim", err)
	he.Status.Allocation = nil
	_, err = res.ResourceClaims(ns).UpdateStatus(ctx, he, metav1.UpdateOptions{})
	must("deallocate claim", err)
	hold("h-f", "d4")
	eventually(t, 30*time.Second, "the explanation written again", func() error {
		evs, err := podEvents(ctx, c, ns, "wait")
		if err != nil {
			return err
		}
		if len(evs) != 2 {
			return fmt.Errorf("%d events (last result %+v), want 2", len(evs), obs.get("wait"))
		}
		if evs[1].Message != want || evs[1].Annotations[BlockersAnnotation] == first {
			return fmt.Errorf("second event %q with blockers %q, want %q with blockers other than %q", evs[1].Message, evs[1].Annotations[BlockersAnnotation], want, first)
		}
		return nil
	})
}
