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
		{"XID 79 means the GPU fell off the bus and evicts", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), XIDs: []int{79}}}, 1,
			[]string{"gpu-lost=:NoExecute@0", "xid=79:NoExecute@0"}},
		{"a lost GPU evicts", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), Lost: true}}, 0, []string{"gpu-lost=:NoExecute@0"}},
		{"uncorrectable ECC errors stop scheduling", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), UncorrectableECCErrors: 2}}, 0,
			[]string{"ecc-uncorrectable=:NoSchedule@0"}},
		{"pending retirement and remapping stop scheduling, failed remapping evicts", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), RetiredPagesPending: true, RowRemapPending: true, RowRemapFailed: true}}, 0,
			[]string{"retired-pages-pending=:NoSchedule@0", "row-remap-failed=:NoExecute@0", "row-remap-pending=:NoSchedule@0"}},
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
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}}}, 10, []string{}},
		{"a configured clear time per condition", inventory.HealthPolicy{ClearAfter: map[inventory.HealthCondition]time.Duration{inventory.ConditionXID: time.Hour}},
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}}, {Time: at(30)}}, 30, []string{"xid=48:NoSchedule@0"}},
		{"a negative clear time never clears", inventory.HealthPolicy{ClearAfter: map[inventory.HealthCondition]time.Duration{inventory.ConditionGPULost: -1}},
			[]inventory.Observation{{Time: at(0), Lost: true}, {Time: at(1000)}}, 5000, []string{"gpu-lost=:NoExecute@0"}},
		{"the XID recurring restarts the clear time, not the start", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}}, {Time: at(8), XIDs: []int{48}}, {Time: at(15)}}, 15,
			[]string{"xid=48:NoSchedule@0"}},
		{"after clearing, a new episode starts afresh", inventory.HealthPolicy{},
			[]inventory.Observation{{Time: at(0), XIDs: []int{48}}, {Time: at(20)}, {Time: at(25), XIDs: []int{48}}}, 25,
			[]string{"xid=48:NoSchedule@25"}},
		{"effects can be overridden", inventory.HealthPolicy{Effects: map[inventory.HealthCondition]resourceapi.DeviceTaintEffect{inventory.ConditionThermalSlowdown: resourceapi.DeviceTaintEffectNoSchedule}},
			[]inventory.Observation{{Time: at(0), ThermalSlowdown: true}}, 0, []string{"thermal-slowdown=:NoSchedule@0"}},
		{"an empty application list makes every XID a fault", inventory.HealthPolicy{ApplicationXIDs: []int{}},
			[]inventory.Observation{{Time: at(0), XIDs: []int{13}}}, 0, []string{"xid=13:NoSchedule@0"}},
		{"XIDs sort numerically", inventory.HealthPolicy{}, []inventory.Observation{{Time: at(0), XIDs: []int{109, 13, 48}}}, 0,
			[]string{"xid=13:None@0", "xid=48:NoSchedule@0", "xid=109:None@0"}},
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

func TestHealthTaintsAreValidAndAtMost16(t *testing.T) {
	var p inventory.HealthPolicy
	var xids []int
	for x := 1; x <= 30; x++ {
		xids = append(xids, x)
	}
	s := p.Observe(inventory.HealthState{}, inventory.Observation{Time: t0, XIDs: xids, Lost: true, ThermalSlowdown: true})
	ts := p.Taints(s, t0)
	if len(ts) != resourceapi.DeviceTaintsMaxLength {
		t.Fatalf("%d taints, want %d", len(ts), resourceapi.DeviceTaintsMaxLength)
	}
	if ts[0].Key != inventory.TaintKey(inventory.ConditionGPULost) {
		t.Errorf("the most severe taint was dropped: first is %s", ts[0].Key)
	}
	for i, tn := range ts {
		if tn.Effect == resourceapi.DeviceTaintEffectNone {
			t.Errorf("an informational taint (%s=%s) was kept while faults were dropped", tn.Key, tn.Value)
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
