package claim_test

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/inventory/claim"
)

func TestSetDeviceStatusReplacesTheEntryOfTheSameDevice(t *testing.T) {
	c := allocated("c", result("gpu", "dev-0", nil, nil), result("gpu", "dev-1", nil, nil))
	st := claim.DeviceStatus(c.Status.Allocation.Devices.Results[1])
	st.Conditions = []metav1.Condition{cond("Ready", metav1.ConditionFalse)}
	c1, err := claim.SetDeviceStatus(c, st)
	if err != nil {
		t.Fatal(err)
	}
	st.Conditions = []metav1.Condition{cond("Ready", metav1.ConditionTrue)}
	c2, err := claim.SetDeviceStatus(c1, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Status.Devices) != 0 || len(c1.Status.Devices) != 1 || c1.Status.Devices[0].Conditions[0].Status != metav1.ConditionFalse {
		t.Errorf("inputs were modified: %v %v", c.Status.Devices, c1.Status.Devices)
	}
	if len(c2.Status.Devices) != 1 || c2.Status.Devices[0].Device != "dev-1" || c2.Status.Devices[0].Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("status.devices = %+v, want the one entry of dev-1, Ready True", c2.Status.Devices)
	}
}

func TestValidateDeviceStatuses(t *testing.T) {
	base := allocated("c", result("gpu", "dev-0", nil, nil))
	ok := claim.DeviceStatus(base.Status.Allocation.Devices.Results[0])
	ips := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("10.0.0.%d/24", i+1))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		edit func(*resourceapi.AllocatedDeviceStatus)
		want string // empty: valid
	}{
		{"an entry for an allocated device with network data is valid", func(s *resourceapi.AllocatedDeviceStatus) {
			s.NetworkData = claim.NetworkData("net1", "00:11:22:33:44:55", netip.MustParsePrefix("192.0.2.5/24"), netip.MustParsePrefix("2001:db8::5/64"))
			s.Data = &runtime.RawExtension{Raw: []byte(`{"vf":3}`)}
		}, ""},
		{"a device that is not allocated", func(s *resourceapi.AllocatedDeviceStatus) { s.Device = "dev-9" },
			"status.devices[0]: Invalid value: \"gpu.example.com/node-a/dev-9\": must be an allocated device in the claim"},
		{"a share ID the allocation does not have", func(s *resourceapi.AllocatedDeviceStatus) { s.ShareID = ptr.To("8f4c1b0e-0000-4000-8000-000000000001") },
			"must be an allocated device in the claim"},
		{"a share ID that is not a UUID", func(s *resourceapi.AllocatedDeviceStatus) { s.ShareID = ptr.To("Share-1") }, "status.devices[0].shareID"},
		{"a device name that is not a DNS label", func(s *resourceapi.AllocatedDeviceStatus) { s.Device = "dev.0" }, "status.devices[0].device"},
		{"nine conditions", func(s *resourceapi.AllocatedDeviceStatus) {
			for i := range 9 {
				s.Conditions = append(s.Conditions, cond(fmt.Sprintf("C%d", i), metav1.ConditionTrue))
			}
		}, "status.devices[0].conditions: Too many: 9: must have at most 8 items"},
		{"a condition without reason", func(s *resourceapi.AllocatedDeviceStatus) {
			s.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: metav1.Time{Time: t0}}}
		}, "status.devices[0].conditions[0].reason"},
		{"data that is not a JSON object", func(s *resourceapi.AllocatedDeviceStatus) { s.Data = &runtime.RawExtension{Raw: []byte(`[1,2]`)} },
			"status.devices[0].data: Invalid value: \"<value omitted>\": must be a valid JSON object"},
		{"data over 10 KiB", func(s *resourceapi.AllocatedDeviceStatus) {
			s.Data = &runtime.RawExtension{Raw: []byte(`{"x":"` + strings.Repeat("a", 10*1024) + `"}`)}
		}, "status.devices[0].data: Too long"},
		{"an interface name over 256 bytes", func(s *resourceapi.AllocatedDeviceStatus) {
			s.NetworkData = &resourceapi.NetworkDeviceData{InterfaceName: strings.Repeat("n", 257)}
		}, "status.devices[0].networkData.interfaceName: Too long"},
		{"a hardware address over 128 bytes", func(s *resourceapi.AllocatedDeviceStatus) {
			s.NetworkData = &resourceapi.NetworkDeviceData{HardwareAddress: strings.Repeat("0", 129)}
		}, "status.devices[0].networkData.hardwareAddress: Too long"},
		{"seventeen addresses", func(s *resourceapi.AllocatedDeviceStatus) {
			s.NetworkData = &resourceapi.NetworkDeviceData{IPs: ips(17)}
		},
			"status.devices[0].networkData.ips: Too many: 17"},
		{"an address without prefix length", func(s *resourceapi.AllocatedDeviceStatus) {
			s.NetworkData = &resourceapi.NetworkDeviceData{IPs: []string{"192.0.2.5"}}
		}, "status.devices[0].networkData.ips[0]"},
		{"the same address twice", func(s *resourceapi.AllocatedDeviceStatus) {
			s.NetworkData = &resourceapi.NetworkDeviceData{IPs: []string{"192.0.2.5/24", "192.0.2.5/24"}}
		}, "status.devices[0].networkData.ips[1]: Duplicate value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base.DeepCopy()
			st := *ok.DeepCopy()
			tc.edit(&st)
			c.Status.Devices = []resourceapi.AllocatedDeviceStatus{st}
			errs := claim.ValidateDeviceStatuses(c)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Errorf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Errorf("errors = %v, want one containing %q", errs, tc.want)
			}
			if _, err := claim.SetDeviceStatus(base, st); !errors.Is(err, claim.ErrInvalidClaim) {
				t.Errorf("SetDeviceStatus accepted an invalid status: %v", err)
			}
		})
	}
	t.Run("two entries for one device", func(t *testing.T) {
		c := base.DeepCopy()
		c.Status.Devices = []resourceapi.AllocatedDeviceStatus{ok, ok}
		if errs := claim.ValidateDeviceStatuses(c); !strings.Contains(errs.ToAggregate().Error(), "status.devices[1]: Duplicate value") {
			t.Errorf("errors = %v", errs)
		}
	})
}

