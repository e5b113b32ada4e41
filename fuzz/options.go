package fuzz

// Options choose which Dynamic Resource Allocation features the generators use. The zero value draws small
// clusters with plain node-local devices, ExactCount requests and class and request selectors only; each field
// adds one feature. [AllOptions] turns every feature on.
//
// The fields choose which objects are drawn, not feature gates: the gates a drawn cluster runs with are
// Cluster.Features (every gate on, whatever the options), in the one vocabulary of dralloc (gates.Features).
// A field that draws objects of a gated feature names its gate.
type Options struct {
	// MaxNodes bounds the number of nodes (default 2).
	MaxNodes int
	// MaxDevices bounds the number of devices per node-local pool (default 4).
	MaxDevices int
	// MaxClaims bounds the number of pending claims (default 2).
	MaxClaims int
	// MaxRequests bounds the number of requests per claim (default 2).
	MaxRequests int

	// MultiSlicePools spreads a pool over several ResourceSlices.
	MultiSlicePools bool
	// IncompletePools draws pools with missing slices or slices of an older generation.
	IncompletePools bool
	// NetworkAttached adds a pool reachable from several nodes through a NodeSelector or AllNodes.
	NetworkAttached bool
	// PerDeviceNodeSelection adds a pool whose devices each name their nodes (DRAPartitionableDevices).
	PerDeviceNodeSelection bool
	// Partitionable adds devices that consume shared counters (DRAPartitionableDevices).
	Partitionable bool
	// MIG adds GPUs published as NVIDIA's driver publishes them in dynamic MIG mode, the shape inventory
	// publishes for a DGX (DRAPartitionableDevices): per GPU one counter set (memory, compute and one
	// counter per memory slice) on which the whole GPU and every MIG placement draw, fifteen devices per
	// GPU; with FirstAvailable, requests for a whole GPU else a MIG device.
	MIG bool
	// CompatibilityGroups gives counter consumptions compatibility groups (DRADeviceCompatibilityGroups).
	CompatibilityGroups bool
	// ConsumableCapacity adds shareable devices with request policies and capacity requests
	// (DRAConsumableCapacity).
	ConsumableCapacity bool
	// ListAttributes adds list-typed attributes and constraints on them (DRAListTypeAttributes).
	ListAttributes bool
	// Taints adds device taints, DeviceTaintRules and tolerations (DRADeviceTaints).
	Taints bool
	// BindingConditions adds devices with binding conditions (DRADeviceBindingConditions).
	BindingConditions bool
	// FirstAvailable adds requests with prioritized alternatives (DRAPrioritizedList).
	FirstAvailable bool
	// AllMode adds requests with allocationMode All.
	AllMode bool
	// Constraints adds matchAttribute and distinctAttribute constraints.
	Constraints bool
	// AdminAccess adds requests with admin access (DRAAdminAccess).
	AdminAccess bool
	// Config adds class and claim device configuration.
	Config bool
	// Allocated adds claims that are already allocated and hold devices, shares and counters.
	Allocated bool
	// DerivedAttributes adds requests with derived attributes and constraints on them (DRADerivedAttributes).
	DerivedAttributes bool
	// NodeOperations adds slices that skip node operations and nodes that declare DRAOptionalNodeOperations
	// (DRAOptionalNodeOperations).
	NodeOperations bool
	// ResultLimit adds node-local pools of many virtual functions and requests for 16 to 33 of them, around the
	// limit of 32 results per claim.
	ResultLimit bool
	// CELErrors adds selectors that fail at runtime on some devices (a missing attribute); upstream treats such
	// a failure as a fatal error of the allocation attempt.
	CELErrors bool
}

// AllOptions returns options that draw every feature, with the default bounds. (The feature gates a
// drawn cluster runs with are in Cluster.Features.)
func AllOptions() Options {
	return Options{
		MultiSlicePools:        true,
		IncompletePools:        true,
		NetworkAttached:        true,
		PerDeviceNodeSelection: true,
		Partitionable:          true,
		MIG:                    true,
		CompatibilityGroups:    true,
		ConsumableCapacity:     true,
		ListAttributes:         true,
		Taints:                 true,
		BindingConditions:      true,
		FirstAvailable:         true,
		AllMode:                true,
		Constraints:            true,
		AdminAccess:            true,
		Config:                 true,
		Allocated:              true,
		DerivedAttributes:      true,
		NodeOperations:         true,
		ResultLimit:            true,
	}
}

func (o Options) withDefaults() Options {
	if o.MaxNodes <= 0 {
		o.MaxNodes = 2
	}
	if o.MaxDevices <= 0 {
		o.MaxDevices = 4
	}
	if o.MaxClaims <= 0 {
		o.MaxClaims = 2
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = 2
	}
	return o
}
