package inventory

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HealthCondition is a kind of unhealthy state a GPU can be in; HealthPolicy turns each into a device taint
// (its key is TaintKey of the condition). Not to be confused with taints.Condition, the devices that carry None
// taints with one key.
type HealthCondition string

// The conditions HealthPolicy turns into taints. Each is published as a taint
// with the key TaintKeyPrefix + condition, for example
// "gpu.nvidia.com/ecc-uncorrectable". XID taints carry the XID number as value.
const (
	// ConditionXID: an XID error was reported for the GPU.
	ConditionXID HealthCondition = "xid"
	// ConditionECCUncorrectable: the volatile count of uncorrectable
	// (double-bit) ECC errors is above zero.
	ConditionECCUncorrectable HealthCondition = "ecc-uncorrectable"
	// ConditionRetiredPagesPending: pages are waiting to be retired, which
	// needs a GPU reset.
	ConditionRetiredPagesPending HealthCondition = "retired-pages-pending"
	// ConditionRowRemapPending: rows are waiting to be remapped, which needs a
	// GPU reset.
	ConditionRowRemapPending HealthCondition = "row-remap-pending"
	// ConditionRowRemapFailed: row remapping failed; the memory is unreliable.
	ConditionRowRemapFailed HealthCondition = "row-remap-failed"
	// ConditionThermalSlowdown: clocks are reduced because the GPU is too hot.
	ConditionThermalSlowdown HealthCondition = "thermal-slowdown"
	// ConditionGPULost: the GPU no longer answers (NVML's GPU_IS_LOST, or an
	// XID in HealthPolicy.LostXIDs such as 79, "fallen off the bus").
	ConditionGPULost HealthCondition = "gpu-lost"
	// ConditionNVLinkDegraded: some NVLinks of the GPU are down.
	ConditionNVLinkDegraded HealthCondition = "nvlink-degraded"
	// ConditionUnmonitored: the GPU's health events cannot be watched (NVML
	// cannot register them); informational.
	ConditionUnmonitored HealthCondition = "unmonitored"
)

// TaintKeyPrefix is the domain of the taint keys HealthPolicy produces. The
// keys live under the driver's domain so that tolerations for GPU health sit
// next to the driver's attributes. gpu.nvidia.com/xid (value: the XID),
// gpu.nvidia.com/gpu-lost and gpu.nvidia.com/unmonitored are NVIDIA's
// (TaintKeyXID, TaintKeyGPULost, TaintKeyUnmonitored in
// cmd/gpu-kubelet-plugin/device_health.go at the commit doc.go names); the
// others are this package's, for signals NVIDIA's driver does not watch.
// Every key is a valid label name.
const TaintKeyPrefix = "gpu.nvidia.com/"

// TaintKey is the taint key of a condition.
func TaintKey(c HealthCondition) string { return TaintKeyPrefix + string(c) }

// DefaultApplicationXIDs are the XIDs caused by the application rather than
// the GPU (13 graphics engine exception, 31 memory page fault, 43 GPU stopped
// processing, 45 preemptive cleanup, 68 video decoder exception, 109 context
// switch timeout) — the list NVIDIA's device plugin ignores. They are
// published with effect None: visible, but scheduling goes on.
var DefaultApplicationXIDs = []int{13, 31, 43, 45, 68, 109}

// DefaultLostXIDs are the XIDs that also mark the GPU lost: none, as in
// NVIDIA's driver, which marks a GPU lost only when NVML answers
// GPU_IS_LOST (Observation.Lost) and publishes XID 79 ("fallen off the bus")
// as an XID taint like any other.
var DefaultLostXIDs = []int{}

// DefaultClearAfter is how long a condition must have been absent before its
// taint is removed, unless HealthPolicy says otherwise.
const DefaultClearAfter = 10 * time.Minute

// HealthPolicy turns observed health signals into device taints. It is pure
// policy: it keeps no state of its own and reads no clock; the caller passes
// observations and the state returned by the previous Observe. The zero value
// is the default policy.
//
// Default effects follow NVIDIA's driver (healthEventToTaint), which never
// evicts: XIDs NoSchedule, application XIDs None, a lost GPU NoSchedule,
// an unmonitored GPU None; of this package's own conditions, uncorrectable
// ECC errors, pending page retirement or row remapping, failed row remapping
// and degraded NVLink NoSchedule, thermal slowdown None. NoExecute is only
// ever an explicit Effects override.
//
// Like NVIDIA's driver (AddOrUpdateTaint), a device has one XID taint: the
// latest XID replaces the value and effect and restarts TimeAdded, except
// that a NoSchedule XID taint is not replaced by an informational one. A
// NoSchedule taint of an event (an XID, a lost GPU) stays until the GPU
// recovers (Observation.Recovered): an event has no end to observe, and
// NVIDIA's driver keeps such a taint until the GPU is back. Other taints —
// None taints and those of conditions read as levels, which recover when the
// signal is gone — clear once absent for ClearAfter.
type HealthPolicy struct {
	// ApplicationXIDs get effect None. Nil means DefaultApplicationXIDs; an
	// empty, non-nil list means none.
	ApplicationXIDs []int
	// LostXIDs mark the GPU lost. Nil means DefaultLostXIDs.
	LostXIDs []int
	// Effects override the default effect per condition. For ConditionXID it
	// applies to XIDs that are neither application nor lost XIDs. NVIDIA's
	// driver never uses NoExecute; setting it here is this package's own.
	Effects map[HealthCondition]resourceapi.DeviceTaintEffect
	// ClearAfter overrides, per condition, how long it must be absent before
	// its taint is removed. A negative duration means never. Naming an
	// event condition here (ConditionXID, ConditionGPULost) also clears its
	// NoSchedule taint by time instead of waiting for Observation.Recovered.
	ClearAfter map[HealthCondition]time.Duration
	// DefaultClearAfter applies to conditions not in ClearAfter; zero means
	// DefaultClearAfter.
	DefaultClearAfter time.Duration
}

