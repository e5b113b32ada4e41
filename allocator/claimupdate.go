package allocator

import (
	"errors"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/allocator/validation"
)

// ClaimUpdate is one change of [Snapshot.UpdateClaims]: a claim written or deleted, and the version of it
// the change was derived from.
type ClaimUpdate struct {
	// Namespace and Name name the claim.
	Namespace, Name string
	// Claim is the claim's new version (its namespace and name must be the ones above); nil deletes the
	// claim.
	Claim *resourceapi.ResourceClaim
	// IfUnchanged makes the update conditional, as an update carrying a resourceVersion is for the API
	// server: the snapshot must still hold Base (the object [Snapshot.Claim] returned when the change was
	// derived, or nil for a claim that was not there), else the update conflicts.
	IfUnchanged bool
	// Base is the version the change was derived from; see IfUnchanged.
	Base *resourceapi.ResourceClaim
}

func (u ClaimUpdate) key() types.NamespacedName {
	return types.NamespacedName{Namespace: u.Namespace, Name: u.Name}
}

// UpdateClaims writes and deletes claims in one change, all or nothing, as a scheduler commits what it
// decided: every new version is validated (as [Snapshot.AddOrUpdateClaim] does) before anything
// changes; an update whose IfUnchanged base is no longer the stored version conflicts; and the devices,
// shares and shared counters the new versions allocate that the stored versions did not must still be
// free next to everything else the snapshot holds (the rules of [Snapshot.Commit], admin-access shares
// counted as in the call that allocated them). A conflict returns a *[ConflictError] (errors.Is
// [ErrConflict]) and leaves the snapshot as it was. A claim named twice is an input error.
//
// This is kube-scheduler's in-flight bookkeeping and the API server's optimistic concurrency in one call:
// a decision made on a snapshot that moved on since (another placement took its devices, or changed a
// claim it reads) is refused instead of double-booking a device, and the caller decides again.
func (s *Snapshot) UpdateClaims(updates []ClaimUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	seen := make(map[types.NamespacedName]bool, len(updates))
	owned := make([]*resourceapi.ResourceClaim, len(updates))
	for i, u := range updates {
		key := u.key()
		object := "ResourceClaim " + key.Namespace + "/" + key.Name
		if u.Name == "" {
			return inputError("ResourceClaim", "metadata.name", errors.New("must not be empty"))
		}
		if seen[key] {
			return inputError(object, "", errors.New("named twice in one update"))
		}
		seen[key] = true
		if u.Claim == nil {
			continue
		}
		if u.Claim.Namespace != u.Namespace || u.Claim.Name != u.Name {
			return inputError(object, "metadata", fmt.Errorf("the update names %s/%s", u.Claim.Namespace, u.Claim.Name))
		}
		claim := u.Claim
		if err := s.validate(object, func(o validation.Options) field.ErrorList { return validation.ResourceClaim(claim, o) }); err != nil {
			return err
		}
		owned[i] = own(s, claim)
	}
	return s.change(func(s *Snapshot) error {
		for _, u := range updates {
			if !u.IfUnchanged {
				continue
			}
			now, ok := s.st.claims[u.key()]
			switch {
			case u.Base == nil && ok:
				return &ConflictError{Claim: u.key(), Reason: "created in the snapshot since the update was derived", op: "update"}
			case u.Base != nil && !ok:
				return &ConflictError{Claim: u.key(), Reason: "deleted in the snapshot since the update was derived", op: "update"}
			case u.Base != nil && now.obj != u.Base:
				return &ConflictError{Claim: u.key(), Reason: "changed in the snapshot since the update was derived", op: "update"}
			}
		}
		olds := make([]*claimEntry, len(updates))
		var fresh []newUse
		for i, u := range updates {
			key := u.key()
			old := s.st.claims[key]
			olds[i] = old
			if old != nil {
				s.st.applyUsage(key, old.usage, -1)
				s.st.unindexClaim(old.obj)
				delete(s.st.claims, key)
			}
			if owned[i] == nil {
				continue
			}
			e := &claimEntry{obj: owned[i], usage: usageOf(owned[i], s.f)}
			s.st.indexClaim(e.obj)
			s.st.claims[key] = e
			s.st.applyUsage(key, e.usage, 1)
			var held, heldAdmin []deviceUsage
			if old != nil {
				held, heldAdmin = old.usage, adminSharesOf(old.obj, s.f)
			}
			n := newUse{claim: key, usage: notIn(e.usage, held), admin: notIn(adminSharesOf(e.obj, s.f), heldAdmin)}
			if len(n.usage) > 0 || len(n.admin) > 0 {
				fresh = append(fresh, n)
			}
		}
		if err := conflictIn(findConflicts(s.st, fresh, s.f, theSnapshot), "update"); err != nil {
			// Undo, last change first, so that the snapshot is as it was.
			for i := len(updates) - 1; i >= 0; i-- {
				key := updates[i].key()
				if e := s.st.claims[key]; e != nil && owned[i] != nil {
					s.st.applyUsage(key, e.usage, -1)
					s.st.unindexClaim(e.obj)
					delete(s.st.claims, key)
				}
				if old := olds[i]; old != nil {
					s.st.claims[key] = old
					s.st.indexClaim(old.obj)
					s.st.applyUsage(key, old.usage, 1)
				}
			}
			return err
		}
		for i, u := range updates {
			s.touchClaimWas(u.key(), olds[i])
		}
		return nil
	})
}

// conflictIn turns the conflicts of one claim, the first in name order, into a *ConflictError of the
// operation op; nil when there are none.
func conflictIn(found []conflict, op string) error {
	var first *ConflictError
	for _, c := range found {
		if first == nil {
			first = &ConflictError{Claim: c.key.claim, op: op}
		} else if first.Claim != c.key.claim {
			break
		}
		first.add(c)
	}
	if first == nil {
		return nil
	}
	return first
}

// add records one conflict of the error's claim.
func (e *ConflictError) add(c conflict) {
	if !slices.Contains(e.Devices, c.key.device) {
		e.Devices = append(e.Devices, c.key.device)
	}
	for _, cs := range c.counterSets {
		if !slices.Contains(e.CounterSets, cs) {
			e.CounterSets = append(e.CounterSets, cs)
		}
	}
	if e.Reason != "" {
		e.Reason += "; "
	}
	e.Reason += c.reason
}
