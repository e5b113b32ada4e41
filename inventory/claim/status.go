package claim

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/validation"
)

// DeviceStatus starts the status entry of an allocated device: its driver,
// pool, device and share ID, as status.devices keys them. Add conditions with
// apimeta.SetStatusCondition, opaque data and NetworkData, then store it with
// SetDeviceStatus.
func DeviceStatus(result resourceapi.DeviceRequestAllocationResult) resourceapi.AllocatedDeviceStatus {
	st := resourceapi.AllocatedDeviceStatus{Driver: result.Driver, Pool: result.Pool, Device: result.Device}
	if result.ShareID != nil {
		st.ShareID = ptr.To(string(*result.ShareID))
	}
	return st
}

// NetworkData is the network data of a device: interface name, hardware
// (MAC) address and addresses in CIDR form, in the given order.
func NetworkData(interfaceName, hardwareAddress string, ips ...netip.Prefix) *resourceapi.NetworkDeviceData {
	nd := &resourceapi.NetworkDeviceData{InterfaceName: interfaceName, HardwareAddress: hardwareAddress}
	for _, p := range ips {
		nd.IPs = append(nd.IPs, p.String())
	}
	return nd
}

// SetDeviceStatus returns a copy of the claim whose status.devices holds st,
// replacing the entry with the same driver, pool, device and share ID or
// appending it. The result is checked with ValidateDeviceStatuses, so a
// driver never writes a status the API server rejects; claim is not modified.
func SetDeviceStatus(claim *resourceapi.ResourceClaim, st resourceapi.AllocatedDeviceStatus) (*resourceapi.ResourceClaim, error) {
	if claim == nil {
		return nil, fmt.Errorf("%w: claim must not be nil", ErrInvalidClaim)
	}
	out := claim.DeepCopy()
	st = *st.DeepCopy()
	i := slices.IndexFunc(out.Status.Devices, func(d resourceapi.AllocatedDeviceStatus) bool { return statusKey(d) == statusKey(st) })
	if i >= 0 {
		out.Status.Devices[i] = st
	} else {
		out.Status.Devices = append(out.Status.Devices, st)
	}
	if errs := ValidateDeviceStatuses(out); len(errs) > 0 {
		return nil, fmt.Errorf("%w: ResourceClaim %s: %w", ErrInvalidClaim, claimName(claim), errs.ToAggregate())
	}
	return out, nil
}

type key struct{ driver, pool, device, share string }

func statusKey(d resourceapi.AllocatedDeviceStatus) key {
	return key{d.Driver, d.Pool, d.Device, ptr.Deref(d.ShareID, "")}
}

// ValidateDeviceStatuses checks status.devices of a claim as the API server
// does; it is the module's one validation of them, validation.DeviceStatuses
// (allocator/validation), which also runs as part of validating a claim.
// Errors name the field.
func ValidateDeviceStatuses(claim *resourceapi.ResourceClaim) field.ErrorList {
	return validation.DeviceStatuses(claim)
}

// NetworkInterface is the network data one device of a pod reports.
type NetworkInterface struct {
	// PodClaim is the name of the claim in the pod's spec.resourceClaims.
	PodClaim string
	// Claim is the ResourceClaim, "<namespace>/<name>".
	Claim string
	// Request is the request (or "<request>/<subrequest>") the device was
	// allocated for.
	Request string
	// Driver, Pool and Device name the device.
	Driver, Pool, Device string
	// InterfaceName is the interface in the pod; empty when not reported.
	InterfaceName string
	// HardwareAddress is the MAC address; empty when not reported.
	HardwareAddress string
	// IPs are the addresses with their prefix lengths, in the order reported.
	IPs []netip.Prefix
}

// NetworkInterfaces returns the network data the drivers reported for the
// devices allocated to a pod: the pod's claims in spec.resourceClaims order
// (a claim template's claim found through status.resourceClaimStatuses, as
// the kubelet finds it), and within a claim its allocation results in order.
// Devices without network data are left out. claims may hold other claims
// too; a claim of the pod that is missing or not allocated is an error, as is
// an address that is not in CIDR form.
func NetworkInterfaces(pod *corev1.Pod, claims []*resourceapi.ResourceClaim) ([]NetworkInterface, error) {
	if pod == nil {
		return nil, fmt.Errorf("%w: pod must not be nil", ErrInvalidClaim)
	}
	byName := map[string]*resourceapi.ResourceClaim{}
	for _, c := range claims {
		if c != nil && c.Namespace == pod.Namespace {
			byName[c.Name] = c
		}
	}
	generated := map[string]*string{}
	for _, s := range pod.Status.ResourceClaimStatuses {
		generated[s.Name] = s.ResourceClaimName
	}
	var out []NetworkInterface
	for i, pc := range pod.Spec.ResourceClaims {
		var name string
		switch {
		case pc.ResourceClaimName != nil:
			name = *pc.ResourceClaimName
		case generated[pc.Name] != nil:
			name = *generated[pc.Name]
		default:
			// The claim of a template is not created yet, or not needed.
			continue
		}
		c, ok := byName[name]
		p := field.NewPath("spec", "resourceClaims").Index(i)
		if !ok {
			return nil, fmt.Errorf("%w: Pod %s/%s: %w", ErrInvalidClaim, pod.Namespace, pod.Name, field.NotFound(p, name))
		}
		if c.Status.Allocation == nil {
			return nil, fmt.Errorf("%w: ResourceClaim %s: %w", ErrInvalidClaim, claimName(c), field.Required(field.NewPath("status", "allocation"), "not allocated"))
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			si := statusForShare(c, r)
			if si < 0 || c.Status.Devices[si].NetworkData == nil {
				continue
			}
			st := &c.Status.Devices[si]
			ni := NetworkInterface{PodClaim: pc.Name, Claim: claimName(c), Request: r.Request, Driver: r.Driver, Pool: r.Pool, Device: r.Device,
				InterfaceName: st.NetworkData.InterfaceName, HardwareAddress: st.NetworkData.HardwareAddress}
			for j, ip := range st.NetworkData.IPs {
				pfx, err := netip.ParsePrefix(ip)
				if err != nil {
					return nil, fmt.Errorf("%w: ResourceClaim %s: %w", ErrInvalidClaim, claimName(c),
						field.Invalid(field.NewPath("status", "devices").Index(si).Child("networkData", "ips").Index(j), ip, "must be an address in CIDR form"))
				}
				ni.IPs = append(ni.IPs, pfx)
			}
			out = append(out, ni)
		}
	}
	return out, nil
}

// statusForShare is the index of the status entry of exactly the result's
// device and share, or -1.
func statusForShare(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult) int {
	want := statusKey(DeviceStatus(r))
	return slices.IndexFunc(c.Status.Devices, func(d resourceapi.AllocatedDeviceStatus) bool { return statusKey(d) == want })
}
