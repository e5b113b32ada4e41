package taints

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
)

func sp(s string) *string { return &s }

func newRule(name string, sel *resourceapi.DeviceTaintSelector, key string, effect resourceapi.DeviceTaintEffect) *resourceapi.DeviceTaintRule {
	return &resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourceapi.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: resourceapi.DeviceTaint{Key: key, Effect: effect}},
	}
}

func keys(taints []resourceapi.DeviceTaint) []string {
	var out []string
	for _, t := range taints {
		out = append(out, t.Key)
	}
	return out
}

func TestEvaluatorTaints(t *testing.T) {
	dev := &resourceapi.Device{Name: "gpu-3", Taints: []resourceapi.DeviceTaint{{Key: "own", Effect: none}}}
	tests := []struct {
		name string
		sel  *resourceapi.DeviceTaintSelector
		want []string
	}{
		{name: "a rule without selector matches no device", sel: nil, want: []string{"own"}},
		{name: "an empty selector matches every device", sel: &resourceapi.DeviceTaintSelector{}, want: []string{"own", "rule"}},
		{name: "a matching driver matches", sel: &resourceapi.DeviceTaintSelector{Driver: sp("gpu.nvidia.com")}, want: []string{"own", "rule"}},
		{name: "another driver does not match", sel: &resourceapi.DeviceTaintSelector{Driver: sp("tpu.example.com")}, want: []string{"own"}},
		{name: "a matching pool matches", sel: &resourceapi.DeviceTaintSelector{Pool: sp("node-1")}, want: []string{"own", "rule"}},
		{name: "another pool does not match", sel: &resourceapi.DeviceTaintSelector{Pool: sp("node-2")}, want: []string{"own"}},
		{name: "a matching device matches", sel: &resourceapi.DeviceTaintSelector{Device: sp("gpu-3")}, want: []string{"own", "rule"}},
		{name: "another device does not match", sel: &resourceapi.DeviceTaintSelector{Device: sp("gpu-4")}, want: []string{"own"}},
		{name: "every field set must match", sel: &resourceapi.DeviceTaintSelector{Driver: sp("gpu.nvidia.com"), Pool: sp("node-2"), Device: sp("gpu-3")}, want: []string{"own"}},
		{name: "all fields matching match", sel: &resourceapi.DeviceTaintSelector{Driver: sp("gpu.nvidia.com"), Pool: sp("node-1"), Device: sp("gpu-3")}, want: []string{"own", "rule"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEvaluator([]*resourceapi.DeviceTaintRule{newRule("r", tc.sel, "rule", noSchedule)})
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(e.Taints("gpu.nvidia.com", "node-1", dev)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if len(dev.Taints) != 1 {
				t.Fatal("device mutated")
			}
		})
	}
}

func TestEvaluatorOrdersRulesByName(t *testing.T) {
	e, err := NewEvaluator([]*resourceapi.DeviceTaintRule{
		newRule("c", &resourceapi.DeviceTaintSelector{}, "c", none),
		newRule("a", &resourceapi.DeviceTaintSelector{Device: sp("gpu-0")}, "a", none),
		newRule("b", &resourceapi.DeviceTaintSelector{Pool: sp("p")}, "b", none),
	})
	if err != nil {
		t.Fatal(err)
	}
	dev := &resourceapi.Device{Name: "gpu-0", Taints: []resourceapi.DeviceTaint{{Key: "own", Effect: none}}}
	if got := keys(e.Taints("d", "p", dev)); !reflect.DeepEqual(got, []string{"own", "a", "b", "c"}) {
		t.Fatalf("got %v", got)
	}
	if got := e.RuleNames(DeviceID{"d", "p", "gpu-0"}); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("rule names %v", got)
	}
}

