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

// The implementations of the Kubernetes allocator a set of gates selects (Features.Implementation);
// dralloc reproduces how they differ for fields whose gate is off.
const (
	implStable       = gates.Stable
	implIncubating   = gates.Incubating
	implExperimental = gates.Experimental
)
