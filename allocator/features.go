package allocator

import "github.com/dralloc/dralloc/allocator/gates"

// Features are the Kubernetes feature gates that change how claims are allocated: gates.Features, the one
// type every package of dralloc takes, with fields named as the gates. A field used by a claim or a
// ResourceSlice while its gate is off is handled as the Kubernetes allocator handles it: usually a fatal
// error for claims (a request with firstAvailable while DRAPrioritizedList is off) and an ignored device or
// slice for ResourceSlices (a device with shared counters while DRAPartitionableDevices is off).
type Features = gates.Features

// DefaultFeatures returns the gates Kubernetes 1.37 enables by default (gates.Default): everything that is
// beta or GA; the alpha gates (list-type attributes, optional node operations, derived attributes,
// compatibility groups) are off. Options.Features nil means these.
func DefaultFeatures() Features { return gates.Default() }

// AllFeatures returns every gate switched on (gates.All).
func AllFeatures() Features { return gates.All() }

// bindingAndStatus is the allocator-level switch Kubernetes derives from the two binding gates.
func bindingAndStatus(f Features) bool {
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

func implementationOf(f Features) implementation {
	switch {
	case f.DRAListTypeAttributes || f.DRADerivedAttributes || f.DRAOptionalNodeOperations || f.DRADeviceCompatibilityGroups:
		return implExperimental
	case f.DRAConsumableCapacity || f.DRAFractionalCapacityRange || bindingAndStatus(f):
		return implIncubating
	}
	return implStable
}
