package gates

// Features are the Kubernetes feature gates that change how claims are allocated, validated and checked.
// Each field carries the name of its gate. The zero value switches every gate off; use [Default] for the
// gates of a Kubernetes 1.37 cluster and change fields from there.
//
// In Kubernetes 1.37 DRAAdminAccess, DRAPrioritizedList and DRAResourceClaimDeviceStatus are GA and locked
// on (a 1.37 cluster cannot switch them off); DRADeviceTaints is GA and still may be switched off. Switching
// a locked gate off here reproduces an older cluster, as the upstream allocator
// (k8s.io/dynamic-resource-allocation/structured) does when it is given the same gates.
type Features struct {
	// DRAAdminAccess allows requests with adminAccess: true (GA, locked on in 1.37).
	DRAAdminAccess bool
	// DRAPrioritizedList allows requests with firstAvailable subrequests (GA, locked on in 1.37).
	DRAPrioritizedList bool
	// DRADeviceTaints makes device taints (from slices and DeviceTaintRules) block allocation unless the
	// request tolerates them (GA in 1.37, on by default).
	DRADeviceTaints bool
	// DRAPartitionableDevices allows shared counters, consumesCounters and perDeviceNodeSelection (beta,
	// on by default).
	DRAPartitionableDevices bool
	// DRAConsumableCapacity allows devices with allowMultipleAllocations and requests with capacity, and
	// declares device.allowMultipleAllocations in CEL for new expressions (beta, on by default).
	DRAConsumableCapacity bool
	// DRAFractionalCapacityRange does capacity range arithmetic in milli-units where possible (beta, on
	// by default).
	DRAFractionalCapacityRange bool
	// DRADeviceBindingConditions and DRAResourceClaimDeviceStatus together allow devices with binding
	// conditions; with either one off, such devices are not allocated. DRADeviceBindingConditions is beta
	// and on by default, DRAResourceClaimDeviceStatus GA and locked on in 1.37.
	DRADeviceBindingConditions   bool
	DRAResourceClaimDeviceStatus bool
	// DRAListTypeAttributes allows list-typed attributes in constraints and CEL (alpha, off by default).
	DRAListTypeAttributes bool
	// DRAOptionalNodeOperations allows devices from slices with skipNodeOperations (alpha, off by default).
	DRAOptionalNodeOperations bool
	// DRADerivedAttributes allows requests with derivedAttributes (alpha, off by default).
	DRADerivedAttributes bool
	// DRADeviceCompatibilityGroups allows compatibility groups on counter consumption; with the gate off,
	// slices that use them are ignored (alpha, off by default).
	DRADeviceCompatibilityGroups bool
}

// Default returns the gates Kubernetes 1.37 enables by default: everything that is beta or GA (admin
// access, prioritized lists, device taints, partitionable devices, consumable capacity, fractional capacity
// ranges, binding conditions with device status); the alpha gates (list-type attributes, optional node
// operations, derived attributes, compatibility groups) are off. It is what a nil *Features means.
func Default() Features {
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

// All returns every gate switched on, the alpha ones included.
func All() Features {
	f := Default()
	f.DRAListTypeAttributes = true
	f.DRAOptionalNodeOperations = true
	f.DRADerivedAttributes = true
	f.DRADeviceCompatibilityGroups = true
	return f
}

// Or returns *f, or [Default] when f is nil: the rule every *Features option of dralloc follows.
func Or(f *Features) Features {
	if f == nil {
		return Default()
	}
	return *f
}

// Implementation names one of the three implementations of the upstream allocator
// (k8s.io/dynamic-resource-allocation/structured: stable, incubating, experimental). Kubernetes runs the most
// stable one that supports every enabled gate; the older ones do not know some newer fields at all, so which one
// runs changes how such fields are treated.
type Implementation int

const (
	// Stable supports admin access, prioritized lists, partitionable devices and device taints.
	Stable Implementation = iota
	// Incubating adds binding conditions with device status, consumable capacity and fractional ranges.
	Incubating
	// Experimental adds list-type and derived attributes, optional node operations and compatibility groups.
	Experimental
)

// Implementation is the implementation of the upstream allocator that Kubernetes runs with these gates.
func (f Features) Implementation() Implementation {
	switch {
	case f.DRAListTypeAttributes || f.DRADerivedAttributes || f.DRAOptionalNodeOperations || f.DRADeviceCompatibilityGroups:
		return Experimental
	case f.DRAConsumableCapacity || f.DRAFractionalCapacityRange || f.BindingConditions():
		return Incubating
	}
	return Stable
}

// BindingConditions reports whether devices with binding conditions may be allocated: Kubernetes needs both
// DRADeviceBindingConditions and DRAResourceClaimDeviceStatus for that.
func (f Features) BindingConditions() bool {
	return f.DRADeviceBindingConditions && f.DRAResourceClaimDeviceStatus
}
