package taints

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

func TestConditionsAndEscalate(t *testing.T) {
	ecc := func(v string) resourceapi.DeviceTaint {
		return resourceapi.DeviceTaint{Key: "gpu.nvidia.com/ecc-errors", Value: v, Effect: none}
	}
	slices := []*resourceapi.ResourceSlice{slice("node-1",
		resourceapi.Device{Name: "gpu-1", Taints: []resourceapi.DeviceTaint{ecc("40")}},
		resourceapi.Device{Name: "gpu-0", Taints: []resourceapi.DeviceTaint{ecc("3"), {Key: "drain", Effect: noExecute}}},
		resourceapi.Device{Name: "gpu-2"})}
	e, err := NewEvaluator([]*resourceapi.DeviceTaintRule{newRule("probe", &resourceapi.DeviceTaintSelector{Device: sp("gpu-2")}, "probe", none)})
	if err != nil {
		t.Fatal(err)
	}
	conds := e.Conditions(slices)
	if len(conds) != 2 || conds[0].Key != "gpu.nvidia.com/ecc-errors" || conds[1].Key != "probe" || conds[1].Devices[0].Rule != "probe" {
		t.Fatalf("conditions %+v", conds)
	}
	if d := conds[0].Devices; len(d) != 2 || d[0].Device.Device != "gpu-0" || d[1].Device.Device != "gpu-1" {
		t.Fatalf("devices not in order: %+v", d)
	}
	above := func(c DeviceCondition) bool { return len(c.Taint.Value) > 1 } // more than 9 errors
	rules, err := Escalate(conds[0].Devices, above, noSchedule, "ecc")
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 1 {
		t.Fatalf("rules %+v", rules)
	}
	r := rules[0]
	if *r.Spec.DeviceSelector.Device != "gpu-1" || *r.Spec.DeviceSelector.Pool != "node-1" || *r.Spec.DeviceSelector.Driver != "gpu.nvidia.com" ||
		r.Spec.Taint.Effect != noSchedule || r.Spec.Taint.Value != "40" || !strings.HasPrefix(r.Name, "ecc-gpu-1-") {
		t.Fatalf("rule %+v", r)
	}
	drain, err := Escalate(conds[0].Devices, above, noExecute, "ecc")
	if err != nil || drain[0].Name == r.Name || drain[0].Spec.Taint.Effect != noExecute {
		t.Fatalf("drain rule %+v %v", drain, err)
	}
	if _, err := Escalate(nil, nil, none, "ecc"); err == nil {
		t.Fatal("None is not an escalation")
	}
	if _, err := Escalate(nil, nil, noSchedule, "Bad_Prefix"); err == nil {
		t.Fatal("invalid prefix accepted")
	}
}
