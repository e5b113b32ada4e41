package claim_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dralloc/dralloc/inventory/claim"
)

func opaque(source resourceapi.AllocationConfigSource, driver, params string, requests ...string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{Source: source, Requests: requests, DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(params)}}}}
}

func TestPrepareResolvesConfigsClassFirst(t *testing.T) {
	const drv = "gpu.example.com"
	c := allocated("train", result("gpu", "dev-0", nil, nil), result("big/mig", "dev-1", nil, nil))
	nic := result("nic", "vf-0", nil, nil)
	nic.Driver = "nic.example.com"
	c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, nic)
	c.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{
		opaque(resourceapi.AllocationConfigSourceClaim, drv, `{"claim":"all"}`),
		opaque(resourceapi.AllocationConfigSourceClass, drv, `{"class":"gpu"}`, "gpu"),
		opaque(resourceapi.AllocationConfigSourceClaim, drv, `{"claim":"big"}`, "big"),
		opaque(resourceapi.AllocationConfigSourceClaim, "nic.example.com", `{"mtu":9000}`),
		opaque(resourceapi.AllocationConfigSourceClass, drv, `{"class":"any"}`),
		opaque(resourceapi.AllocationConfigSourceClaim, drv, `{"claim":"other sub"}`, "big/other"),
		{Source: resourceapi.AllocationConfigSourceClaim}, // not opaque: nothing for a driver
	}
	before := c.DeepCopy()
	got, err := claim.Prepare(c, drv)
	if err != nil {
		t.Fatal(err)
	}
	params := func(d claim.PreparedDevice) []string {
		var out []string
		for _, cfg := range d.Configs {
			out = append(out, string(cfg.Opaque.Parameters.Raw))
		}
		return out
	}
	if len(got) != 2 || got[0].Result.Device != "dev-0" || got[1].Result.Device != "dev-1" {
		t.Fatalf("devices = %+v, want dev-0 and dev-1 of %s only", got, drv)
	}
	// Class configurations first, then the claim's; each in list order;
	// "big" applies to its subrequest "big/mig", "big/other" does not.
	if want := []string{`{"class":"gpu"}`, `{"class":"any"}`, `{"claim":"all"}`}; !reflect.DeepEqual(params(got[0]), want) {
		t.Errorf("dev-0 configs = %v, want %v", params(got[0]), want)
	}
	if want := []string{`{"class":"any"}`, `{"claim":"all"}`, `{"claim":"big"}`}; !reflect.DeepEqual(params(got[1]), want) {
		t.Errorf("dev-1 configs = %v, want %v", params(got[1]), want)
	}
	got[0].Configs[0].Opaque.Parameters.Raw[2] = 'X'
	if !reflect.DeepEqual(before, c) {
		t.Error("the claim was modified, or Prepare shares memory with it")
	}
}

func TestPrepareRejects(t *testing.T) {
	unallocated := allocated("c")
	unallocated.Status.Allocation = nil
	badSource := allocated("c", result("gpu", "dev-0", nil, nil))
	badSource.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{opaque("FromSomewhere", "gpu.example.com", `{}`)}
	for _, tc := range []struct {
		name  string
		claim *resourceapi.ResourceClaim
		want  string
	}{
		{"a claim that is not allocated", unallocated, "ResourceClaim default/c: status.allocation: Required value"},
		{"a configuration of unknown source", badSource, `ResourceClaim default/c: status.allocation.devices.config[0].source: Unsupported value: "FromSomewhere"`},
		{"no claim", nil, "claim must not be nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := claim.Prepare(tc.claim, "gpu.example.com")
			if !errors.Is(err, claim.ErrInvalidClaim) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
