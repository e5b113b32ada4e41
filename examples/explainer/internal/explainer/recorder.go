package explainer

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
)

const (
	// EventReason is the reason of the Events the explainer writes.
	EventReason = "DRAUnschedulable"
	// ConditionType is the pod condition the explainer writes with RecorderOptions.Condition.
	ConditionType v1.PodConditionType = "dralloc.dev/DRAUnschedulable"
	// Component is the Events' source.component and reportingComponent.
	Component = "dralloc-explainer"
	// BlockersAnnotation is the annotation of an Event that holds the explanation's [Result.Blockers],
	// so that a new leader tells a changed set of blockers from the same one.
	BlockersAnnotation = "dralloc.dev/blockers"
)

// Reasons of the condition ConditionType when it is False: what ended the pod's wait.
const (
	// ConditionReasonScheduled: the pod is bound to a node.
	ConditionReasonScheduled = "Scheduled"
	// ConditionReasonFits: dralloc finds a node for the pod (kube-scheduler has not retried yet, or
	// what keeps it pending is not DRA).
	ConditionReasonFits = ReasonFits
	// ConditionReasonTerminating: the pod is being deleted.
	ConditionReasonTerminating = "Terminating"
	// ConditionReasonNotUnschedulable: kube-scheduler no longer marks the pod unschedulable, or it no
	// longer uses DRA.
	ConditionReasonNotUnschedulable = "NotUnschedulable"
)

// RecorderOptions configure a [Recorder].
type RecorderOptions struct {
	// MinInterval is the least time between two Events on one pod; a changed explanation within it is
	// written once the interval has passed. 0 means one minute.
	MinInterval time.Duration
	// Condition also writes the pod condition ConditionType (status True, the dominant reason and the
	// message) through the pods/status subresource. The controller sets it False once the pod is
	// bound, fits, is being deleted or is no longer unschedulable ([Recorder.Resolve]).
	Condition bool
	// Instance is the Events' reportingInstance and source.host (the pod name of this replica).
	Instance string
	// Clock is the time source; nil means the real clock.
	Clock clock.Clock
}

// Recorder writes explanations onto pods: an Event of type Warning and reason DRAUnschedulable,
// only when the message or the set of blockers ([Result.Blockers]) differs from the last one written
// for the pod, and at most once per MinInterval per pod. It remembers the last message per pod UID; a Recorder that has not seen a pod
// (a new leader after a failover) first reads the pod's Events, so that it does not repeat the last
// one. Safe for concurrent use.
//
// It writes core/v1 Events itself rather than through client-go's events library
// (k8s.io/client-go/tools/events), whose broadcaster keys its series by type, reason, action,
// reporting controller and instance, regarding and related object, not by note or annotations
// (eventBroadcasterImpl.recordToSink, getKey): a changed explanation for a pod within six minutes of
// the last (finishTime) would only raise the series count of the earlier Event, whose note and blockers
// annotation stay the old ones, and a new explanation must be a new Event. The library also writes
// asynchronously and drops what fails after its retries, where Record reports a failed write (the
// records_total{outcome="failed"} count and the retry through the work queue). The rate limit the
// library would add is MinInterval here, per pod.
type Recorder struct {
	client kubernetes.Interface
	opts   RecorderOptions

	mu   sync.Mutex
	last map[podID]written
}

// podID names a pod; the UID tells a pod from an earlier one of the same name, and the name tells
// pods apart that have no UID yet (a fake clientset, objects built in memory).
type podID struct {
	namespace, name string
	uid             types.UID
}

func idOf(p *v1.Pod) podID { return podID{p.Namespace, p.Name, p.UID} }

type written struct {
	message, blockers string
	at                time.Time
}

// Outcome is what Record did.
type Outcome int

const (
	// Written means an Event was created.
	Written Outcome = iota
	// Unchanged means the pod's last Event says the same; nothing was written.
	Unchanged
	// Deferred means the message changed within MinInterval; call again after the returned delay.
	Deferred
)

