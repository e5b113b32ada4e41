package explainer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestWaitForAnObjectIsRecordedAfterTheGrace: a pod whose claim is not in the informers' caches is
// recorded as waiting only once Config.WaitGrace has passed since it was first found waiting; a claim
// that arrives within the grace leaves no Event. Informers deliver each kind on its own, so a pod
// created right after its claim is often seen first: without the grace such a pod got a Warning.
func TestWaitForAnObjectIsRecordedAfterTheGrace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "team"
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := NewController(klog.Background(), Config{Client: client, WaitGrace: 10 * time.Second,
		Recorder: RecorderOptions{Clock: clk, MinInterval: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	create := func(obj interface{ GetName() string }, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("create %s: %v", obj.GetName(), err)
		}
	}
	create(client.CoreV1().Nodes().Create(ctx, node("n1"), metav1.CreateOptions{}))
	create(client.ResourceV1().ResourceSlices().Create(ctx, slice("s1", "n1", 1, dev{"d0", "l4", 0}), metav1.CreateOptions{}))
	create(client.ResourceV1().DeviceClasses().Create(ctx, class("l4", "l4"), metav1.CreateOptions{}))
	for _, name := range []string{"late", "never"} {
		p := pod(ns, name, name, "", "")
		unschedulable(p)
		create(client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}))
	}
	startCtx, stop := context.WithCancel(ctx)
	defer func() {
		stop()
		c.Shutdown()
	}()
	if err := c.Start(startCtx); err != nil {
		t.Fatal(err)
	}

	events := func(name string) []v1.Event {
		t.Helper()
		evs, err := podEvents(ctx, client, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	syncPod := func(name string) time.Duration {
		t.Helper()
		retry, err := c.sync(ctx, ns+"/"+name)
		if err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
		return retry
	}
	for _, name := range []string{"late", "never"} {
		if retry := syncPod(name); retry != 10*time.Second {
			t.Errorf("pod %s: retry in %v, want the whole grace of 10s", name, retry)
		}
	}
	clk.Step(4 * time.Second)
	if retry := syncPod("never"); retry != 6*time.Second {
		t.Errorf("pod never, 4s later: retry in %v, want the 6s left of the grace", retry)
	}

	// The claim of pod late arrives within the grace: the pod is explained, and fits, without an Event.
	create(client.ResourceV1().ResourceClaims(ns).Create(ctx, claim(ns, "late", "l4", 1, false), metav1.CreateOptions{}))
	eventually(t, 30*time.Second, "the claim in the cluster's snapshot", func() error {
		if _, ok := c.cluster.Snapshot().Claim(ns, "late"); !ok {
			return errors.New("not yet")
		}
		return nil
	})
	if retry := syncPod("late"); retry != 0 {
		t.Errorf("pod late with its claim: retry in %v, want none", retry)
	}

	clk.Step(6 * time.Second)
	syncPod("never")
	if evs := events("never"); len(evs) != 1 || !strings.Contains(evs[0].Message, "never") {
		t.Errorf("pod never after the grace: events %+v, want one naming its claim", evs)
	}
	if evs := events("late"); len(evs) != 0 {
		t.Errorf("pod late: %d events, want none (its claim came within the grace)", len(evs))
	}
}
