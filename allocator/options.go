package allocator

import (
	"crypto/rand"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/celenv"
)

// Strategy chooses among the devices that fit.
type Strategy int

const (
	// FirstFit visits pools (sorted by driver and pool name, pools with binding conditions last), slices
	// (sorted by name) and devices (in slice order) as the Kubernetes allocator does and takes the first
	// combination that satisfies every claim, so it returns the devices the scheduler would pick.
	FirstFit Strategy = iota
	// BestFit packs the devices of the node. The search tries the devices of each request in this order,
	// ties in FirstFit's: devices that consume all of a counter set (a whole GPU next to its partitions)
	// last; then by fill, the highest first — for a device that consumes shared counters, the share of
	// its counter sets' counters already consumed (by allocated claims and the devices the call took
	// before; consumed ÷ capacity averaged over each set's counters, then over its sets), so a partition
	// goes to the GPU already fullest and untouched GPUs stay whole; for a device with
	// allowMultipleAllocations that already serves shares, the share of its capacity consumed (averaged
	// over its capacities), so a new share goes to the device with the least left; 0 for the others —
	// then the smallest device (the share of its sets it consumes); then the device whose taking rules out
	// the fewest placements of other devices of its pool that fit now, which keeps large free blocks
	// together. It explores the same combinations as FirstFit in another order, so claims fit exactly
	// when they fit under FirstFit, but for errors met at a device (an [InputError] with NodeDependent):
	// it evaluates the selectors of every candidate before searching, so a selector that fails at run
	// time on some device fails the call even where FirstFit would have found a fit before reaching that
	// device, and a request for all devices that breaks a constraint with the devices taken before it
	// fails the call as in Kubernetes, which devices those are depending on the order. allocator/pods'
	// BestFit allocates in this order whatever the snapshot's strategy ([Snapshot.AllocateWith]).
	BestFit
	// Spread spreads: among the devices that fit, it prefers those whose counter sets or shared capacity
	// are least used.
	Spread
)

func (s Strategy) String() string {
	switch s {
	case FirstFit:
		return "FirstFit"
	case BestFit:
		return "BestFit"
	case Spread:
		return "Spread"
	default:
		return fmt.Sprintf("Strategy(%d)", int(s))
	}
}

// Options configure a [Snapshot]. The zero value is the sensible default: FirstFit, the feature gates
// Kubernetes 1.37 enables by default, random share IDs, no step budget beyond the context, no logging.
type Options struct {
	// Strategy chooses among fitting devices; the zero value is FirstFit. [Snapshot.AllocateWith] sets
	// another for one call.
	Strategy Strategy
	// Features are the feature gates; nil means DefaultFeatures().
	Features *Features
	// ShareIDs returns the share ID of each new allocation of a device with allowMultipleAllocations.
	// nil means a random (version 4) UUID, as Kubernetes does; tests inject a deterministic source.
	// It is called once per share of the placement a call returns (never for placements the search tries
	// and drops, nor by Fits), in the order of the claims and their results, so a counting source gives
	// the same IDs for the same answer. It is called from concurrent Allocate calls and must be safe for
	// that. An ID already used on the same device (by an allocated claim or earlier in the call) is
	// drawn again, up to 16 times; a source that keeps repeating, or returns an ID the API server would
	// refuse, fails the call with an error wrapping ErrInvalidInput naming Options.ShareIDs.
	ShareIDs func() types.UID
	// StepBudget bounds the search of one Allocate call to this many search steps (one step tries one
	// request position); when it runs out Allocate returns an error wrapping ErrSearchBudget. 0 means no
	// bound beyond the context. [Snapshot.AllocatePreferring] may search twice, each search with this
	// budget, so that a preference never makes claims give up where AllocateWith fits (see there). With
	// a Topology preference, the search for a closer placement after the first counts against
	// Topology.Steps instead, and the search without the preference that may follow it (see [Topology])
	// has this budget of its own.
	StepBudget int
	// Logger receives one line per Allocate call at V(5), as the Kubernetes allocator logs; the zero value
	// discards.
	Logger logr.Logger
	// NoCopy makes the snapshot keep the objects it is given instead of copying them. The caller must then
	// never modify an object after handing it over; objects from an informer's cache qualify, as they must
	// not be modified anyway. The copy is most of the cost of adding a slice.
	NoCopy bool
	// TrustAPIServer tells the snapshot that its objects come from an API server (an informer's cache),
	// which validated them when they were written. By default AddOrUpdateSlice, AddOrUpdateClass,
	// AddOrUpdateClaim and AddOrUpdateTaintRule validate every object as kube-apiserver 1.37 does on create
	// (package allocator/validation) and refuse an invalid one with an *InputError, leaving the snapshot
	// unchanged: objects read from YAML or built in code may hold what the API server would refuse (a
	// negative count, a selector over the cost limit, a quantity like 1E100000000). With TrustAPIServer the
	// validation is skipped, which saves its cost (mostly compiling selectors once more and checking names);
	// the allocator still refuses, as input errors, what would make it return a wrong answer.
	TrustAPIServer bool
	// Topology, when set, prefers placements of a call's claims whose devices sit close together (on
	// fewest NUMA nodes, then PCIe roots, by default): the search tries such devices first and then
	// improves on its first placement within a step budget; see [Topology] for the measure. It changes
	// which devices a call returns, never whether claims fit, so [Snapshot.Fits] does not apply it.
	Topology *Topology
	// Quota, when set, limits what the owners of claims may hold per DeviceClass, and the search chooses
	// devices within it (see [Quota]); claims that fit the node but not the quota get an
	// [UnsatisfiableError] wrapping [ErrQuotaExceeded]. nil means no quota, and the search does no work
	// for it. The snapshot keeps a copy of the limits; an invalid quota makes every call fail with an
	// [InputError] naming the field.
	Quota *Quota
	// CEL is the environment that compiles and evaluates selectors. nil means a new environment with the
	// features above; share one Env between snapshots to share its compile cache.
	CEL *celenv.Env
}

// celFeatures are the gates the CEL environment is built with: only the two CEL reads
// (DRAConsumableCapacity, DRAListTypeAttributes), so that snapshots whose other gates differ share one
// validation environment (validationEnv is keyed by them).
func celFeatures(f Features) celenv.Features {
	return celenv.Features{DRAConsumableCapacity: f.DRAConsumableCapacity, DRAListTypeAttributes: f.DRAListTypeAttributes}
}

// randomUID returns a version 4 UUID as Kubernetes' uuid.NewUUID does.
func randomUID() types.UID {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a panic here would be a broken system.
		panic(fmt.Sprintf("read random bytes: %v", err))
	}
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}
