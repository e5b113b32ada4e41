package allocator

// Features are the Kubernetes feature gates that change how claims are allocated. Each field carries the
// name of its gate. A field used by a claim or a ResourceSlice while its gate is off is handled as the
// Kubernetes allocator handles it: usually a fatal error for claims (a request with firstAvailable while
// DRAPrioritizedList is off) and an ignored device or slice for ResourceSlices (a device with shared
// counters while DRAPartitionableDevices is off).
type Features struct {
	// DRAAdminAccess allows requests with adminAccess: true.
	DRAAdminAccess bool
	// DRAPrioritizedList allows requests with firstAvailable subrequests.
	DRAPrioritizedList bool
	// DRADeviceTaints makes device taints (from slices and DeviceTaintRules) block allocation unless the
	// request tolerates them.
	DRADeviceTaints bool
	// DRAPartitionableDevices allows shared counters, consumesCounters and perDeviceNodeSelection.
	DRAPartitionableDevices bool
	// DRAConsumableCapacity allows devices with allowMultipleAllocations and requests with capacity.
	DRAConsumableCapacity bool
	// DRAFractionalCapacityRange does capacity range arithmetic in milli-units where possible.
	DRAFractionalCapacityRange bool
	// DRADeviceBindingConditions and DRAResourceClaimDeviceStatus together allow devices with binding
	// conditions; with either one off, such devices are not allocated.
	DRADeviceBindingConditions   bool
	DRAResourceClaimDeviceStatus bool
	// DRAListTypeAttributes allows list-typed attributes in constraints (and CEL).
	DRAListTypeAttributes bool
	// DRAOptionalNodeOperations allows devices from slices with skipNodeOperations.
	DRAOptionalNodeOperations bool
	// DRADerivedAttributes allows requests with derivedAttributes.
	DRADerivedAttributes bool
	// DRADeviceCompatibilityGroups allows compatibility groups on counter consumption; with the gate off,
	// slices that use them are ignored.
	DRADeviceCompatibilityGroups bool
}

// DefaultFeatures returns the gates Kubernetes 1.37 enables by default: everything that is beta or GA
// (admin access, prioritized lists, device taints, partitionable devices, consumable capacity, fractional
// capacity ranges, binding conditions with device status); the alpha gates (list-type attributes,
// optional node operations, derived attributes, compatibility groups) are off.
func DefaultFeatures() Features {
	return Features{
		DRAAdminAccess:               true,
		DRAPrioritizedList:           true,
		DRADeviceTaints:              true,
		DRAPartitionableDevices:      true,
		DRAConsumableCapacity:        true,
		DRAFractionalCapacityRange:   true,
		DRADeviceBindingConditions:   true,
		DRAResourceClaimDeviceStatus: true,
	}
}

// AllFeatures returns every gate switched on.
func AllFeatures() Features {
	f := DefaultFeatures()
	f.DRAListTypeAttributes = true
	f.DRAOptionalNodeOperations = true
	f.DRADerivedAttributes = true
	f.DRADeviceCompatibilityGroups = true
	return f
}

// bindingAndStatus is the allocator-level switch Kubernetes derives from the two binding gates.
func (f Features) bindingAndStatus() bool {
	return f.DRADeviceBindingConditions && f.DRAResourceClaimDeviceStatus
}

// implementation names the variant of the Kubernetes allocator that a set of gates selects. Kubernetes
// keeps three (k8s.io/dynamic-resource-allocation/structured: stable, incubating, experimental) and uses
// the most stable one that supports every enabled gate; they differ in details for fields whose gate is
// off, which dralloc reproduces.
type implementation int

const (
	implStable       implementation = iota // admin access, prioritized list, partitionable devices, taints
	implIncubating                         // + binding conditions, consumable capacity, fractional ranges
	implExperimental                       // + list-type and derived attributes, optional node operations, compatibility groups
)

func (f Features) implementation() implementation {
	switch {
	case f.DRAListTypeAttributes || f.DRADerivedAttributes || f.DRAOptionalNodeOperations || f.DRADeviceCompatibilityGroups:
		return implExperimental
	case f.DRAConsumableCapacity || f.DRAFractionalCapacityRange || f.bindingAndStatus():
		return implIncubating
	}
	return implStable
}
