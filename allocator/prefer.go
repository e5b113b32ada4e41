package allocator

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// AllocatePreferring is AllocateWith with a preference among devices: every request tries the devices
// of prefer that it may take first, in the order prefer lists them, and then the others in the
// strategy's order (and the snapshot's Topology preference). It is for a caller that rated the devices
// of a node itself (allocator/headroom's FGD puts a share where the node's fragmentation grows least).
//
// The preference orders the search and never rules a device out, and the search
// takes the first combination it finds, so a preferred device that the request's selectors, capacity or
// constraints refuse, or that would leave a later request without a fit, is passed over. A device listed
// twice keeps its first place; devices of other nodes are ignored.
//
// With the snapshot's Topology preference the call then improves on the placement this order finds, as
// [Topology] says: a closer placement replaces it, and the caller's order decides among placements of
// equal measure.
//
// The preference never changes whether the claims fit: they fit exactly when they fit under AllocateWith
// with the same budget. The preferred order may meet dead ends that AllocateWith's order never visits, so
// when it runs out of Options.StepBudget, or meets an error at a device (an [InputError] with
// NodeDependent, as a selector failing at run time on a device that AllocateWith's order may never
// reach), the claims are searched again in AllocateWith's order, with a budget of their own, and the call
// answers as AllocateWith does: its devices, its error. A call may so take up to twice the budget. Errors
// are AllocateWith's.
func (s *Snapshot) AllocatePreferring(ctx context.Context, strategy Strategy, prefer []DeviceID, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	if strategy < FirstFit || strategy > Spread {
		return nil, fmt.Errorf("%w: unsupported strategy %s", ErrInvalidInput, strategy)
	}
	var rank map[DeviceID]int
	if len(prefer) > 0 {
		rank = make(map[DeviceID]int, len(prefer))
		for i, id := range prefer {
			if _, ok := rank[id]; !ok {
				rank[id] = i
			}
		}
	}
	var results []resourceapi.AllocationResult
	err := s.do(ctx, node, claims, func(a *allocation) (bool, error) {
		a.strategy, a.prefer = strategy, rank
		var err error
		results, err = a.run()
		if rank != nil && orderDependent(err) {
			a.spent += a.steps
			a.clearSearch()
			results, err = a.run()
		}
		return err == nil, err
	})
	return results, err
}

// orderDependent: the search ended with an answer that another order of the same search may not give,
// where that order could still find a fit: it ran out of budget, or met an error at a device that another
// order may not reach before its fit. "Does not fit" is not one of them: every order searches the same
// combinations.
func orderDependent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrSearchBudget) {
		return true
	}
	var in *InputError
	return errors.As(err, &in) && in.NodeDependent
}