// Observation is one reading of a GPU's health signals at Time.
type Observation struct {
	// Time is when the signals were read.
	Time time.Time
	// XIDs are the XID events seen since the previous observation.
	XIDs []int
	// UncorrectableECCErrors is the volatile count of uncorrectable ECC errors.
	UncorrectableECCErrors uint64
	// RetiredPagesPending: pages wait for retirement.
	RetiredPagesPending bool
	// RowRemapPending: rows wait for remapping.
	RowRemapPending bool
	// RowRemapFailed: a row remapping failed.
	RowRemapFailed bool
	// ThermalSlowdown: clocks are throttled for temperature.
	ThermalSlowdown bool
	// Lost: the GPU did not answer.
	Lost bool
	// NVLinksDown is the number of NVLinks that are down.
	NVLinksDown int
	// Unmonitored: the GPU's health events could not be registered.
	Unmonitored bool
	// Recovered: the GPU was reset or rediscovered healthy since the last
	// observation. It ends the XID and lost-GPU conditions seen before this
	// observation.
	Recovered bool
}

// HealthState is what HealthPolicy remembers of one device (a GPU or a MIG
// device, kept by its UUID) between observations: the conditions that are active or not yet cleared. Its zero
// value is a healthy GPU. It is a plain value and can be stored.
type HealthState struct {
	// Active lists the conditions, sorted by key and value.
	Active []ActiveCondition `json:"active,omitempty"`
}

// ActiveCondition is a condition with when it started and when it was last seen.
type ActiveCondition struct {
	Condition HealthCondition `json:"condition"`
	// Value distinguishes instances of a condition, the XID number for XIDs.
	Value string `json:"value,omitempty"`
	// Since is when the condition was first seen in this episode; it becomes
	// the taint's TimeAdded.
	Since time.Time `json:"since"`
	// LastSeen is the last observation that showed the condition.
	LastSeen time.Time `json:"lastSeen"`
}

// Observe returns the state after obs, given the state before it. Conditions
// seen in obs are refreshed (keeping their start); conditions absent for at
// least their ClearAfter are dropped. prev is not modified.
func (p HealthPolicy) Observe(prev HealthState, obs Observation) HealthState {
	type key = activeKey
	byKey := map[key]ActiveCondition{}
	for _, a := range prev.Active {
		if obs.Recovered && (a.Condition == ConditionXID || a.Condition == ConditionGPULost) {
			continue
		}
		byKey[key{a.Condition, a.Value}] = a
	}
	seen := func(c HealthCondition, v string) {
		k := key{c, v}
		a, ok := byKey[k]
		if !ok {
			a = ActiveCondition{Condition: c, Value: v, Since: obs.Time}
		}
		a.LastSeen = obs.Time
		byKey[k] = a
	}
	lost := p.LostXIDs
	if lost == nil {
		lost = DefaultLostXIDs
	}
	for _, x := range obs.XIDs {
		p.seenXID(byKey, strconv.Itoa(x), obs.Time)
		if slices.Contains(lost, x) {
			seen(ConditionGPULost, "")
		}
	}
	if obs.UncorrectableECCErrors > 0 {
		seen(ConditionECCUncorrectable, "")
	}
	if obs.RetiredPagesPending {
		seen(ConditionRetiredPagesPending, "")
	}
	if obs.RowRemapPending {
		seen(ConditionRowRemapPending, "")
	}
	if obs.RowRemapFailed {
		seen(ConditionRowRemapFailed, "")
	}
	if obs.ThermalSlowdown {
		seen(ConditionThermalSlowdown, "")
	}
	if obs.Lost {
		seen(ConditionGPULost, "")
	}
	if obs.NVLinksDown > 0 {
		seen(ConditionNVLinkDegraded, "")
	}
	if obs.Unmonitored {
		seen(ConditionUnmonitored, "")
	}
	var next HealthState
	for _, a := range byKey {
		if a.LastSeen.Equal(obs.Time) || !p.cleared(a, obs.Time) {
			next.Active = append(next.Active, a)
		}
	}
	slices.SortFunc(next.Active, compareActive)
	return next
}

// activeKey identifies an active condition: the condition and its value.
type activeKey struct {
	c HealthCondition
	v string
}

