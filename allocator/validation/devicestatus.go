package validation

import (
	"context"
	"encoding/json"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// statusKey identifies the device (and share) an entry of status.devices is about.
type statusKey struct{ driver, pool, device, share string }

// DeviceStatuses validates status.devices of a claim, what DRA drivers write, as the API server does
// (pkg/apis/resource/validation, validateDeviceStatus and validateNetworkDeviceData): driver, pool and
// device names, a share ID that is a UUID, each entry naming a device allocated in the claim and at most
// once, at most 8 valid conditions of distinct types, data of at most 10 KiB that is a JSON object, an
// interface name of at most 256 bytes, a hardware address of at most 128, and at most 16 distinct
// addresses in CIDR form. [ResourceClaim] includes it.
func DeviceStatuses(claim *resourceapi.ResourceClaim) field.ErrorList {
	var errs field.ErrorList
	if claim == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "claim must not be nil")}
	}
	allocated := map[statusKey]bool{}
	if a := claim.Status.Allocation; a != nil {
		for _, r := range a.Devices.Results {
			share := ""
			if r.ShareID != nil {
				share = string(*r.ShareID)
			}
			allocated[statusKey{r.Driver, r.Pool, r.Device, share}] = true
		}
	}
	seen := map[statusKey]bool{}
	for i, d := range claim.Status.Devices {
		p := field.NewPath("status", "devices").Index(i)
		errs = append(errs, driverName(p.Child("driver"), d.Driver)...)
		errs = append(errs, poolName(p.Child("pool"), d.Pool)...)
		errs = append(errs, dnsLabel(p.Child("device"), d.Device)...)
		if d.ShareID != nil {
			errs = append(errs, validate.UUID(context.Background(), operation.Operation{}, p.Child("shareID"), d.ShareID, nil)...)
		}
		k := statusKey{d.Driver, d.Pool, d.Device, ptr.Deref(d.ShareID, "")}
		id := fmt.Sprintf("%s/%s/%s", d.Driver, d.Pool, d.Device)
		if k.share != "" {
			id += "/" + k.share
		}
		if seen[k] {
			errs = append(errs, field.Duplicate(p, id))
		}
		seen[k] = true
		if !allocated[k] {
			errs = append(errs, field.Invalid(p, id, "must be an allocated device in the claim"))
		}
		if len(d.Conditions) > resourceapi.AllocatedDeviceStatusMaxConditions {
			errs = append(errs, field.TooMany(p.Child("conditions"), len(d.Conditions), resourceapi.AllocatedDeviceStatusMaxConditions))
		}
		errs = append(errs, metav1validation.ValidateConditions(d.Conditions, p.Child("conditions"))...)
		if d.Data != nil && len(d.Data.Raw) > 0 {
			errs = append(errs, statusData(p.Child("data"), d.Data.Raw)...)
		}
		errs = append(errs, networkData(p.Child("networkData"), d.NetworkData)...)
	}
	return errs
}

func statusData(p *field.Path, raw []byte) field.ErrorList {
	if len(raw) > resourceapi.AllocatedDeviceStatusDataMaxLength {
		return field.ErrorList{field.TooLong(p, "", resourceapi.AllocatedDeviceStatusDataMaxLength)}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return field.ErrorList{field.Invalid(p, "<value omitted>", "error parsing data as JSON: "+err.Error())}
	}
	if v == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	if _, ok := v.(map[string]any); !ok {
		return field.ErrorList{field.Invalid(p, "<value omitted>", "must be a valid JSON object")}
	}
	return nil
}

func networkData(p *field.Path, nd *resourceapi.NetworkDeviceData) field.ErrorList {
	if nd == nil {
		return nil
	}
	var errs field.ErrorList
	if len(nd.InterfaceName) > resourceapi.NetworkDeviceDataInterfaceNameMaxLength {
		errs = append(errs, field.TooLong(p.Child("interfaceName"), "", resourceapi.NetworkDeviceDataInterfaceNameMaxLength))
	}
	if len(nd.HardwareAddress) > resourceapi.NetworkDeviceDataHardwareAddressMaxLength {
		errs = append(errs, field.TooLong(p.Child("hardwareAddress"), "", resourceapi.NetworkDeviceDataHardwareAddressMaxLength))
	}
	ips := p.Child("ips")
	if len(nd.IPs) > resourceapi.NetworkDeviceDataMaxIPs {
		return append(errs, field.TooMany(ips, len(nd.IPs), resourceapi.NetworkDeviceDataMaxIPs))
	}
	seen := map[string]bool{}
	for i, ip := range nd.IPs {
		errs = append(errs, k8svalidation.IsValidInterfaceAddress(ips.Index(i), ip)...)
		if seen[ip] {
			errs = append(errs, field.Duplicate(ips.Index(i), ip))
		}
		seen[ip] = true
	}
	return errs
}
