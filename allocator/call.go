package allocator

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/celenv"
)

// allocation is the working state of one Allocate call.
type allocation struct {
	ctx     context.Context
	s       *Snapshot
	st      *state
	f       Features
	capOpts capacity.Options
	// strategy orders the devices the search tries: the snapshot's Options.Strategy, or AllocateWith's.
	strategy Strategy
	node     *v1.Node
	claims   []*resourceapi.ResourceClaim
	pools    []*pool
	steps    int
	short    shortfall    // set when failing fast found a request without enough candidates
	indep    []int8       // per request slot: unknown (0), independent of the slots before it (1) or not (2)
	sides    [2]sideOf    // what the requests before and after a slot can take (see independent)
	bounds   bounds       // scratch of constraintShort
	pigeon   pigeonhole   // scratch of pigeonholeShort
	ctrBound counterBound // scratch of countersShort
	// twinsOnly: a request has derived attributes or asks for all devices, so devices are interchangeable
	// only as twins, not by verdicts (see interchangeable). Set while preparing requests.
	twinsOnly bool
	// lastAll: the slot of the last request for all devices (see failuresAt); the zero value, the first
	// slot, has no slot before it, so it stands for none as well.
	lastAll position
	// greedy: the search is the first descent of greedyDescent, which stops at the first step back.
	greedy bool
	// fitsOnly: the call is Fits, which answers whether claims fit and so applies no topology
	// preference (it never changes that answer).
	fitsOnly bool
	// found: the search with a Topology preference found a placement of every claim and now looks for
	// a closer one (see topoBest).
	found bool
	// prefer ranks the devices AllocatePreferring's caller prefers (see preferDevices); nil for none.
	prefer map[DeviceID]int

	perClaim []claimState
	scratch

	matches  map[matchKey]bool
	derived  map[derivedKey]*resourceapi.DeviceAttribute
	taken    takenSet                      // exclusive devices taken in this call, with the claims taking them
	shares   map[DeviceID]int              // shares taken in this call
	ledgers  map[DeviceID]*capacity.Ledger // read only but for those in owned
	owned    map[DeviceID]bool             // the ledgers the call changes: its own copies
	counters map[*pool]*capacity.Counters  // the explanation's, from the allocated state only
	tallies  []*tally                      // the search's running counters, one per pool drawn on
	// readVerdicts are a NodeClasses' selector verdicts by what the selectors read of a device (see
	// deviceVerdicts).
	readVerdicts map[string]string
	// quota is the call's view of Options.Quota, nil without one (then the search pays for it nowhere
	// but one nil check per device taken); quotaBuf is its storage, kept across calls. noQuota: the call
	// searches again without the quota, to tell "exceeds the quota" from "does not fit" (quotaRefusal).
	quota    *callQuota
	quotaBuf callQuota
	noQuota  bool
	// spent is the steps of an earlier search of the call (see AllocatePreferring). It is last so that
	// the fields the search reads keep their places.
	spent int
}

// claimState is what the search knows about one claim.
type claimState struct {
	claim       *resourceapi.ResourceClaim
	slots       []requestSlot
	constraints []constraint
	results     []deviceResult
}

// requestSlot is one entry of spec.devices.requests: a plain request or a list of alternatives.
type requestSlot struct {
	alts     []*request // one entry without subrequests
	hasSubs  bool
	selected int
}

// request is a request or subrequest, ready for the search.
type request struct {
	claimIdx, reqIdx, subIdx int
	parent                   string // name of the enclosing request for a subrequest
	name                     string
	sub                      bool // a subrequest: spec.devices.requests[reqIdx].firstAvailable[subIdx]
	class                    *resourceapi.DeviceClass
	mode                     resourceapi.DeviceAllocationMode
	adminAccess              bool
	selectors                []resourceapi.DeviceSelector
	tolerations              []resourceapi.DeviceToleration
	capacity                 *resourceapi.CapacityRequirements
	capKey                   string // capacityKey's answer, made on first use; "" before
	derived                  map[resourceapi.FullyQualifiedName]string
	numDevices               int
	allDevices               []candidate        // for allocationMode All
	classSel, reqSel         []*celenv.Selector // the class's are shared and read-only; reqSel is compiled on first use
	classErr                 []error            // why a class selector did not compile
	// limits are the quota limits that apply (indices into Quota.Limits); nil for none. Last, so that
	// the fields the search reads without quota keep the places they had before quota.
	limits []int
}

// name is the claim's kind and name, as errors name it.
func (cs *claimState) name() string {
	return "ResourceClaim " + cs.claim.Namespace + "/" + cs.claim.Name
}

// path is the field path of the request or subrequest, as errors name it.
func (r *request) path() string {
	if r.sub {
		return fmt.Sprintf("spec.devices.requests[%d].firstAvailable[%d]", r.reqIdx, r.subIdx)
	}
	return fmt.Sprintf("spec.devices.requests[%d].exactly", r.reqIdx)
}

// fullName is the name used in results and constraints: "request" or "request/subrequest".
func (r *request) fullName() string {
	if r.parent != "" {
		return r.parent + "/" + r.name
	}
	return r.name
}

// resultName is r.fullName() for the results, which name the request on every node where the claims fit:
// a subrequest's name is joined once and remembered across calls (see recentNames).
func (a *allocation) resultName(r *request) string {
	if r.parent != "" {
		return a.names.join(r.parent, r.name)
	}
	return r.name
}

func (r *request) capacityRequests() map[resourceapi.QualifiedName]resource.Quantity {
	if r.capacity == nil {
		return nil
	}
	return r.capacity.Requests
}

// capacityKey names the request's capacity requirements for the consumed memo (requestKey), once per
// call rather than once per device it is asked of.
func (r *request) capacityKey() string {
	if r.capKey == "" {
		r.capKey = requestKey(r.capacityRequests())
	}
	return r.capKey
}

// candidate is a device together with the pool it is seen in.
type candidate struct {
	dev  *deviceEntry
	pool *pool
}

type matchKey struct {
	dev *deviceEntry
	req *request
}

type derivedKey struct {
	dev  *deviceEntry
	expr string
}

// deviceResult is one allocated device of a claim.
type deviceResult struct {
	req      *request
	dev      *deviceEntry
	shareID  *string
	consumed map[resourceapi.QualifiedName]resource.Quantity
}
