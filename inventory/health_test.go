package inventory_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/inventory"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

// taintStrings renders taints as key=value:effect@minute-added.
func taintStrings(ts []resourceapi.DeviceTaint) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s=%s:%s@%d", strings.TrimPrefix(t.Key, inventory.TaintKeyPrefix), t.Value, t.Effect,
			int(t.TimeAdded.Sub(t0)/time.Minute)))
	}
	return out
}

func TestHealthPolicyTaints(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy inventory.HealthPolicy
		obs    []inventory.Observation
		now    int
		want   []string
	}{
		{"a healthy GPU has no taints", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0)}}, 0, []string{}},
		{"an application XID is informational", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), XIDs: []int{13}}}, 1,
			[]string{"xid=13:None@0"}},
		{"a hardware XID stops scheduling", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), XIDs: []int{48}}}, 1,
			[]string{"xid=48:NoSchedule@0"}},
		{"XID 79 is an XID like any other, as NVIDIA publishes it", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), XIDs: []int{79}}}, 1,
			[]string{"xid=79:NoSchedule@0"}},
		{"configured lost XIDs also mark the GPU lost", inventory.HealthPolicy{LostXIDs: []int{79}}, []inventory.Observation{{Time: at(0), XIDs: []int{79}}}, 1,
			[]string{"gpu-lost=:NoSchedule@0", "xid=79:NoSchedule@0"}},
		{"a lost GPU stops scheduling and never evicts", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), Lost: true}}, 0, []string{"gpu-lost=:NoSchedule@0"}},
		{"an unmonitored GPU is informational", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), Unmonitored: true}}, 0, []string{"unmonitored=:None@0"}},
		{"uncorrectable ECC errors stop scheduling", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), UncorrectableECCErrors: 2}}, 0,
			[]string{"ecc-uncorrectable=:NoSchedule@0"}},
		{"pending retirement and remapping and failed remapping stop scheduling", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), RetiredPagesPending: true, RowRemapPending: true, RowRemapFailed: true}}, 0,
			[]string{"retired-pages-pending=:NoSchedule@0", "row-remap-failed=:NoSchedule@0", "row-remap-pending=:NoSchedule@0"}},
		{"thermal slowdown is informational", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), ThermalSlowdown: true}}, 0,
			[]string{"thermal-slowdown=:None@0"}},
		{"a down NVLink stops scheduling", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), NVLinksDown: 2}}, 0,
			[]string{"nvlink-degraded=:NoSchedule@0"}},
		{"a condition seen again keeps its first time", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), ThermalSlowdown: true}, {Time: at(5), ThermalSlowdown: true}}, 5,
			[]string{"thermal-slowdown=:None@0"}},
		{"a condition gone for less than the clear time stays", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), NVLinksDown: 1}, {Time: at(9)}}, 9, []string{"nvlink-degraded=:NoSchedule@0"}},
		{"a condition gone for the default 10 minutes clears", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), NVLinksDown: 1}, {Time: at(10)}}, 10, []string{}},
		{"taints clear at read time too, without a new observation", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), NVLinksDown: 1}}, 10, []string{}},
		{"a NoSchedule XID stays until the GPU recovers", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}}, {Time: at(500)}}, 1000, []string{"xid=48:NoSchedule@0"}},
		{"a lost GPU stays lost until it recovers", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), Lost: true}, {Time: at(500)}}, 1000, []string{"gpu-lost=:NoSchedule@0"}},
		{"recovery clears XID and lost-GPU taints, not level conditions", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}, Lost: true, NVLinksDown: 1}, {Time: at(5), Recovered: true, NVLinksDown: 1}}, 5,
			[]string{"nvlink-degraded=:NoSchedule@0"}},
		{"an XID in the observation that reports recovery is a new episode", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}}, {Time: at(5), Recovered: true, XIDs: []int{63}}}, 5,
			[]string{"xid=63:NoSchedule@5"}},
		{"an informational XID clears after the clear time", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{13}}}, 10, []string{}},
		{"a configured clear time per condition", inventory.HealthPolicy{ClearAfter: map[inventory.HealthCondition]time.Duration{inventory.ConditionXID: time.Hour}},
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}}, {Time: at(30)}}, 30, []string{"xid=48:NoSchedule@0"}},
		{"a negative clear time never clears", inventory.HealthPolicy{ClearAfter: map[inventory.HealthCondition]time.Duration{inventory.ConditionThermalSlowdown: -1}},
			[]inventory.Observation{{Time: at(0), ThermalSlowdown: true}, {Time: at(1000)}}, 5000, []string{"thermal-slowdown=:None@0"}},
		{"a clear time named for an event condition clears it by time", inventory.HealthPolicy{ClearAfter: map[inventory.HealthCondition]time.Duration{inventory.ConditionGPULost: time.Minute}},
			[]inventory.Observation{{Time: at(0), Lost: true}, {Time: at(1)}}, 1, []string{}},
		{"NoExecute only as an explicit override", inventory.HealthPolicy{Effects: map[inventory.HealthCondition]resourceapi.DeviceTaintEffect{inventory.ConditionGPULost: resourceapi.DeviceTaintEffectNoExecute}},
			[]inventory.Observation{{Time: at(0), Lost: true}}, 0, []string{"gpu-lost=:NoExecute@0"}},
		{"the XID recurring restarts the clear time, not the start", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}}, {Time: at(8), XIDs: []int{48}}, {Time: at(15)}}, 15,
			[]string{"xid=48:NoSchedule@0"}},
		{"after clearing, a new episode starts afresh", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{13}}, {Time: at(20)}, {Time: at(25), XIDs: []int{13}}}, 25,
			[]string{"xid=13:None@25"}},
		{"a device has one XID taint: a later XID replaces it and restarts its time", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}}, {Time: at(3), XIDs: []int{63}}}, 3, []string{"xid=63:NoSchedule@3"}},
		{"an informational XID replaces an informational one", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{13}}, {Time: at(3), XIDs: []int{31}}}, 3, []string{"xid=31:None@3"}},
		{"an informational XID does not lift a NoSchedule one", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}}, {Time: at(3), XIDs: []int{13}}}, 3, []string{"xid=48:NoSchedule@0"}},
		{"effects can be overridden", inventory.HealthPolicy{Effects: map[inventory.HealthCondition]resourceapi.DeviceTaintEffect{inventory.ConditionThermalSlowdown: resourceapi.DeviceTaintEffectNoSchedule}},
			[]inventory.Observation{{Time: at(0), ThermalSlowdown: true}}, 0, []string{"thermal-slowdown=:NoSchedule@0"}},
		{"an empty application list makes every XID a fault", inventory.HealthPolicy{ApplicationXIDs: []int{}},
			[]inventory.Observation{{Time: at(0), XIDs: []int{13}}}, 0, []string{"xid=13:NoSchedule@0"}},
		{"of XIDs in one observation the last counts", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), XIDs: []int{13, 109, 48, 62}}}, 0,
			[]string{"xid=62:NoSchedule@0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s inventory.HealthState
			for _, o := range tc.obs {
				s = tc.policy.Observe(s, o)
			}
			got := taintStrings(tc.policy.Taints(s, at(tc.now)))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("taints = %v, want %v", got, tc.want)
			}
		})
	}
}

