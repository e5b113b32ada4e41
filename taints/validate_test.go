package taints

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateTaints(t *testing.T) {
	path := field.NewPath("spec", "devices").Index(0).Child("taints")
	many := make([]resourceapi.DeviceTaint, 17)
	for i := range many {
		many[i] = resourceapi.DeviceTaint{Key: "k", Effect: none}
	}
	tests := []struct {
		name   string
		taints []resourceapi.DeviceTaint
		want   string
	}{
		{name: "valid taints pass", taints: []resourceapi.DeviceTaint{{Key: "gpu.example.com/ecc", Value: "12", Effect: none}, {Key: "drain", Effect: noExecute}}},
		{name: "a key must be a label name", taints: []resourceapi.DeviceTaint{{Key: "a/b/c", Effect: none}}, want: "spec.devices[0].taints[0].key: Invalid value"},
		{name: "a key is required", taints: []resourceapi.DeviceTaint{{Effect: none}}, want: "spec.devices[0].taints[0].key: Required value"},
		{name: "a value must be a label value", taints: []resourceapi.DeviceTaint{{Key: "k", Value: "not a value", Effect: none}}, want: "spec.devices[0].taints[0].value: Invalid value"},
		{name: "an effect must be known", taints: []resourceapi.DeviceTaint{{Key: "k", Effect: "PreferNoSchedule"}}, want: "spec.devices[0].taints[0].effect: Unsupported value"},
		{name: "at most 16 taints", taints: many, want: "spec.devices[0].taints: Too many: 17"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateTaints(tc.taints, path)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestValidateToleration(t *testing.T) {
	path := field.NewPath("tolerations").Index(0)
	tests := []struct {
		name string
		tol  resourceapi.DeviceToleration
		want string
	}{
		{name: "Exists without key tolerates all and is valid", tol: resourceapi.DeviceToleration{Operator: exists}},
		{name: "an empty key requires Exists", tol: resourceapi.DeviceToleration{Operator: equal}, want: "tolerations[0].operator"},
		{name: "Exists must not have a value", tol: resourceapi.DeviceToleration{Key: "k", Operator: exists, Value: "v"}, want: "tolerations[0].value"},
		{name: "None is not a toleration effect", tol: resourceapi.DeviceToleration{Key: "k", Effect: none}, want: "tolerations[0].effect"},
		{name: "unknown operators are rejected", tol: resourceapi.DeviceToleration{Key: "k", Operator: "Gt"}, want: "tolerations[0].operator: Unsupported value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateToleration(tc.tol, path)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestValidateRule(t *testing.T) {
	tests := []struct {
		name string
		rule *resourceapi.DeviceTaintRule
		want string
	}{
		{name: "a valid rule passes", rule: newRule("r", &resourceapi.DeviceTaintSelector{Driver: sp("gpu.nvidia.com"), Pool: sp("node-1/a"), Device: sp("gpu-0")}, "k", noExecute)},
		{name: "a name is required", rule: newRule("", nil, "k", none), want: "metadata.name: Required value"},
		{name: "a driver is a DNS subdomain", rule: newRule("r", &resourceapi.DeviceTaintSelector{Driver: sp("gpu_nvidia")}, "k", none), want: "spec.deviceSelector.driver"},
		{name: "pool segments are DNS subdomains", rule: newRule("r", &resourceapi.DeviceTaintSelector{Pool: sp("a//b")}, "k", none), want: "spec.deviceSelector.pool"},
		{name: "a nil rule is reported", rule: nil, want: "Required value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateRule(tc.rule)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}
