package explainer

import (
	"context"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/celenv"
)

type staticSource struct {
	slices  []*resourceapi.ResourceSlice
	classes []*resourceapi.DeviceClass
	claims  []*resourceapi.ResourceClaim
	rules   []*resourceapi.DeviceTaintRule
}

func (s staticSource) Slices() ([]*resourceapi.ResourceSlice, error)       { return s.slices, nil }
func (s staticSource) Classes() ([]*resourceapi.DeviceClass, error)        { return s.classes, nil }
func (s staticSource) Claims() ([]*resourceapi.ResourceClaim, error)       { return s.claims, nil }
func (s staticSource) TaintRules() ([]*resourceapi.DeviceTaintRule, error) { return s.rules, nil }

func TestCountDevices(t *testing.T) {
	old := slice("s-old", "n1", 1, dev{"x0", "a100", 0}, dev{"x1", "a100", 0})
	cur := slice("s-new", "n1", 2, dev{"d0", "a100", 0}, dev{"d1", "a100", 1}, dev{"d2", "a100", 0}, dev{"d3", "t4", 0}, dev{"d4", "a100", 0})
	cur.Spec.Devices[4].Taints = []resourceapi.DeviceTaint{{Key: "own", Effect: resourceapi.DeviceTaintEffectNoExecute}}
	other := slice("s-n2", "n2", 1, dev{"d0", "t4", 0})
	bad := class("bad", "")
	bad.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "device.nonsense +"}}}
	src := staticSource{
		slices:  []*resourceapi.ResourceSlice{old, cur, other},
		classes: []*resourceapi.DeviceClass{class("a100", "a100"), class("t4", "t4"), bad},
		claims:  []*resourceapi.ResourceClaim{allocatedClaim("held", "n1", "d0")},
		rules:   []*resourceapi.DeviceTaintRule{taintRule("broken", "n1", "d1")},
	}
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := CountDevices(context.Background(), env, src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[PoolKey]DeviceCounts{
		// d0 allocated, d1 tainted by the rule, d4 by its own NoExecute taint, d2 free; the old
		// generation's x0 and x1 are not counted.
		{Class: "a100", Driver: testDriver, Pool: "n1"}: {Used: 1, Tainted: 2, Free: 1},
		{Class: "t4", Driver: testDriver, Pool: "n1"}:   {Free: 1},
		{Class: "t4", Driver: testDriver, Pool: "n2"}:   {Free: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counts\n%v\nwant\n%v", got, want)
	}
}

func TestPendingByReason(t *testing.T) {
	m := NewMetrics(staticSource{})
	m.SetPending("ns/a", "ClassSelectorFalse")
	m.SetPending("ns/b", "ClassSelectorFalse")
	m.SetPending("ns/c", "UntoleratedTaint")
	m.SetPending("ns/a", "AlreadyAllocated") // a pod's reason changed
	m.SetPending("ns/c", "")                 // scheduled
	for reason, want := range map[string]float64{"ClassSelectorFalse": 1, "AlreadyAllocated": 1} {
		if got := testutil.ToFloat64(m.Pending.WithLabelValues(reason)); got != want {
			t.Errorf("%s: %v, want %v", reason, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.Pending); n != 2 {
		t.Errorf("%d reasons reported, want 2 (a reason without pods is dropped)", n)
	}
}
