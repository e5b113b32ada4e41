package validation_test

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/allocator/validation"
)

func TestDeviceClass(t *testing.T) {
	valid := func() *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{selector(`device.driver == "gpu.example.com"`)}}}
	}
	tests := []struct {
		name   string
		mutate func(c *resourceapi.DeviceClass)
		path   string
		typ    field.ErrorType
	}{
		{"a valid class passes", func(*resourceapi.DeviceClass) {}, "", ""},
		{"the name is required", func(c *resourceapi.DeviceClass) { c.Name = "" }, "metadata.name", field.ErrorTypeRequired},
		{"the name is a DNS subdomain", func(c *resourceapi.DeviceClass) { c.Name = "GPU" }, "metadata.name", field.ErrorTypeInvalid},
		{"a class is not namespaced", func(c *resourceapi.DeviceClass) { c.Namespace = "default" }, "metadata.namespace", field.ErrorTypeForbidden},
		{"a selector must compile", func(c *resourceapi.DeviceClass) { c.Spec.Selectors[0] = selector("device.nosuchfield") }, "spec.selectors[0].cel.expression", field.ErrorTypeInvalid},
		{"a selector over the cost limit is forbidden", func(c *resourceapi.DeviceClass) { c.Spec.Selectors[0] = selector(doubling(24)) }, "spec.selectors[0].cel.expression", field.ErrorTypeForbidden},
		{"at most 32 selectors", func(c *resourceapi.DeviceClass) {
			for range 32 {
				c.Spec.Selectors = append(c.Spec.Selectors, selector("true"))
			}
		}, "spec.selectors", field.ErrorTypeTooMany},
		{"config needs a driver", func(c *resourceapi.DeviceClass) {
			c.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
				Opaque: &resourceapi.OpaqueDeviceConfiguration{Parameters: runtime.RawExtension{Raw: []byte(`{}`)}}}}}
		}, "spec.config[0].opaque.driver", field.ErrorTypeRequired},
		{"at most 32 config entries", func(c *resourceapi.DeviceClass) {
			cfg := resourceapi.DeviceClassConfiguration{DeviceConfiguration: resourceapi.DeviceConfiguration{
				Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{}`)}}}}
			for range 33 {
				c.Spec.Config = append(c.Spec.Config, cfg)
			}
		}, "spec.config", field.ErrorTypeTooMany},
		{"an extended resource name needs a domain", func(c *resourceapi.DeviceClass) { c.Spec.ExtendedResourceName = ptr("gpu") }, "spec.extendedResourceName", field.ErrorTypeInvalid},
		{"an extended resource name outside kubernetes.io passes", func(c *resourceapi.DeviceClass) { c.Spec.ExtendedResourceName = ptr("example.com/gpu") }, "", ""},
		{"an extended resource name in kubernetes.io is native", func(c *resourceapi.DeviceClass) { c.Spec.ExtendedResourceName = ptr("kubernetes.io/gpu") }, "spec.extendedResourceName", field.ErrorTypeInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mutate(c)
			wantField(t, validation.DeviceClass(c, validation.Options{}), tc.path, tc.typ)
		})
	}
}

func TestDeviceTaintRule(t *testing.T) {
	valid := func() *resourceapi.DeviceTaintRule {
		return &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "maintenance"},
			Spec: resourceapi.DeviceTaintRuleSpec{
				DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr("gpu.example.com"), Pool: ptr("node-1"), Device: ptr("gpu-0")},
				Taint:          resourceapi.DeviceTaint{Key: "example.com/maintenance", Value: "planned", Effect: resourceapi.DeviceTaintEffectNoExecute}}}
	}
	tests := []struct {
		name   string
		mutate func(r *resourceapi.DeviceTaintRule)
		path   string
		typ    field.ErrorType
	}{
		{"a valid rule passes", func(*resourceapi.DeviceTaintRule) {}, "", ""},
		{"the name is required", func(r *resourceapi.DeviceTaintRule) { r.Name = "" }, "metadata.name", field.ErrorTypeRequired},
		{"the driver is a driver name", func(r *resourceapi.DeviceTaintRule) { r.Spec.DeviceSelector.Driver = ptr("gpu_example") }, "spec.deviceSelector.driver", field.ErrorTypeInvalid},
		{"the pool is a pool name", func(r *resourceapi.DeviceTaintRule) { r.Spec.DeviceSelector.Pool = ptr(strings.Repeat("a", 254)) }, "spec.deviceSelector.pool", field.ErrorTypeTooLong},
		{"the device is a DNS label", func(r *resourceapi.DeviceTaintRule) { r.Spec.DeviceSelector.Device = ptr("gpu.0") }, "spec.deviceSelector.device", field.ErrorTypeInvalid},
		{"the taint key is required", func(r *resourceapi.DeviceTaintRule) { r.Spec.Taint.Key = "" }, "spec.taint.key", field.ErrorTypeRequired},
		{"the taint key is a label name", func(r *resourceapi.DeviceTaintRule) { r.Spec.Taint.Key = "a/b/c" }, "spec.taint.key", field.ErrorTypeInvalid},
		{"the taint value is a label value", func(r *resourceapi.DeviceTaintRule) { r.Spec.Taint.Value = "not valid" }, "spec.taint.value", field.ErrorTypeInvalid},
		{"the taint effect must be known", func(r *resourceapi.DeviceTaintRule) { r.Spec.Taint.Effect = "Evict" }, "spec.taint.effect", field.ErrorTypeNotSupported},
		{"the taint effect is required", func(r *resourceapi.DeviceTaintRule) { r.Spec.Taint.Effect = "" }, "spec.taint.effect", field.ErrorTypeRequired},
		{"a rule without selector passes", func(r *resourceapi.DeviceTaintRule) { r.Spec.DeviceSelector = nil }, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := valid()
			tc.mutate(r)
			wantField(t, validation.DeviceTaintRule(r, validation.Options{}), tc.path, tc.typ)
		})
	}
}

func TestNilObjects(t *testing.T) {
	for name, errs := range map[string]field.ErrorList{
		"slice":    validation.ResourceSlice(nil, validation.Options{}),
		"class":    validation.DeviceClass(nil, validation.Options{}),
		"claim":    validation.ResourceClaim(nil, validation.Options{}),
		"template": validation.ResourceClaimTemplate(nil, validation.Options{}),
		"rule":     validation.DeviceTaintRule(nil, validation.Options{}),
	} {
		if len(errs) != 1 || errs[0].Type != field.ErrorTypeRequired {
			t.Errorf("%s: nil object gives %v", name, errs)
		}
	}
}