// seenXID records XID value at t in byKey, which holds at most one XID
// condition: the same XID refreshes it; another replaces it (a new start, as
// NVIDIA's AddOrUpdateTaint resets TimeAdded when value or effect change)
// unless the present one stops scheduling and the new one is informational.
func (p HealthPolicy) seenXID(byKey map[activeKey]ActiveCondition, value string, t time.Time) {
	for k, a := range byKey {
		if k.c != ConditionXID {
			continue
		}
		if a.Value == value {
			a.LastSeen = t
			byKey[k] = a
			return
		}
		if p.Effect(ConditionXID, a.Value) != resourceapi.DeviceTaintEffectNone && p.Effect(ConditionXID, value) == resourceapi.DeviceTaintEffectNone {
			return
		}
		delete(byKey, k)
	}
	byKey[activeKey{ConditionXID, value}] = ActiveCondition{Condition: ConditionXID, Value: value, Since: t, LastSeen: t}
}

func compareActive(x, y ActiveCondition) int {
	if c := strings.Compare(string(x.Condition), string(y.Condition)); c != 0 {
		return c
	}
	// XID values sort numerically.
	xi, xerr := strconv.Atoi(x.Value)
	yi, yerr := strconv.Atoi(y.Value)
	if xerr == nil && yerr == nil {
		return cmp.Compare(xi, yi)
	}
	return strings.Compare(x.Value, y.Value)
}

// cleared reports whether a has been absent long enough at now.
func (p HealthPolicy) cleared(a ActiveCondition, now time.Time) bool {
	d, ok := p.ClearAfter[a.Condition]
	if !ok && (a.Condition == ConditionXID || a.Condition == ConditionGPULost) &&
		p.Effect(a.Condition, a.Value) != resourceapi.DeviceTaintEffectNone {
		return false // until Observation.Recovered
	}
	if !ok {
		d = p.DefaultClearAfter
		if d == 0 {
			d = DefaultClearAfter
		}
	}
	if d < 0 {
		return false
	}
	return !now.Before(a.LastSeen.Add(d))
}

// Effect is the taint effect of a condition; value is the XID for ConditionXID.
func (p HealthPolicy) Effect(c HealthCondition, value string) resourceapi.DeviceTaintEffect {
	if c == ConditionXID {
		x, err := strconv.Atoi(value)
		app := p.ApplicationXIDs
		if app == nil {
			app = DefaultApplicationXIDs
		}
		lost := p.LostXIDs
		if lost == nil {
			lost = DefaultLostXIDs
		}
		switch {
		case err == nil && slices.Contains(app, x):
			return resourceapi.DeviceTaintEffectNone
		case err == nil && slices.Contains(lost, x):
			return p.effect(ConditionGPULost)
		}
	}
	return p.effect(c)
}

func (p HealthPolicy) effect(c HealthCondition) resourceapi.DeviceTaintEffect {
	if e, ok := p.Effects[c]; ok {
		return e
	}
	switch c {
	case ConditionThermalSlowdown, ConditionUnmonitored:
		return resourceapi.DeviceTaintEffectNone
	default:
		return resourceapi.DeviceTaintEffectNoSchedule
	}
}

// Taints returns the taints of a GPU in state s at now: one per condition not
// yet cleared, TimeAdded its start. There are at most 16, the API's limit per
// device; when more conditions are active the most severe are kept (NoExecute,
// then NoSchedule, then None; then by key and value). Pass them in
// Options.Taints under the device's UUID: a GPU's go on the GPU and all its
// MIG devices, a MIG device's on that MIG device.
func (p HealthPolicy) Taints(s HealthState, now time.Time) []resourceapi.DeviceTaint {
	var out []resourceapi.DeviceTaint
	for _, a := range s.Active {
		if p.cleared(a, now) && !a.LastSeen.Equal(now) {
			continue
		}
		out = append(out, resourceapi.DeviceTaint{
			Key:       TaintKey(a.Condition),
			Value:     a.Value,
			Effect:    p.Effect(a.Condition, a.Value),
			TimeAdded: &metav1.Time{Time: a.Since},
		})
	}
	severity := func(e resourceapi.DeviceTaintEffect) int {
		switch e {
		case resourceapi.DeviceTaintEffectNoExecute:
			return 0
		case resourceapi.DeviceTaintEffectNoSchedule:
			return 1
		default:
			return 2
		}
	}
	if len(out) > resourceapi.DeviceTaintsMaxLength {
		slices.SortStableFunc(out, func(x, y resourceapi.DeviceTaint) int {
			return cmp.Compare(severity(x.Effect), severity(y.Effect))
		})
		out = out[:resourceapi.DeviceTaintsMaxLength]
		slices.SortStableFunc(out, func(x, y resourceapi.DeviceTaint) int {
			return compareActive(ActiveCondition{Condition: HealthCondition(strings.TrimPrefix(x.Key, TaintKeyPrefix)), Value: x.Value},
				ActiveCondition{Condition: HealthCondition(strings.TrimPrefix(y.Key, TaintKeyPrefix)), Value: y.Value})
		})
	}
	return out
}
