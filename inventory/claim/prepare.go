package claim

import (
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PreparedDevice is one device a claim allocated for a driver, with what the
// driver must apply to it.
type PreparedDevice struct {
	// Result is the allocation result: request, pool, device, share ID,
	// admin access, consumed capacity, binding conditions.
	Result resourceapi.DeviceRequestAllocationResult
	// Configs are the driver's opaque configurations that apply to the
	// device: those from the class first, then those from the claim, each in
	// the order of status.allocation.devices.config. A driver applies them
	// in this order, so that a claim's configuration overrides its class's.
	Configs []resourceapi.DeviceAllocationConfiguration
}

// Prepare lists, in the order of the allocation results, the devices an
// allocated claim holds of driver, with the configurations that apply to
// each — what NodePrepareResources has to set up. A configuration applies to
// a device when it is opaque, for driver, and names no request, the device's
// request, or the request a subrequest belongs to (as
// k8s.io/dynamic-resource-allocation/resourceclaim.ConfigForResult decides).
//
// The kubelet calls a driver only for claims allocated on its node, so Prepare
// does not look at the node. A claim that is nil, not allocated or whose
// configuration has an unknown source is an error naming the field; the
// claim is not modified and the results are deep copies.
func Prepare(claim *resourceapi.ResourceClaim, driver string) ([]PreparedDevice, error) {
	if claim == nil {
		return nil, fmt.Errorf("%w: claim must not be nil", ErrInvalidClaim)
	}
	a := claim.Status.Allocation
	if a == nil {
		return nil, fmt.Errorf("%w: ResourceClaim %s: %w", ErrInvalidClaim, claimName(claim),
			field.Required(field.NewPath("status", "allocation"), "the claim must be allocated before it is prepared"))
	}
	var class, fromClaim []resourceapi.DeviceAllocationConfiguration
	for i, c := range a.Devices.Config {
		switch c.Source {
		case resourceapi.AllocationConfigSourceClass:
			class = append(class, c)
		case resourceapi.AllocationConfigSourceClaim:
			fromClaim = append(fromClaim, c)
		default:
			return nil, fmt.Errorf("%w: ResourceClaim %s: %w", ErrInvalidClaim, claimName(claim),
				field.NotSupported(field.NewPath("status", "allocation", "devices", "config").Index(i).Child("source"), c.Source,
					[]resourceapi.AllocationConfigSource{resourceapi.AllocationConfigSourceClass, resourceapi.AllocationConfigSourceClaim}))
		}
	}
	ordered := append(class, fromClaim...)
	var out []PreparedDevice
	for _, r := range a.Devices.Results {
		if r.Driver != driver {
			continue
		}
		d := PreparedDevice{Result: *r.DeepCopy()}
		for _, c := range ordered {
			if c.Opaque != nil && c.Opaque.Driver == driver && appliesTo(c.Requests, r.Request) {
				d.Configs = append(d.Configs, *c.DeepCopy())
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// appliesTo: no requests named, the request itself, or its main request.
func appliesTo(requests []string, request string) bool {
	if len(requests) == 0 || slices.Contains(requests, request) {
		return true
	}
	main, _, isSub := strings.Cut(request, "/")
	return isSub && slices.Contains(requests, main)
}
