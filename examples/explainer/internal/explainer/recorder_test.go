package explainer

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func events(t *testing.T, c kubernetes.Interface, ns string) []v1.Event {
	t.Helper()
	l, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func TestRecorderDeduplicatesAndRateLimits(t *testing.T) {
	ctx := context.Background()
	p := pod("ns", "train", "c", "", "")
	p.UID = "uid-1"
	c := fake.NewClientset(p)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRecorder(c, RecorderOptions{MinInterval: time.Minute, Clock: clk, Instance: "replica-a"})
	step := func(name string, res Result, want Outcome, wantRetry time.Duration, wantEvents int) {
		t.Helper()
		out, retry, err := r.Record(ctx, p, res)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out != want || retry != wantRetry {
			t.Errorf("%s: %v after %v, want %v after %v", name, out, retry, want, wantRetry)
		}
		if got := len(events(t, c, "ns")); got != wantEvents {
			t.Errorf("%s: %d events, want %d", name, got, wantEvents)
		}
	}
	a := Result{Message: "2 nodes: class gpu matched no device", Reason: "ClassSelectorFalse"}
	b := Result{Message: "2 nodes: 1 of 1 matching device allocated to ResourceClaim ns/other", Reason: "AlreadyAllocated"}

	step("first explanation", a, Written, 0, 1)
	ev := events(t, c, "ns")[0]
	if ev.Type != v1.EventTypeWarning || ev.Reason != EventReason || ev.Message != a.Message || ev.InvolvedObject.UID != "uid-1" ||
		ev.InvolvedObject.Kind != "Pod" || ev.Source.Component != Component || ev.ReportingInstance != "replica-a" {
		t.Errorf("event %+v", ev)
	}
	step("same explanation", a, Unchanged, 0, 1)
	clk.Step(20 * time.Second)
	step("changed within the interval", b, Deferred, 40*time.Second, 1)
	clk.Step(40 * time.Second)
	step("changed after the interval", b, Written, 0, 2)
	step("same again", b, Unchanged, 0, 2)

	// A new leader remembers nothing; it reads the pod's last event instead of repeating it.
	r = NewRecorder(c, RecorderOptions{MinInterval: time.Minute, Clock: clk})
	step("after failover, same", b, Unchanged, 0, 2)
	r = NewRecorder(c, RecorderOptions{MinInterval: time.Minute, Clock: clk})
	step("after failover, changed within the interval", a, Deferred, time.Minute, 2)
	r.Forget(p.Namespace, p.Name, p.UID)
	clk.Step(time.Minute)
	step("forgotten, changed after the interval", a, Written, 0, 3)
}

// TestRecorderWritesWhenTheBlockersChange: the same message with another set of blockers (a claim took
// a device in place of one that let go) is a new explanation, written once MinInterval has passed; a new
// leader reads the set from the last Event.
func TestRecorderWritesWhenTheBlockersChange(t *testing.T) {
	ctx := context.Background()
	p := pod("ns", "train", "c", "", "")
	p.UID = "uid-1"
	c := fake.NewClientset(p)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRecorder(c, RecorderOptions{MinInterval: time.Minute, Clock: clk})
	msg := "2 nodes: claim ns/c, request \"gpu\": 1 of 2 matching devices allocated to ResourceClaim ns/a and 1 other"
	step := func(name string, blockers string, want Outcome, wantEvents int) {
		t.Helper()
		out, _, err := r.Record(ctx, p, Result{Message: msg, Reason: "AlreadyAllocated", Blockers: blockers})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out != want {
			t.Errorf("%s: %v, want %v", name, out, want)
		}
		if got := len(events(t, c, "ns")); got != wantEvents {
			t.Errorf("%s: %d events, want %d", name, got, wantEvents)
		}
	}
	step("held by a and b", "ab", Written, 1)
	if got := events(t, c, "ns")[0].Annotations[BlockersAnnotation]; got != "ab" {
		t.Errorf("event annotation %s=%q, want %q", BlockersAnnotation, got, "ab")
	}
	step("the same blockers", "ab", Unchanged, 1)
	step("b let go, c took its device, within the interval", "ac", Deferred, 1)
	clk.Step(time.Minute)
	step("after the interval", "ac", Written, 2)
	r = NewRecorder(c, RecorderOptions{MinInterval: time.Minute, Clock: clk})
	step("after failover, the same blockers", "ac", Unchanged, 2)
	r = NewRecorder(c, RecorderOptions{MinInterval: time.Minute, Clock: clk})
	clk.Step(time.Minute)
	step("after failover, other blockers", "ab", Written, 3)
}

// Pods are told apart by UID, and by name where they have none (a fake clientset gives none): two
// pods with the same explanation get one event each, and each its own deduplication.
func TestRecorderKeepsPodsApart(t *testing.T) {
	for _, uids := range [][2]string{{"uid-a", "uid-b"}, {"", ""}} {
		ctx := context.Background()
		p1, p2 := pod("ns", "a", "c", "", ""), pod("ns", "b", "c", "", "")
		p1.UID, p2.UID = types.UID(uids[0]), types.UID(uids[1])
		c := fake.NewClientset(p1, p2)
		clk := clocktesting.NewFakeClock(time.Unix(0, 0))
		r := NewRecorder(c, RecorderOptions{Clock: clk})
		res := Result{Message: "same words", Reason: "ClassSelectorFalse"}
		for _, p := range []*v1.Pod{p1, p2} {
			clk.Step(time.Second) // events named by the time, as client-go names them
			if out, _, err := r.Record(ctx, p, res); err != nil || out != Written {
				t.Errorf("UIDs %q: pod %s: %v, %v; want written", uids, p.Name, out, err)
			}
		}
		for _, p := range []*v1.Pod{p1, p2} {
			if out, _, err := r.Record(ctx, p, res); err != nil || out != Unchanged {
				t.Errorf("UIDs %q: pod %s again: %v, %v; want unchanged", uids, p.Name, out, err)
			}
		}
		if got := len(events(t, c, "ns")); got != 2 {
			t.Errorf("UIDs %q: %d events, want one per pod", uids, got)
		}
	}
}

func TestRecorderWritesCondition(t *testing.T) {
	ctx := context.Background()
	p := pod("ns", "train", "c", "", "")
	p.UID = "uid-1"
	unschedulable(p)
	c := fake.NewClientset(p)
	r := NewRecorder(c, RecorderOptions{Condition: true})
	res := Result{Message: "2 nodes: class gpu matched no device", Reason: "ClassSelectorFalse"}
	if _, _, err := r.Record(ctx, p, res); err != nil {
		t.Fatal(err)
	}
	got, err := c.CoreV1().Pods("ns").Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := condition(got)
	if cond == nil || cond.Status != v1.ConditionTrue || cond.Reason != res.Reason || cond.Message != res.Message {
		t.Fatalf("condition %+v, want %s True %s", cond, ConditionType, res.Reason)
	}
	if !Unschedulable(got) {
		t.Errorf("the scheduler's PodScheduled condition was lost: %+v", got.Status.Conditions)
	}
}

// Without Condition the explainer is granted no write to pods' status (deploy/base/rbac.yaml): a condition
// True left by an earlier run with it is not touched, and the pod is not even read.
func TestRecorderResolvesOnlyWithCondition(t *testing.T) {
	ctx := context.Background()
	p := pod("ns", "train", "c", "", "")
	p.UID = "uid-1"
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: ConditionType, Status: v1.ConditionTrue, Reason: "ClassSelectorFalse"})
	c := fake.NewClientset(p)
	c.ClearActions()
	if err := NewRecorder(c, RecorderOptions{}).Resolve(ctx, "ns", "train", "uid-1", ""); err != nil {
		t.Fatal(err)
	}
	if a := c.Actions(); len(a) != 0 {
		t.Errorf("Resolve without Condition made %d requests, first %s %s; want none", len(a), a[0].GetVerb(), a[0].GetResource().Resource)
	}
	// With it, the same call reads the pod and sets the condition False.
	if err := NewRecorder(c, RecorderOptions{Condition: true}).Resolve(ctx, "ns", "train", "uid-1", ""); err != nil {
		t.Fatal(err)
	}
	got, err := c.CoreV1().Pods("ns").Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cond := condition(got); cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != ConditionReasonNotUnschedulable {
		t.Errorf("condition %+v, want False %s", cond, ConditionReasonNotUnschedulable)
	}
}