func (o Outcome) String() string {
	switch o {
	case Written:
		return "written"
	case Unchanged:
		return "unchanged"
	case Deferred:
		return "deferred"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// NewRecorder returns a Recorder that writes with client.
func NewRecorder(client kubernetes.Interface, opts RecorderOptions) *Recorder {
	if opts.MinInterval <= 0 {
		opts.MinInterval = time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Recorder{client: client, opts: opts, last: map[podID]written{}}
}

// Record writes the result for the pod unless it repeats the last one or comes too soon after it. For
// Deferred, retry is how long to wait.
func (r *Recorder) Record(ctx context.Context, pod *v1.Pod, res Result) (out Outcome, retry time.Duration, err error) {
	r.mu.Lock()
	prev, known := r.last[idOf(pod)]
	r.mu.Unlock()
	if !known {
		if prev, known, err = r.lastEvent(ctx, pod); err != nil {
			return 0, 0, err
		}
	}
	now := r.opts.Clock.Now()
	// The message names the first blocker and how many others: another claim taking a device in place of
	// one that let go leaves it as it was, yet the pod now waits for someone else.
	if known && prev.message == res.Message && prev.blockers == res.Blockers {
		r.remember(idOf(pod), prev)
		// The Event stands, but the condition may have been set False in between (the pod fit for a
		// while) or never written (the write failed after the Event's).
		if r.opts.Condition && !ConditionTrue(pod) {
			if err := r.writeCondition(ctx, pod, res, now); err != nil {
				return Unchanged, 0, err
			}
		}
		return Unchanged, 0, nil
	}
	if known {
		if wait := prev.at.Add(r.opts.MinInterval).Sub(now); wait > 0 {
			r.remember(idOf(pod), prev)
			return Deferred, wait, nil
		}
	}
	if err := r.writeEvent(ctx, pod, res, now); err != nil {
		return 0, 0, err
	}
	r.remember(idOf(pod), written{message: res.Message, blockers: res.Blockers, at: now})
	if r.opts.Condition {
		if err := r.writeCondition(ctx, pod, res, now); err != nil {
			return Written, 0, err
		}
	}
	return Written, 0, nil
}

// ConditionTrue reports whether the pod has the condition ConditionType with status True.
func ConditionTrue(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == ConditionType {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// toResolve reports a pod whose condition ConditionType Resolve changes: True, or on a bound pod False
// for another reason than ConditionReasonScheduled (it fit by dralloc's answer before kube-scheduler
// bound it).
func toResolve(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == ConditionType {
			return c.Status == v1.ConditionTrue || pod.Spec.NodeName != "" && c.Reason != ConditionReasonScheduled
		}
	}
	return false
}

// Resolve sets the condition ConditionType of the pod False, when it is True, with what ended the wait:
// ConditionReasonScheduled for a bound pod, ConditionReasonTerminating for one being deleted, else
// reason (ConditionReasonNotUnschedulable when empty). It reads the pod from the API server, so that it
// acts on the pod as it is now, and only on the pod with this UID (not a new one of the same name); a
// pod that is gone has nothing to resolve. A bound pod's False condition of another reason becomes
// ConditionReasonScheduled.
//
// Without RecorderOptions.Condition it does nothing: a condition left by an earlier run with it stays,
// since this explainer is not granted the write (deploy/overlays/pod-condition grants it with the flag).
func (r *Recorder) Resolve(ctx context.Context, namespace, name string, uid types.UID, reason string) error {
	if !r.opts.Condition {
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := r.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if uid != "" && cur.UID != uid || !toResolve(cur) {
			return nil
		}
		cond := v1.PodCondition{Type: ConditionType, Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(r.opts.Clock.Now())}
		switch {
		case cur.Spec.NodeName != "":
			cond.Reason, cond.Message = ConditionReasonScheduled, "bound to node "+cur.Spec.NodeName
		case cur.DeletionTimestamp != nil:
			cond.Reason, cond.Message = ConditionReasonTerminating, "the pod is being deleted"
		case reason == ConditionReasonFits:
			cond.Reason, cond.Message = reason, "dralloc finds a node for the pod's devices"
		default:
			cond.Reason, cond.Message = ConditionReasonNotUnschedulable, "kube-scheduler no longer marks the pod unschedulable for its devices"
		}
		// Merged by type, as the condition was written; the resourceVersion read makes the patch
		// conditional (the API server refuses it with a conflict when the pod changed since, and the
		// pod is read again), so a pod bound or marked again meanwhile is not overwritten.
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": cur.ResourceVersion},
			"status":   map[string]any{"conditions": []v1.PodCondition{cond}},
		})
		if err != nil {
			return err
		}
		_, err = r.client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("resolve condition of pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// Forget drops what the Recorder remembers of a pod (it was scheduled or deleted).
func (r *Recorder) Forget(namespace, name string, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, podID{namespace, name, uid})
}

func (r *Recorder) remember(id podID, w written) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[id] = w
}

// lastEvent is the newest DRAUnschedulable Event of the pod in the API, if any. The field selector
// narrows the list on the server; the filter is repeated here, where a selector is not applied (a
// fake clientset).
func (r *Recorder) lastEvent(ctx context.Context, pod *v1.Pod) (written, bool, error) {
	sel := fields.Set{"involvedObject.name": pod.Name, "involvedObject.uid": string(pod.UID), "reason": EventReason}.AsSelector().String()
	list, err := r.client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return written{}, false, fmt.Errorf("list events of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var out written
	found := false
	for i := range list.Items {
		ev := &list.Items[i]
		if ev.InvolvedObject.UID != pod.UID || ev.InvolvedObject.Name != pod.Name || ev.Reason != EventReason {
			continue
		}
		at := ev.LastTimestamp.Time
		if at.IsZero() {
			at = ev.EventTime.Time
		}
		if !found || at.After(out.at) {
			out, found = written{message: ev.Message, blockers: ev.Annotations[BlockersAnnotation], at: at}, true
		}
	}
	return out, found, nil
}

func (r *Recorder) writeEvent(ctx context.Context, pod *v1.Pod, res Result, now time.Time) error {
	t := metav1.NewTime(now)
	msg := res.Message
	ev := &v1.Event{
		// As client-go's recorder names events: the object's name and the time in hex.
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, now.UnixNano()), Namespace: pod.Namespace},
		InvolvedObject: v1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion,
		},
		Reason:              EventReason,
		Message:             msg,
		Type:                v1.EventTypeWarning,
		Source:              v1.EventSource{Component: Component, Host: r.opts.Instance},
		FirstTimestamp:      t,
		LastTimestamp:       t,
		Count:               1,
		ReportingController: Component,
		ReportingInstance:   r.opts.Instance,
	}
	if res.Blockers != "" {
		ev.Annotations = map[string]string{BlockersAnnotation: res.Blockers}
	}
	if _, err := r.client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create event for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// writeCondition patches the condition in; a strategic merge patch merges pod conditions by type, so
// the scheduler's PodScheduled condition is left alone.
func (r *Recorder) writeCondition(ctx context.Context, pod *v1.Pod, res Result, now time.Time) error {
	cond := v1.PodCondition{
		Type: ConditionType, Status: v1.ConditionTrue, Reason: res.Reason, Message: res.Message,
		LastTransitionTime: metav1.NewTime(now),
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.PodCondition{cond}}})
	if err != nil {
		return err
	}
	if _, err := r.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("patch condition of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
