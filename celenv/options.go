package celenv

import "github.com/dralloc/dralloc/allocator/gates"

// Features are the Kubernetes feature gates: gates.Features, the one type
// every package of dralloc takes. Two of them change the DRA CEL
// environment, for new expressions (Options.NewExpressions):
// DRAConsumableCapacity declares device.allowMultipleAllocations, and
// DRAListTypeAttributes lets attributes hold lists and derived attributes
// evaluate to lists. The others do not matter here.
type Features = gates.Features

// DefaultFeatures returns the gates as Kubernetes 1.37 enables them by
// default (gates.Default): consumable capacity (beta) on, list-type
// attributes (alpha) off.
func DefaultFeatures() Features { return gates.Default() }

// Options configure an Env. The zero value is what the Kubernetes 1.37
// scheduler uses.
type Options struct {
	// Features selects feature gates; nil means DefaultFeatures().
	Features *Features
	// CacheSize bounds the number of compiled expressions kept; 0 means
	// DefaultCacheSize, a negative value disables caching.
	CacheSize int
	// CostLimit is the runtime cost limit of one evaluation; 0 means
	// resourceapi.CELSelectorExpressionMaxCost (1,000,000).
	CostLimit uint64
	// NewExpressions compiles as the API server does for expressions in new
	// or changed objects: declarations behind a disabled feature gate are
	// missing. By default expressions compile as the scheduler evaluates
	// stored objects, with every declaration present, whatever the gates.
	NewExpressions bool
}

// DefaultCacheSize is the number of compiled expressions an Env keeps by
// default.
const DefaultCacheSize = 1024
