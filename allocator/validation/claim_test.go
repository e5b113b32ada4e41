package validation_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/allocator/validation"
)

func exact(name string, count int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu.example.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
}

func sub(name string, count int64) resourceapi.DeviceSubRequest {
	return resourceapi.DeviceSubRequest{Name: name, DeviceClassName: "gpu.example.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
}

func validClaim() *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "train"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{
				exact("gpu", 2),
				{Name: "nic", FirstAvailable: []resourceapi.DeviceSubRequest{sub("fast", 1), sub("slow", 2)}},
			},
			Constraints: []resourceapi.DeviceConstraint{{Requests: []string{"gpu", "nic/fast"}, MatchAttribute: ptr(resourceapi.FullyQualifiedName("example.com/numa"))}},
			Config: []resourceapi.DeviceClaimConfiguration{{Requests: []string{"gpu"}, DeviceConfiguration: resourceapi.DeviceConfiguration{
				Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"sharing":"time-slicing"}`)}}}}},
		}},
	}
}

func selector(expr string) resourceapi.DeviceSelector {
	return resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}
}

// doubling returns a selector that doubles a string n times: each step is cheap, but the estimated
// worst case grows with the size of the string, 2^n times that of the driver name.
func doubling(n int) string {
	expr := "device.driver"
	for i := range n {
		expr = fmt.Sprintf("cel.bind(s%d, %s, s%d + s%d)", i, expr, i, i)
	}
	return expr + ".size() > 0"
}

func TestResourceClaim(t *testing.T) {
	req := "spec.devices.requests[0]"
	tests := []struct {
		name   string
		mutate func(c *resourceapi.ResourceClaim)
		path   string
		typ    field.ErrorType
	}{
		{"a valid claim passes", func(*resourceapi.ResourceClaim) {}, "", ""},
		{"the namespace is required", func(c *resourceapi.ResourceClaim) { c.Namespace = "" }, "metadata.namespace", field.ErrorTypeRequired},
		{"the name must be a DNS subdomain", func(c *resourceapi.ResourceClaim) { c.Name = "Train!" }, "metadata.name", field.ErrorTypeInvalid},
		{"count 0 is invalid", func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.Count = 0 }, req + ".exactly.count", field.ErrorTypeInvalid},
		{"a negative count is invalid", func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.Count = -1 }, req + ".exactly.count", field.ErrorTypeInvalid},
		{"a subrequest with a negative count is invalid", func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[1].FirstAvailable[1].Count = -5 }, "spec.devices.requests[1].firstAvailable[1].count", field.ErrorTypeInvalid},
		{"All with a count is invalid", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeAll
		}, req + ".exactly.count", field.ErrorTypeInvalid},
		{"All without count passes", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeAll
			c.Spec.Devices.Requests[0].Exactly.Count = 0
		}, "", ""},
		{"an unknown allocation mode is not supported", func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.AllocationMode = "Some" }, req + ".exactly.allocationMode", field.ErrorTypeNotSupported},
		{"an empty allocation mode is not supported (defaulting sets it)", func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.AllocationMode = "" }, req + ".exactly.allocationMode", field.ErrorTypeNotSupported},
		{"request names are unique", func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[1] = exact("gpu", 1) }, "spec.devices.requests[1]", field.ErrorTypeDuplicate},
		{"request names are DNS labels", func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[0].Name = "GPU" }, req + ".name", field.ErrorTypeInvalid},
		{"subrequest names are unique", func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[1].FirstAvailable[1].Name = "fast" }, "spec.devices.requests[1].firstAvailable[1]", field.ErrorTypeDuplicate},
		{"exactly and firstAvailable are exclusive", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].FirstAvailable = []resourceapi.DeviceSubRequest{sub("a", 1)}
		}, req, field.ErrorTypeInvalid},
		{"exactly or firstAvailable is required", func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly = nil }, req, field.ErrorTypeRequired},
		{"at most 8 subrequests", func(c *resourceapi.ResourceClaim) {
			var subs []resourceapi.DeviceSubRequest
			for i := range 9 {
				subs = append(subs, sub("s"+itoa(i), 1))
			}
			c.Spec.Devices.Requests[1].FirstAvailable = subs
			c.Spec.Devices.Constraints = nil
		}, "spec.devices.requests[1].firstAvailable", field.ErrorTypeTooMany},
		{"at most 32 requests", func(c *resourceapi.ResourceClaim) {
			for i := range 31 {
				c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, exact("r"+itoa(i), 1))
			}
		}, "spec.devices.requests", field.ErrorTypeTooMany},
		{"the device class name is required", func(c *resourceapi.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.DeviceClassName = "" }, req + ".exactly.deviceClassName", field.ErrorTypeRequired},
		{"a subrequest's device class name is a DNS subdomain", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[1].FirstAvailable[0].DeviceClassName = "GPU class"
		}, "spec.devices.requests[1].firstAvailable[0].deviceClassName", field.ErrorTypeInvalid},
		{"at most 32 selectors", func(c *resourceapi.ResourceClaim) {
			for range 33 {
				c.Spec.Devices.Requests[0].Exactly.Selectors = append(c.Spec.Devices.Requests[0].Exactly.Selectors, selector("true"))
			}
		}, req + ".exactly.selectors", field.ErrorTypeTooMany},
		{"a selector that does not compile is invalid", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{selector("device.driver ==")}
		}, req + ".exactly.selectors[0].cel.expression", field.ErrorTypeInvalid},
		{"a selector that is not a bool is invalid", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{selector("device.driver")}
		}, req + ".exactly.selectors[0].cel.expression", field.ErrorTypeInvalid},
		{"a selector without CEL is required", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{}}
		}, req + ".exactly.selectors[0].cel", field.ErrorTypeRequired},
		{"a selector over the cost limit is forbidden", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{selector(doubling(24))}
		}, req + ".exactly.selectors[0].cel.expression", field.ErrorTypeForbidden},
		{"a selector that is too long is refused", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{selector("true" + strings.Repeat(" ", resourceapi.CELSelectorExpressionMaxLength))}
		}, req + ".exactly.selectors[0].cel.expression", field.ErrorTypeTooLong},
		{"at most 16 tolerations", func(c *resourceapi.ResourceClaim) {
			for range 17 {
				c.Spec.Devices.Requests[0].Exactly.Tolerations = append(c.Spec.Devices.Requests[0].Exactly.Tolerations, resourceapi.DeviceToleration{Operator: resourceapi.DeviceTolerationOpExists})
			}
		}, req + ".exactly.tolerations", field.ErrorTypeTooMany},
		{"a toleration operator must be known", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{Key: "example.com/t", Operator: "In"}}
		}, req + ".exactly.tolerations[0].operator", field.ErrorTypeNotSupported},
		{"Exists takes no value", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{Key: "example.com/t", Operator: resourceapi.DeviceTolerationOpExists, Value: "x"}}
		}, req + ".exactly.tolerations[0].value", field.ErrorTypeInvalid},
		{"a toleration effect must be known", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{Operator: resourceapi.DeviceTolerationOpExists, Effect: "Sometimes"}}
		}, req + ".exactly.tolerations[0].effect", field.ErrorTypeNotSupported},
		{"a negative capacity request is valid API input", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": q("-1Gi")}}
		}, "", ""},
		{"a capacity request must be bounded", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": q("1E100000000")}}
		}, req + ".exactly.capacity.requests[memory]", field.ErrorTypeInvalid},
		{"a constraint naming an unknown request is invalid", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Constraints[0].Requests = []string{"gpu", "tpu"}
		}, "spec.devices.constraints[0].requests[1]", field.ErrorTypeInvalid},
		{"a constraint naming an unknown subrequest is invalid", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Constraints[0].Requests = []string{"nic/medium"}
		}, "spec.devices.constraints[0].requests[0]", field.ErrorTypeInvalid},
		{"a constraint names each request once", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Constraints[0].Requests = []string{"gpu", "gpu"}
		}, "spec.devices.constraints[0].requests[1]", field.ErrorTypeDuplicate},
		{"a constraint needs an attribute", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Constraints[0].MatchAttribute = nil
		}, "spec.devices.constraints[0]", field.ErrorTypeRequired},
		{"a constraint's attribute is fully qualified", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Constraints[0].MatchAttribute = ptr(resourceapi.FullyQualifiedName("numa"))
		}, "spec.devices.constraints[0].matchAttribute", field.ErrorTypeInvalid},
		{"at most 32 constraints", func(c *resourceapi.ResourceClaim) {
			for range 32 {
				c.Spec.Devices.Constraints = append(c.Spec.Devices.Constraints, c.Spec.Devices.Constraints[0])
			}
		}, "spec.devices.constraints", field.ErrorTypeTooMany},
		{"at most 32 config entries", func(c *resourceapi.ResourceClaim) {
			for range 32 {
				c.Spec.Devices.Config = append(c.Spec.Devices.Config, c.Spec.Devices.Config[0])
			}
		}, "spec.devices.config", field.ErrorTypeTooMany},
		{"config naming an unknown request is invalid", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Config[0].Requests = []string{"tpu"}
		}, "spec.devices.config[0].requests[0]", field.ErrorTypeInvalid},
		{"config needs opaque parameters", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Config[0].Opaque = nil
		}, "spec.devices.config[0].opaque", field.ErrorTypeRequired},
		{"opaque parameters are a JSON object", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Config[0].Opaque.Parameters.Raw = []byte(`[1]`)
		}, "spec.devices.config[0].opaque.parameters", field.ErrorTypeInvalid},
		{"opaque parameters are at most 10 KiB", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Config[0].Opaque.Parameters.Raw = []byte(`{"a":"` + strings.Repeat("x", 10*1024) + `"}`)
		}, "spec.devices.config[0].opaque.parameters", field.ErrorTypeTooLong},
		{"a derived attribute must be used by a constraint", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.DerivedAttributes = []resourceapi.DeviceDerivedAttribute{{Name: "example.com/other", Expression: `"x"`}}
		}, req + ".exactly.derivedAttributes[0].name", field.ErrorTypeInvalid},
		{"a derived attribute used by a constraint passes", func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.DerivedAttributes = []resourceapi.DeviceDerivedAttribute{{Name: "example.com/numa", Expression: `"0"`}}
		}, "", ""},
		{"an allocation naming an unknown request is invalid", func(c *resourceapi.ResourceClaim) {
			c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "tpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}}
		}, "status.allocation.devices.results[0].request", field.ErrorTypeInvalid},
		{"an allocation's device name is a DNS label", func(c *resourceapi.ResourceClaim) {
			c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "GPU 0"}}}}
		}, "status.allocation.devices.results[0].device", field.ErrorTypeInvalid},
		{"a share ID is a normalized UUID", func(c *resourceapi.ResourceClaim) {
			c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "nic/fast", Driver: "gpu.example.com", Pool: "node-1", Device: "nic-0", ShareID: ptr(types.UID("ABC"))}}}}
		}, "status.allocation.devices.results[0].shareID", field.ErrorTypeInvalid},
		{"a valid allocation passes", func(c *resourceapi.ResourceClaim) {
			c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "nic/fast", Driver: "gpu.example.com", Pool: "node-1", Device: "nic-0", ShareID: ptr(types.UID("0f5a1e1c-7d5e-4d8e-9c3f-2b1a0e9d8c7b"))}}}}
		}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validClaim()
			tc.mutate(c)
			before := c.DeepCopy()
			errs := validation.ResourceClaim(c, validation.Options{})
			wantField(t, errs, tc.path, tc.typ)
			if !reflect.DeepEqual(before, c) {
				t.Error("the claim was modified")
			}
		})
	}
}

func TestResourceClaimTemplate(t *testing.T) {
	c := validClaim()
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "train"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: c.Spec}}
	wantField(t, validation.ResourceClaimTemplate(tmpl, validation.Options{}), "", "")

	tmpl.Spec.Spec.Devices.Requests[0].Exactly.Count = -1
	wantField(t, validation.ResourceClaimTemplate(tmpl, validation.Options{}), "spec.spec.devices.requests[0].exactly.count", field.ErrorTypeInvalid)

	tmpl.Spec.Labels = map[string]string{"bad key": "x"}
	wantField(t, validation.ResourceClaimTemplate(tmpl, validation.Options{}), "spec.metadata.labels", field.ErrorTypeInvalid)
}

// The selector that doubles a string 24 times is estimated at about 2.1e8, far over the 1e6 the API
// server allows, although each evaluation step looks harmless.
func TestCostOfDoublingSelector(t *testing.T) {
	c := validClaim()
	c.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{selector(doubling(24))}
	errs := validation.ResourceClaim(c, validation.Options{})
	wantField(t, errs, "spec.devices.requests[0].exactly.selectors[0].cel.expression", field.ErrorTypeForbidden)
	c.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{selector(doubling(2))}
	wantField(t, validation.ResourceClaim(c, validation.Options{}), "", "")
}
