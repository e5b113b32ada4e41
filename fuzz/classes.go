package fuzz

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
)

// The generated DeviceClasses. Their selectors only read attributes every device of the selected driver has, so
// they never fail at runtime.
const (
	ClassGPU  = "gpu"      // every GPU device, whole or partition
	ClassA100 = "gpu-a100" // GPUs of model a100
	ClassNIC  = "nic"      // every NIC
	ClassAny  = "any"      // no selector: every device
)

func cel(expr string) resourceapi.DeviceSelector {
	return resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}
}

func opaque(driver, params string) resourceapi.DeviceConfiguration {
	return resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
		Driver:     driver,
		Parameters: runtime.RawExtension{Raw: []byte(params)},
	}}
}

func drawClasses(t *rapid.T, opts Options) []*resourceapi.DeviceClass {
	mk := func(name string, selectors ...string) *resourceapi.DeviceClass {
		c := &resourceapi.DeviceClass{}
		c.Name = name
		for _, s := range selectors {
			c.Spec.Selectors = append(c.Spec.Selectors, cel(s))
		}
		return c
	}
	gpu := mk(ClassGPU, `device.driver == "gpu.example.com"`)
	a100 := mk(ClassA100, `device.driver == "gpu.example.com"`, `device.attributes["gpu.example.com"].model == "a100"`)
	nic := mk(ClassNIC, `device.driver == "nic.example.com"`)
	any := mk(ClassAny)
	if opts.Config {
		if rapid.Bool().Draw(t, "gpuClassConfig") {
			gpu.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: opaque(GPUDriver, `{"sharing":"timeslice"}`)}}
		}
		if rapid.Bool().Draw(t, "nicClassConfig") {
			nic.Spec.Config = []resourceapi.DeviceClassConfiguration{
				{DeviceConfiguration: opaque(NICDriver, `{"mtu":9000}`)},
				{DeviceConfiguration: opaque(NICDriver, `{"vlan":7}`)},
			}
		}
	}
	return []*resourceapi.DeviceClass{gpu, a100, nic, any}
}

// Request selectors per class; each is safe on every device its class selects.
var (
	gpuSelectors = []string{
		`device.attributes["gpu.example.com"].numa == 0`,
		`device.attributes["gpu.example.com"].healthy`,
		`device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) > 0`,
		`device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))`,
		`device.attributes["gpu.example.com"].model == "h100"`,
	}
	nicSelectors = []string{
		`device.attributes["nic.example.com"].speed >= 100`,
		`device.attributes["nic.example.com"].zone == "a"`,
	}
	anySelectors = []string{
		`device.driver.startsWith("gpu")`,
		`device.driver != "gpu.example.com"`,
	}
	// failingSelectors fail on devices of the other driver (no such attribute).
	failingSelectors = []string{
		`device.attributes["gpu.example.com"].model == "a100"`,
		`device.attributes["nic.example.com"].speed >= 100`,
	}
)

func drawTaintRules(t *rapid.T, slices []*resourceapi.ResourceSlice) []*resourceapi.DeviceTaintRule {
	n := rapid.IntRange(0, 2).Draw(t, "taintRules")
	var rules []*resourceapi.DeviceTaintRule
	for i := 0; i < n; i++ {
		r := &resourceapi.DeviceTaintRule{}
		r.Name = fmt.Sprintf("rule-%d", i)
		sel := &resourceapi.DeviceTaintSelector{}
		if len(slices) > 0 {
			s := slices[rapid.IntRange(0, len(slices)-1).Draw(t, "ruleSlice")]
			if rapid.Bool().Draw(t, "ruleDriver") {
				sel.Driver = ptr.To(s.Spec.Driver)
			}
			if rapid.Bool().Draw(t, "rulePool") {
				sel.Pool = ptr.To(s.Spec.Pool.Name)
			}
			if len(s.Spec.Devices) > 0 && rapid.Bool().Draw(t, "ruleDevice") {
				sel.Device = ptr.To(s.Spec.Devices[rapid.IntRange(0, len(s.Spec.Devices)-1).Draw(t, "ruleDeviceIndex")].Name)
			}
		}
		r.Spec.DeviceSelector = sel
		r.Spec.Taint = drawTaint(t)
		rules = append(rules, r)
	}
	return rules
}
