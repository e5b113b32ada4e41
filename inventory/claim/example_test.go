package claim_test

import (
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/inventory/claim"
)

// exampleClaim has one device that binds once the driver reports it
// attached.
func exampleClaim() *resourceapi.ResourceClaim {
	allocatedAt := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "train"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			AllocationTimestamp: &metav1.Time{Time: allocatedAt},
			Devices: resourceapi.DeviceAllocationResult{
				Results: []resourceapi.DeviceRequestAllocationResult{{
					Request: "gpu", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-0",
					BindingConditions: []string{"Attached"}, BindingFailureConditions: []string{"AttachFailed"},
				}},
				Config: []resourceapi.DeviceAllocationConfiguration{
					{Source: resourceapi.AllocationConfigSourceClaim, DeviceConfiguration: resourceapi.DeviceConfiguration{
						Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"sharing":"none"}`)}}}},
					{Source: resourceapi.AllocationConfigSourceClass, DeviceConfiguration: resourceapi.DeviceConfiguration{
						Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"sharing":"timeslice"}`)}}}},
				},
			},
		}},
	}
}

// The scheduler waits until the driver reports the device attached, binds
// then, and gives up after the timeout.
func ExampleCheckBinding() {
	c := exampleClaim()
	at := c.Status.Allocation.AllocationTimestamp.Time
	v, _ := claim.CheckBinding([]*resourceapi.ResourceClaim{c}, at.Add(time.Minute), claim.BindingOptions{})
	fmt.Println(v.Decision, "-", v.Reason)
	v, _ = claim.CheckBinding([]*resourceapi.ResourceClaim{c}, at.Add(11*time.Minute), claim.BindingOptions{})
	fmt.Println(v.Decision)

	st := claim.DeviceStatus(c.Status.Allocation.Devices.Results[0])
	apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: "Attached", Status: metav1.ConditionTrue, Reason: "FabricAttached"})
	c, _ = claim.SetDeviceStatus(c, st)
	v, _ = claim.CheckBinding([]*resourceapi.ResourceClaim{c}, at.Add(2*time.Minute), claim.BindingOptions{})
	fmt.Println(v.Decision)
	// Output:
	// Wait - device gpu.example.com/node-a/gpu-0: no status reported yet
	// Reschedule
	// Bind
}

// A driver reports the device's state and network data in status.devices.
func ExampleSetDeviceStatus() {
	c := exampleClaim()
	st := claim.DeviceStatus(c.Status.Allocation.Devices.Results[0])
	apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Configured"})
	st.NetworkData = claim.NetworkData("net1", "00:11:22:33:44:55", netip.MustParsePrefix("192.0.2.5/24"))
	c, err := claim.SetDeviceStatus(c, st)
	fmt.Println(len(c.Status.Devices), c.Status.Devices[0].Device, c.Status.Devices[0].NetworkData.IPs, err)
	// Output: 1 gpu-0 [192.0.2.5/24] <nil>
}

func ExampleDeviceStatus() {
	st := claim.DeviceStatus(resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-0"})
	fmt.Println(st.Driver, st.Pool, st.Device, st.ShareID == nil)
	// Output: gpu.example.com node-a gpu-0 true
}

func ExampleNetworkData() {
	nd := claim.NetworkData("eth1", "aa:bb:cc:dd:ee:ff", netip.MustParsePrefix("10.0.0.7/16"), netip.MustParsePrefix("fd00::7/64"))
	fmt.Println(nd.InterfaceName, nd.HardwareAddress, nd.IPs)
	// Output: eth1 aa:bb:cc:dd:ee:ff [10.0.0.7/16 fd00::7/64]
}

// ValidateDeviceStatuses names what the API server would reject.
func ExampleValidateDeviceStatuses() {
	c := exampleClaim()
	c.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-9",
		NetworkData: &resourceapi.NetworkDeviceData{IPs: []string{"192.0.2.5"}}}}
	for _, err := range claim.ValidateDeviceStatuses(c) {
		fmt.Println(err.Field)
	}
	// Output:
	// status.devices[0]
	// status.devices[0].networkData.ips[0]
}

// The interfaces and addresses of a pod's network devices.
func ExampleNetworkInterfaces() {
	c := exampleClaim()
	st := claim.DeviceStatus(c.Status.Allocation.Devices.Results[0])
	st.NetworkData = claim.NetworkData("net1", "", netip.MustParsePrefix("192.0.2.5/24"))
	c, _ = claim.SetDeviceStatus(c, st)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "trainer"},
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("train")}}}}
	nis, _ := claim.NetworkInterfaces(pod, []*resourceapi.ResourceClaim{c})
	for _, ni := range nis {
		fmt.Println(ni.PodClaim, ni.Device, ni.InterfaceName, ni.IPs)
	}
	// Output: gpu gpu-0 net1 [192.0.2.5/24]
}

// NodePrepareResources: the driver's devices, each with its configurations,
// the class's before the claim's.
func ExamplePrepare() {
	devs, _ := claim.Prepare(exampleClaim(), "gpu.example.com")
	for _, d := range devs {
		fmt.Println(d.Result.Request, d.Result.Device)
		for _, c := range d.Configs {
			fmt.Println(" ", c.Source, string(c.Opaque.Parameters.Raw))
		}
	}
	// Output:
	// gpu gpu-0
	//   FromClass {"sharing":"timeslice"}
	//   FromClaim {"sharing":"none"}
}