// Every condition at once: one taint per key, valid, none evicting.
func TestHealthTaintsAreValidAndNeverEvictByDefault(t *testing.T) {
	var p inventory.HealthPolicy
	var xids []int
	for x := 1; x <= 30; x++ {
		xids = append(xids, x)
	}
	s := p.Observe(inventory.HealthState{}, inventory.Observation{Time: t0, XIDs: xids, Lost: true, ThermalSlowdown: true,
		UncorrectableECCErrors: 1, RetiredPagesPending: true, RowRemapPending: true, RowRemapFailed: true, NVLinksDown: 1, Unmonitored: true})
	ts := p.Taints(s, t0)
	if len(ts) != 9 || len(ts) > resourceapi.DeviceTaintsMaxLength {
		t.Fatalf("%d taints, want one per condition, 9", len(ts))
	}
	keys := map[string]bool{}
	for i, tn := range ts {
		if keys[tn.Key] {
			t.Errorf("two taints with key %s", tn.Key)
		}
		keys[tn.Key] = true
		if tn.Effect == resourceapi.DeviceTaintEffectNoExecute {
			t.Errorf("%s=%s evicts; NVIDIA's driver never does", tn.Key, tn.Value)
		}
		if errs := inventory.ValidateTaint(tn, field.NewPath("taints").Index(i)); len(errs) > 0 {
			t.Error(errs)
		}
	}
}

func TestObserveDoesNotModifyThePreviousState(t *testing.T) {
	var p inventory.HealthPolicy
	s1 := p.Observe(inventory.HealthState{}, inventory.Observation{Time: at(0), NVLinksDown: 1})
	before := marshal(t, s1)
	p.Observe(s1, inventory.Observation{Time: at(5), NVLinksDown: 1})
	if marshal(t, s1) != before {
		t.Error("Observe modified the previous state")
	}
}
