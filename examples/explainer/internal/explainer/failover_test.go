package explainer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

// TestLiveFailover runs two replicas against a real kube-apiserver, where a real kube-scheduler
// leaves the pods unschedulable (where kube-scheduler is not built, the test marks them itself): only
// the one holding the Lease writes; when it stops, the other takes the Lease, explains new pods, and
// does not repeat the Event its predecessor wrote.
func TestLiveFailover(t *testing.T) {
	if c := maybeSchedulerClient(t); c != nil {
		testFailover(t, c, awaitUnschedulable)
		return
	}
	testFailover(t, liveClient(t), markUnschedulable)
}

// TestFailover is TestLiveFailover on client-go's fake clientset.
func TestFailover(t *testing.T) { testFailover(t, fake.NewClientset(), markUnschedulable) }

func testFailover(t *testing.T, c kubernetes.Interface, schedule scheduleStep) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := podNamespace(t, c)
	p := uniqueName("f")
	cleanupClusterObjects(t, c, p)
	o := metav1.CreateOptions{}
	if _, err := c.CoreV1().Nodes().Create(ctx, node(p+"-n1"), o); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResourceV1().DeviceClasses().Create(ctx, class(p+"-h100", "h100"), o); err != nil {
		t.Fatal(err)
	}
	newPod := func(name string) {
		t.Helper()
		if _, err := c.ResourceV1().ResourceClaims(ns).Create(ctx, claim(ns, name, p+"-h100", 1, false), o); err != nil {
			t.Fatal(err)
		}
		pd := pod(ns, name, name, "", "")
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pd, o); err != nil {
			t.Fatal(err)
		}
		schedule(ctx, t, c, pd)
	}

	type replica struct {
		obs  *observed
		stop context.CancelFunc
		done chan error
	}
	replicas := map[string]*replica{}
	for _, id := range []string{"replica-a", "replica-b"} {
		rctx, stop := context.WithCancel(ctx)
		r := &replica{obs: newObserved(ns), stop: stop, done: make(chan error, 1)}
		replicas[id] = r
		go func() {
			r.done <- Run(rctx, ktesting.NewLogger(t, ktesting.NewConfig()), RunOptions{
				Controller: Config{Client: c, Requeue: 200 * time.Millisecond, Observe: r.obs.observe,
					Recorder: RecorderOptions{MinInterval: time.Second, Instance: id}},
				// The leader gives the Lease back when stopped (ReleaseOnCancel), so the follower takes it
				// within a RetryPeriod whatever the duration; a long RenewDeadline keeps a leader that a loaded
				// host leaves unscheduled for seconds from losing the Lease before the test stops it.
				LeaderElection: true, Namespace: ns, Name: "explainer", Identity: id,
				LeaseDuration: 45 * time.Second, RenewDeadline: 30 * time.Second, RetryPeriod: 100 * time.Millisecond,
			})
		}()
	}
	defer func() {
		for id, r := range replicas {
			r.stop()
			select {
			case err := <-r.done:
				if err != nil {
					t.Errorf("%s: Run: %v", id, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("%s: Run did not return within 30s of its context's end", id)
			}
		}
	}()

	newPod("first")
	var leader string
	eventually(t, 30*time.Second, "the leader's event on pod first", func() error {
		evs, err := podEvents(ctx, c, ns, "first")
		if err != nil || len(evs) == 0 {
			return fmt.Errorf("no event yet (%v)", err)
		}
		leader = evs[0].ReportingInstance
		return nil
	})
	follower := "replica-a"
	if leader == follower {
		follower = "replica-b"
	}
	if n := replicas[follower].obs.get("first").n; n != 0 {
		t.Errorf("follower %s explained pod first %d times; only the leader %s may", follower, n, leader)
	}

	// The leader stops and releases the Lease; the follower takes it.
	replicas[leader].stop()
	if err := <-replicas[leader].done; err != nil {
		t.Errorf("%s: Run: %v", leader, err)
	}
	delete(replicas, leader)
	newPod("second")
	eventually(t, 30*time.Second, "the new leader's event on pod second", func() error {
		evs, err := podEvents(ctx, c, ns, "second")
		if err != nil || len(evs) == 0 {
			return fmt.Errorf("no event yet (%v)", err)
		}
		if got := evs[0].ReportingInstance; got != follower {
			return fmt.Errorf("event written by %s, want %s", got, follower)
		}
		return nil
	})
	eventually(t, 30*time.Second, "the new leader explained pod first", func() error {
		if ob := replicas[follower].obs.get("first"); ob.n == 0 || ob.err != nil {
			return fmt.Errorf("last result %+v", ob)
		}
		return nil
	})
	evs, err := podEvents(ctx, c, ns, "first")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		var msgs []string
		for _, ev := range evs {
			msgs = append(msgs, ev.ReportingInstance+": "+ev.Message)
		}
		t.Errorf("pod first: %d events after the failover, want the first leader's only: %q", len(evs), msgs)
	}
	if got := replicas[follower].obs.get("first").out; got != Unchanged {
		t.Errorf("new leader on pod first: %v, want %v (it read its predecessor's event)", got, Unchanged)
	}
}

// A replica that loses its Lease (its renewals fail, as when it is cut off from the API server) stops
// explaining and Run returns an error, so that the process exits and restarts as a follower.
func TestLostLeaseEndsRun(t *testing.T) {
	c := fake.NewClientset()
	var lost atomic.Bool
	c.PrependReactor("update", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if lost.Load() {
			return true, nil, apierrors.NewServiceUnavailable("the API server is out of reach")
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, ktesting.NewLogger(t, ktesting.NewConfig()), RunOptions{
			Controller:     Config{Client: c},
			LeaderElection: true, Namespace: "ns", Name: "explainer", Identity: "replica-a",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond,
		})
	}()
	eventually(t, 30*time.Second, "replica-a holds the Lease", func() error {
		l, err := c.CoordinationV1().Leases("ns").Get(ctx, "explainer", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if h := l.Spec.HolderIdentity; h == nil || *h != "replica-a" {
			return fmt.Errorf("holder %v", h)
		}
		return nil
	})
	lost.Store(true)
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("Run returned nil after losing the Lease, want an error")
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return within 30s of losing the Lease")
	}
}
