package claim_test

import (
	"errors"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dralloc/dralloc/inventory/claim"
)

func nvOpaque(src resourceapi.AllocationConfigSource, params string, requests ...string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{Source: src, Requests: requests, DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.nvidia.com", Parameters: runtime.RawExtension{Raw: []byte(params)}}}}
}

const (
	gpuTS  = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}`
	gpuTS0 = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}}`
	gpuMPS = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50}}}`
	migTS  = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"TimeSlicing"}}`
)

// getConfigResultsMap: the last applicable configuration wins, claim over
// class; one naming the request exactly must fit the device's kind; one
// naming no request is skipped when it does not; none gives the default.
func TestSelectConfigChoosesAsNVIDIAsDriver(t *testing.T) {
	cls, clm := resourceapi.AllocationConfigSourceClass, resourceapi.AllocationConfigSourceClaim
	for _, c := range []struct {
		name    string
		request string
		typ     string
		configs []resourceapi.DeviceAllocationConfiguration
		opts    claim.SelectOptions
		want    string // kind/strategy/interval, or "error"
	}{
		{"no configuration: the default", "gpu", "gpu", nil, claim.SelectOptions{}, "GpuConfig//"},
		{"the claim's configuration after the class's", "gpu", "gpu",
			[]resourceapi.DeviceAllocationConfiguration{nvOpaque(cls, gpuMPS), nvOpaque(clm, gpuTS)}, claim.SelectOptions{}, "GpuConfig/TimeSlicing/Long"},
		{"a GPU configuration without requests does not reach a MIG device", "mig", "mig",
			[]resourceapi.DeviceAllocationConfiguration{nvOpaque(cls, migTS), nvOpaque(clm, gpuTS)}, claim.SelectOptions{}, "MigDeviceConfig/TimeSlicing/"},
		{"a GPU configuration naming a MIG device's request is an error", "mig", "mig",
			[]resourceapi.DeviceAllocationConfiguration{nvOpaque(clm, gpuTS, "mig")}, claim.SelectOptions{}, "error"},
		{"a configuration naming the main request does not reach a subrequest", "gpus/big", "gpu",
			[]resourceapi.DeviceAllocationConfiguration{nvOpaque(clm, gpuTS, "gpus")}, claim.SelectOptions{}, "GpuConfig//"},
		{"a configuration naming the subrequest does", "gpus/big", "gpu",
			[]resourceapi.DeviceAllocationConfiguration{nvOpaque(clm, gpuTS, "gpus/big")}, claim.SelectOptions{}, "GpuConfig/TimeSlicing/Long"},
		{"time slicing without interval gets Default under TimeSlicingSettings", "gpu", "gpu",
			[]resourceapi.DeviceAllocationConfiguration{nvOpaque(clm, gpuTS0)}, claim.SelectOptions{TimeSlicingSettings: true}, "GpuConfig/TimeSlicing/Default"},
		{"MPS is refused under consumable shares", "gpu", "gpu",
			[]resourceapi.DeviceAllocationConfiguration{nvOpaque(clm, gpuMPS)}, claim.SelectOptions{ConsumableShares: true}, "error"},
		{"MPS without consumable shares", "gpu", "gpu",
			[]resourceapi.DeviceAllocationConfiguration{nvOpaque(clm, gpuMPS)}, claim.SelectOptions{}, "GpuConfig/MPS/"},
		{"an unknown field is refused, as by the strict decoder", "gpu", "gpu",
			[]resourceapi.DeviceAllocationConfiguration{nvOpaque(clm, `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","shares":2}`)}, claim.SelectOptions{}, "error"},
		{"another API's kind is refused", "gpu", "gpu",
			[]resourceapi.DeviceAllocationConfiguration{nvOpaque(clm, `{"apiVersion":"example.com/v1","kind":"GpuConfig"}`)}, claim.SelectOptions{}, "error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := claim.PreparedDevice{Result: resourceapi.DeviceRequestAllocationResult{Request: c.request, Driver: "gpu.nvidia.com", Pool: "n", Device: "gpu-0"}, Configs: c.configs}
			got, err := claim.SelectConfig(d, c.typ, c.opts)
			s := "error"
			if err == nil {
				s = got.Kind + "/"
				if got.Sharing != nil {
					s += got.Sharing.Strategy
				}
				s += "/"
				if got.Sharing != nil && got.Sharing.TimeSlicingConfig != nil {
					s += got.Sharing.TimeSlicingConfig.Interval
				}
			} else if !errors.Is(err, claim.ErrDeviceConfig) {
				t.Errorf("error %v does not wrap ErrDeviceConfig", err)
			}
			if s != c.want {
				t.Errorf("got %s (err %v), want %s", s, err, c.want)
			}
		})
	}
}

// Under consumable shares two claims on one device must configure it alike.
func TestCheckSharedRequiresTheSameConfiguration(t *testing.T) {
	sel := func(params string) claim.DeviceConfig {
		var cfgs []resourceapi.DeviceAllocationConfiguration
		if params != "" {
			cfgs = append(cfgs, nvOpaque(resourceapi.AllocationConfigSourceClaim, params))
		}
		c, err := claim.SelectConfig(claim.PreparedDevice{Result: resourceapi.DeviceRequestAllocationResult{Request: "gpu", Device: "gpu-0"}, Configs: cfgs},
			"gpu", claim.SelectOptions{TimeSlicingSettings: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if err := claim.CheckShared("gpu-0", sel(gpuTS0), sel(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Default"}}}`)); err != nil {
		t.Errorf("normalised alike: %v", err)
	}
	if err := claim.CheckShared("gpu-0", sel(""), sel("")); err != nil {
		t.Errorf("both default: %v", err)
	}
	if err := claim.CheckShared("gpu-0", sel(gpuTS), sel("")); !errors.Is(err, claim.ErrDeviceConfig) {
		t.Errorf("time slicing and default: err = %v", err)
	}
}

func ExampleSelectConfig() {
	d := claim.PreparedDevice{
		Result: resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "gpu-0"},
		Configs: []resourceapi.DeviceAllocationConfiguration{nvOpaque(resourceapi.AllocationConfigSourceClaim,
			`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}`)},
	}
	c, err := claim.SelectConfig(d, "gpu", claim.SelectOptions{ConsumableShares: true})
	fmt.Println(c.Kind, c.Sharing.Strategy, c.Sharing.TimeSlicingConfig.Interval, err)
	// Output: GpuConfig TimeSlicing Long <nil>
}

func ExampleCheckShared() {
	ts := claim.DeviceConfig{Kind: claim.KindGPUConfig, Sharing: &claim.Sharing{Strategy: claim.StrategyTimeSlicing, TimeSlicingConfig: &claim.TimeSlicing{Interval: "Long"}}}
	fmt.Println(claim.CheckShared("gpu-0", ts, ts))
	fmt.Println(claim.CheckShared("gpu-0", ts, claim.DeviceConfig{Kind: claim.KindGPUConfig}))
	// Output:
	// <nil>
	// invalid device configuration: device gpu-0 has a configuration that conflicts with the claim already prepared on it
}
