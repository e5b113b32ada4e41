package taints

import (
	"context"
	"errors"
	"testing"

	"github.com/dralloc/dralloc/celenv"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func model(name, product string) resourceapi.Device {
	return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"productName": {StringValue: &product}}}
}

func TestExpandClass(t *testing.T) {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	slices := []*resourceapi.ResourceSlice{
		slice("node-1", model("gpu-0", "H100"), model("gpu-1", "A100")),
		slice("node-2", model("gpu-0", "H100")),
	}
	h100 := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].productName == "H100"`}}}}}
	taint := resourceapi.DeviceTaint{Key: "maintenance", Effect: noSchedule}
	tests := []struct {
		name string
		sel  resourceapi.DeviceTaintSelector
		want []DeviceID
	}{
		{name: "every device of the class", want: []DeviceID{{"gpu.nvidia.com", "node-1", "gpu-0"}, {"gpu.nvidia.com", "node-2", "gpu-0"}}},
		{name: "the devices of the class in one pool", sel: resourceapi.DeviceTaintSelector{Pool: sp("node-2")}, want: []DeviceID{{"gpu.nvidia.com", "node-2", "gpu-0"}}},
		{name: "another driver selects nothing", sel: resourceapi.DeviceTaintSelector{Driver: sp("tpu.example.com")}},
		{name: "a device outside the class is not selected", sel: resourceapi.DeviceTaintSelector{Device: sp("gpu-1")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := ExpandClass(context.Background(), env, h100, tc.sel, taint, "h100-maint", slices)
			if err != nil {
				t.Fatal(err)
			}
			if len(rules) != len(tc.want) {
				t.Fatalf("%d rules, want %d", len(rules), len(tc.want))
			}
			e, err := NewEvaluator(rules)
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range tc.want {
				s := rules[i].Spec.DeviceSelector
				if *s.Driver != id.Driver || *s.Pool != id.Pool || *s.Device != id.Device || rules[i].Spec.Taint.Key != "maintenance" {
					t.Fatalf("rule %d: %+v", i, rules[i])
				}
				if got := e.RuleNames(id); len(got) != 1 {
					t.Fatalf("device %s matched by %v", id, got)
				}
			}
		})
	}
	bad := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].missing == "x"`}}}}}
	if _, err := ExpandClass(context.Background(), env, bad, resourceapi.DeviceTaintSelector{}, taint, "p", slices); !errors.Is(err, ErrClassSelector) {
		t.Fatalf("error %v", err)
	}
}