func TestNetworkInterfacesFollowThePodsClaims(t *testing.T) {
	nic := allocated("pod-a-nic-x7k2", result("nic", "vf-0", nil, nil), result("nic", "vf-1", nil, nil), result("nic", "vf-2", nil, nil))
	for _, dev := range []struct {
		name string
		nd   *resourceapi.NetworkDeviceData
	}{{"vf-2", claim.NetworkData("net2", "", netip.MustParsePrefix("10.1.0.7/16"))}, {"vf-0", claim.NetworkData("net1", "aa:bb:cc:dd:ee:00", netip.MustParsePrefix("10.0.0.7/16"), netip.MustParsePrefix("fd00::7/64"))}} {
		st := claim.DeviceStatus(resourceapi.DeviceRequestAllocationResult{Driver: "gpu.example.com", Pool: "node-a", Device: dev.name})
		st.NetworkData = dev.nd
		var err error
		if nic, err = claim.SetDeviceStatus(nic, st); err != nil {
			t.Fatal(err)
		}
	}
	shared := allocated("shared-gpu", result("gpu", "dev-0", nil, nil))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-a"},
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{
			{Name: "gpu", ResourceClaimName: ptr.To("shared-gpu")},
			{Name: "nic", ResourceClaimTemplateName: ptr.To("nic-template")},
			{Name: "unused", ResourceClaimTemplateName: ptr.To("other")},
		}},
		Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "nic", ResourceClaimName: ptr.To("pod-a-nic-x7k2")}}},
	}
	got, err := claim.NetworkInterfaces(pod, []*resourceapi.ResourceClaim{shared, nic})
	if err != nil {
		t.Fatal(err)
	}
	// In allocation order (vf-0 before vf-2), vf-1 reported nothing.
	want := []claim.NetworkInterface{
		{PodClaim: "nic", Claim: "default/pod-a-nic-x7k2", Request: "nic", Driver: "gpu.example.com", Pool: "node-a", Device: "vf-0",
			InterfaceName: "net1", HardwareAddress: "aa:bb:cc:dd:ee:00", IPs: []netip.Prefix{netip.MustParsePrefix("10.0.0.7/16"), netip.MustParsePrefix("fd00::7/64")}},
		{PodClaim: "nic", Claim: "default/pod-a-nic-x7k2", Request: "nic", Driver: "gpu.example.com", Pool: "node-a", Device: "vf-2",
			InterfaceName: "net2", IPs: []netip.Prefix{netip.MustParsePrefix("10.1.0.7/16")}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("interfaces =\n%+v\nwant\n%+v", got, want)
	}
	if _, err := claim.NetworkInterfaces(pod, []*resourceapi.ResourceClaim{nic}); !errors.Is(err, claim.ErrInvalidClaim) ||
		!strings.Contains(err.Error(), `Pod default/pod-a: spec.resourceClaims[0]: Not found: "shared-gpu"`) {
		t.Errorf("missing claim: err = %v", err)
	}
}