func TestEvaluatorTaintsDoesNotAllocateWithoutMatches(t *testing.T) {
	e, _ := NewEvaluator([]*resourceapi.DeviceTaintRule{newRule("r", &resourceapi.DeviceTaintSelector{Device: sp("other")}, "k", noSchedule)})
	dev := &resourceapi.Device{Name: "gpu-0", Taints: []resourceapi.DeviceTaint{{Key: "own", Effect: none}}}
	if n := testing.AllocsPerRun(100, func() { e.Taints("d", "p", dev) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
	got := e.Taints("d", "p", dev)
	_ = append(got, resourceapi.DeviceTaint{Key: "appended"})
	if cap(dev.Taints) > 1 && dev.Taints[:2][1].Key == "appended" {
		t.Fatal("append wrote into the device")
	}
}

func TestNewEvaluatorRejectsInvalidRules(t *testing.T) {
	tests := []struct {
		name  string
		rules []*resourceapi.DeviceTaintRule
		want  string
	}{
		{"a nil rule", []*resourceapi.DeviceTaintRule{nil}, "rules[0] is nil"},
		{"a bad taint key", []*resourceapi.DeviceTaintRule{newRule("bad-key", nil, "-x", noSchedule)}, "DeviceTaintRule bad-key: spec.taint.key"},
		{"a bad device name", []*resourceapi.DeviceTaintRule{newRule("bad-device", &resourceapi.DeviceTaintSelector{Device: sp("GPU_0")}, "k", noSchedule)}, "DeviceTaintRule bad-device: spec.deviceSelector.device"},
		{"a missing effect", []*resourceapi.DeviceTaintRule{newRule("no-effect", nil, "k", "")}, "DeviceTaintRule no-effect: spec.taint.effect: Required value"},
		{"a duplicate name", []*resourceapi.DeviceTaintRule{newRule("twice", nil, "k", none), newRule("twice", nil, "k", none)}, "DeviceTaintRule twice: metadata.name: duplicate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewEvaluator(tc.rules)
			if !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := NewEvaluator([]*resourceapi.DeviceTaintRule{newRule("future", nil, "k", "PreferNoSchedule")}); err != nil {
		t.Fatalf("an effect from a later version is accepted as stored: %v", err)
	}
}

// TestPropEvaluatorAgreesWithReference checks the indexed lookup against the rule read literally: every
// rule, in name order, whose selector is present and whose set fields all equal the device's.
func TestPropEvaluatorAgreesWithReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pick := func(label string, vals ...string) *string {
			if rapid.Bool().Draw(t, label+"set") {
				return sp(rapid.SampledFrom(vals).Draw(t, label))
			}
			return nil
		}
		var rules []*resourceapi.DeviceTaintRule
		for i, n := range rapid.Permutation([]int{0, 1, 2, 3, 4, 5}).Draw(t, "names")[:rapid.IntRange(0, 6).Draw(t, "count")] {
			var sel *resourceapi.DeviceTaintSelector
			if rapid.IntRange(0, 4).Draw(t, fmt.Sprint("hasSel", i)) > 0 {
				sel = &resourceapi.DeviceTaintSelector{Driver: pick(fmt.Sprint("drv", i), "d1", "d2"), Pool: pick(fmt.Sprint("pool", i), "p1", "p2"), Device: pick(fmt.Sprint("dev", i), "x", "y")}
			}
			rules = append(rules, newRule(fmt.Sprintf("rule-%d", n), sel, fmt.Sprintf("k%d", n), none))
		}
		e, err := NewEvaluator(rules)
		if err != nil {
			t.Fatal(err)
		}
		driver := rapid.SampledFrom([]string{"d1", "d2"}).Draw(t, "driver")
		pool := rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "pool")
		dev := &resourceapi.Device{Name: rapid.SampledFrom([]string{"x", "y"}).Draw(t, "device")}
		sorted := append([]*resourceapi.DeviceTaintRule(nil), rules...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
		var want []string
		for _, r := range sorted {
			s := r.Spec.DeviceSelector
			if s == nil || (s.Driver != nil && *s.Driver != driver) || (s.Pool != nil && *s.Pool != pool) || (s.Device != nil && *s.Device != dev.Name) {
				continue
			}
			want = append(want, r.Spec.Taint.Key)
		}
		if got := keys(e.Taints(driver, pool, dev)); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, reference %v", got, want)
		}
	})
}

func TestEvaluatorIsSafeForConcurrentUse(t *testing.T) {
	e, err := NewEvaluator([]*resourceapi.DeviceTaintRule{newRule("r", &resourceapi.DeviceTaintSelector{Pool: sp("p")}, "k", noSchedule)})
	if err != nil {
		t.Fatal(err)
	}
	dev := &resourceapi.Device{Name: "gpu-0", Taints: []resourceapi.DeviceTaint{{Key: "own", Effect: none}}}
	done := make(chan []string)
	for range 4 {
		go func() {
			var got []string
			for range 100 {
				got = keys(e.Taints("d", "p", dev))
			}
			done <- got
		}()
	}
	for range 4 {
		if got := <-done; !reflect.DeepEqual(got, []string{"own", "k"}) {
			t.Fatalf("got %v", got)
		}
	}
}
