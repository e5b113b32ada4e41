package taints

import (
	"fmt"
	"math"
	"sort"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Eviction is one allocated claim that the device taint eviction controller evicts, through the pods that
// use it.
type Eviction struct {
	// Claim is the namespace and name of the ResourceClaim.
	Claim types.NamespacedName
	// Pods are the pods in the claim's status.reservedFor; they are the ones deleted.
	Pods []resourceapi.ResourceClaimConsumerReference
	// At is when the eviction is due: the taint's timeAdded, plus the smallest tolerationSeconds of the
	// claim's NoExecute tolerations that match it (negative values count as zero).
	At time.Time
	// Device is the allocated device whose taint is due first, Taint that taint, and Rule the name of the
	// DeviceTaintRule that put it there ("" for a taint of the ResourceSlice).
	Device DeviceID
	Taint  resourceapi.DeviceTaint
	Rule   string
}

// PodEviction is one pod that is evicted, at the earliest time due over all its claims.
type PodEviction struct {
	Namespace, Name string
	UID             types.UID
	At              time.Time
}

// Plan is what the device taint eviction controller does about a set of allocated claims at one moment.
type Plan struct {
	// Now are the claims whose eviction is due at the plan's time or earlier, Later those due afterwards;
	// both ordered by time, then namespace and name.
	Now, Later []Eviction
	// Pods are the pods to evict, ordered by time, then namespace and name.
	Pods []PodEviction
	// RuleStatus is, per DeviceTaintRule of the evaluator, the status the eviction controller would write:
	// the EvictionInProgress condition with its reason and message (see the Reason constants).
	RuleStatus map[string]resourceapi.DeviceTaintRuleStatus
}

// Plan computes the eviction plan at time now for allocated claims (claims without status.allocation are
// skipped), with the devices' own taints read from slices and the rules of the evaluator added. It follows
// the Kubernetes 1.37 device taint eviction controller:
//
//   - only NoExecute taints evict; NoSchedule, None and unknown effects never do;
//   - only tolerations with effect NoExecute (in the claim's status.allocation.devices.results[].tolerations,
//     which the allocator copies from the request) count: one without tolerationSeconds tolerates the taint
//     forever, otherwise the smallest tolerationSeconds (negative counts as zero) delays eviction to
//     timeAdded + tolerationSeconds; a toleration with an empty effect lets a claim be allocated on a
//     NoExecute-tainted device but does not protect it from eviction;
//   - a claim is evicted at the earliest time due over its devices and taints, a pod at the earliest over
//     its claims; pods are taken from status.reservedFor.
//
// A taint without timeAdded (the API server always sets it) counts as added at now. Devices that are not in
// any slice have no taints of their own, but rules match them by the driver, pool and device name recorded in
// the allocation, as for the controller. For each rule the status is the controller's condition: for a
// NoExecute rule the pods it evicts and their namespaces, for a None rule the devices it selects and the pods
// it would evict if its effect were NoExecute, for other effects that they evict nothing.
func (e *Evaluator) Plan(now time.Time, slices []*resourceapi.ResourceSlice, claims []*resourceapi.ResourceClaim) (Plan, error) {
	devices := map[DeviceID]*resourceapi.Device{}
	for i, s := range slices {
		if s == nil {
			return Plan{}, fmt.Errorf("slices[%d] is nil", i)
		}
		for j := range s.Spec.Devices {
			d := &s.Spec.Devices[j]
			id := DeviceID{s.Spec.Driver, s.Spec.Pool.Name, d.Name}
			if _, ok := devices[id]; !ok {
				devices[id] = d
			}
		}
	}
	counts := map[string]*ruleCounts{}
	countsOf := func(name string) *ruleCounts {
		rc := counts[name]
		if rc == nil {
			rc = &ruleCounts{pods: map[types.NamespacedName]bool{}, namespaces: map[string]bool{}}
			counts[name] = rc
		}
		return rc
	}
	countPublished(e, slices, func(r *rule) { countsOf(r.name).publishedDevices++ })
	var plan Plan
	podAt := map[PodEviction]time.Time{}
	for ci, c := range claims {
		if c == nil {
			return Plan{}, fmt.Errorf("claims[%d] is nil", ci)
		}
		if c.Status.Allocation == nil {
			continue
		}
		var best *Eviction
		rulesHit := map[string]bool{}
		for _, res := range c.Status.Allocation.Devices.Results {
			id := DeviceID{res.Driver, res.Pool, res.Device}
			consider := func(t resourceapi.DeviceTaint, ruleName string, asIf bool) {
				if asIf {
					t.Effect = resourceapi.DeviceTaintEffectNoExecute
				}
				if t.Effect != resourceapi.DeviceTaintEffectNoExecute {
					return
				}
				at, evict := dueAt(t, res.Tolerations, now)
				if !evict {
					return
				}
				if ruleName != "" {
					rulesHit[ruleName] = true
				}
				if asIf {
					return
				}
				if best == nil || at.Before(best.At) {
					best = &Eviction{At: at, Device: id, Taint: t, Rule: ruleName}
				}
			}
			// A device that is no longer published keeps no taints of its own, but rules still match the
			// driver, pool and device name of the allocation, as for the eviction controller.
			if dev := devices[id]; dev != nil {
				for _, t := range dev.Taints {
					consider(t, "", false)
				}
			}
			e.each(id.Driver, id.Pool, id.Device, func(r *rule) {
				countsOf(r.name).allocatedDevices++
				// The controller simulates a None rule as NoExecute; other effects never evict.
				switch r.taint.Effect {
				case resourceapi.DeviceTaintEffectNoExecute:
					consider(r.taint, r.name, false)
				case resourceapi.DeviceTaintEffectNone:
					consider(r.taint, r.name, true)
				}
			})
		}
		pods := podsOf(c)
		for name := range rulesHit {
			rc := countsOf(name)
			for _, p := range pods {
				rc.pods[types.NamespacedName{Namespace: c.Namespace, Name: p.Name}] = true
				rc.namespaces[c.Namespace] = true
			}
		}
		if best == nil {
			continue
		}
		best.Claim = types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
		best.Pods = pods
		best.Taint = *best.Taint.DeepCopy()
		if best.At.After(now) {
			plan.Later = append(plan.Later, *best)
		} else {
			plan.Now = append(plan.Now, *best)
		}
		for _, p := range pods {
			k := PodEviction{Namespace: c.Namespace, Name: p.Name, UID: p.UID}
			if at, ok := podAt[k]; !ok || best.At.Before(at) {
				podAt[k] = best.At
			}
		}
	}
	sortEvictions(plan.Now)
	sortEvictions(plan.Later)
	for k, at := range podAt {
		k.At = at
		plan.Pods = append(plan.Pods, k)
	}
	sort.Slice(plan.Pods, func(i, j int) bool {
		a, b := plan.Pods[i], plan.Pods[j]
		if !a.At.Equal(b.At) {
			return a.At.Before(b.At)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	if e != nil {
		plan.RuleStatus = make(map[string]resourceapi.DeviceTaintRuleStatus, len(e.rules))
		for i := range e.rules {
			r := &e.rules[i]
			var n ruleCounts
			if rc := counts[r.name]; rc != nil {
				n = *rc
			}
			plan.RuleStatus[r.name] = ruleStatus(r, n, now)
		}
	}
	return plan, nil
}

// countPublished calls fn for every rule with effect None that selects a device of the newest generation
// of its pool, once per device, as the controller counts "published devices selected" (other rules' counts
// are never shown).
func countPublished(e *Evaluator, slices []*resourceapi.ResourceSlice, fn func(*rule)) {
	if e == nil {
		return
	}
	newest := map[[2]string]int64{}
	for _, s := range slices {
		k := [2]string{s.Spec.Driver, s.Spec.Pool.Name}
		if g, ok := newest[k]; !ok || s.Spec.Pool.Generation > g {
			newest[k] = s.Spec.Pool.Generation
		}
	}
	for _, s := range slices {
		if s.Spec.Pool.Generation != newest[[2]string{s.Spec.Driver, s.Spec.Pool.Name}] {
			continue
		}
		for j := range s.Spec.Devices {
			e.each(s.Spec.Driver, s.Spec.Pool.Name, s.Spec.Devices[j].Name, func(r *rule) {
				if r.taint.Effect == resourceapi.DeviceTaintEffectNone {
					fn(r)
				}
			})
		}
	}
}

// dueAt returns when a NoExecute taint evicts a device allocated with the given tolerations, and false when
// a toleration without tolerationSeconds tolerates it forever.
func dueAt(t resourceapi.DeviceTaint, tolerations []resourceapi.DeviceToleration, now time.Time) (time.Time, bool) {
	added := now
	if t.TimeAdded != nil {
		added = t.TimeAdded.Time
	}
	var seconds int64
	tolerated := false
	for _, tol := range tolerations {
		if tol.Effect != resourceapi.DeviceTaintEffectNoExecute || !ToleratesTaint(tol, t) {
			continue
		}
		if tol.TolerationSeconds == nil {
			return time.Time{}, false
		}
		s := max(*tol.TolerationSeconds, 0)
		if !tolerated || s < seconds {
			seconds = s
		}
		tolerated = true
	}
	// time.Duration holds about 292 years; longer tolerations (the API
	// allows any int64) would overflow into the past and evict now, so they
	// are clamped to the longest duration: evicted centuries later.
	seconds = min(seconds, maxTolerationSeconds)
	return added.Add(time.Duration(seconds) * time.Second), true
}

// maxTolerationSeconds is the longest tolerationSeconds a time.Duration
// can hold.
const maxTolerationSeconds = math.MaxInt64 / int64(time.Second)

func podsOf(c *resourceapi.ResourceClaim) []resourceapi.ResourceClaimConsumerReference {
	var pods []resourceapi.ResourceClaimConsumerReference
	for _, r := range c.Status.ReservedFor {
		if r.APIGroup == "" && r.Resource == "pods" {
			pods = append(pods, r)
		}
	}
	return pods
}

func sortEvictions(ev []Eviction) {
	sort.Slice(ev, func(i, j int) bool {
		a, b := ev[i], ev[j]
		if !a.At.Equal(b.At) {
			return a.At.Before(b.At)
		}
		if a.Claim.Namespace != b.Claim.Namespace {
			return a.Claim.Namespace < b.Claim.Namespace
		}
		return a.Claim.Name < b.Claim.Name
	})
}

// Reasons of the EvictionInProgress condition written by [Evaluator.Plan], as kube-controller-manager's
// device taint eviction controller writes them (pkg/controller/devicetainteviction, Kubernetes 1.37).
const (
	// ReasonPodsPendingEviction: a NoExecute rule with pods still to evict (status True).
	ReasonPodsPendingEviction = "PodsPendingEviction"
	// ReasonNotStarted: a NoExecute rule with no pod to evict. The controller says "Completed" once it has
	// evicted pods since it started; a plan has no such history and never does.
	ReasonNotStarted = "NotStarted"
	// ReasonNoEffect: a rule with effect None; the message says what it would evict as NoExecute.
	ReasonNoEffect = "NoEffect"
	// ReasonOtherEffect: a rule with any other effect (NoSchedule, or one unknown to this version).
	ReasonOtherEffect = "OtherEffect"
)

// ruleCounts are what the controller counts for a rule's condition: pods whose eviction the rule causes
// (would cause, for effect None) and their namespaces, and the devices it selects in the newest generation
// of each pool and among the allocated results.
type ruleCounts struct {
	pods             map[types.NamespacedName]bool
	namespaces       map[string]bool
	publishedDevices int
	allocatedDevices int
}

// ruleStatus is the condition the controller writes (its updateRuleStatus), in its words: the messages are
// the controller's, so a plan's status reads as the cluster's would.
func ruleStatus(r *rule, n ruleCounts, now time.Time) resourceapi.DeviceTaintRuleStatus {
	cond := metav1.Condition{
		Type:               resourceapi.DeviceTaintConditionEvictionInProgress,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: r.generation,
		LastTransitionTime: metav1.NewTime(now),
	}
	pods, namespaces := len(n.pods), len(n.namespaces)
	switch r.taint.Effect {
	case resourceapi.DeviceTaintEffectNoExecute:
		if pods == 0 {
			cond.Reason = ReasonNotStarted
			break
		}
		cond.Status = metav1.ConditionTrue
		cond.Reason = ReasonPodsPendingEviction
		cond.Message = plural(pods, "pod needs", "pods need") + " to be evicted in " + namespacesPhrase(namespaces) + "."
	case resourceapi.DeviceTaintEffectNone:
		cond.Reason = ReasonNoEffect
		cond.Message = plural(n.publishedDevices, "published device", "published devices") + " selected. " +
			plural(n.allocatedDevices, "allocated device", "allocated devices") + " selected. " +
			plural(pods, "pod", "pods") + " would be evicted in " + namespacesPhrase(namespaces) +
			" if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."
	default:
		cond.Reason = ReasonOtherEffect
		cond.Message = "Eviction only happens for the NoExecute effect."
	}
	return resourceapi.DeviceTaintRuleStatus{Conditions: []metav1.Condition{cond}}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func namespacesPhrase(n int) string {
	if n == 1 {
		return "1 namespace"
	}
	return fmt.Sprintf("%d different namespaces", n)
}
