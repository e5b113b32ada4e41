package allocator

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/capacity"
)

// ConflictError reports that a fork's changes no longer hold on the snapshot it was forked from, which
// moved on since the fork (see [Snapshot.Commit]). It names the first conflicting claim, in namespace and
// name order, and what conflicts for it.
type ConflictError struct {
	// Claim is the claim whose change conflicts.
	Claim types.NamespacedName
	// Devices are the devices the fork allocated to the claim that are no longer free (or no longer
	// published) in the parent, in the order of the claim's results.
	Devices []DeviceID
	// CounterSets are the shared counter sets, as pool/counter set, that have too little left in the
	// parent for the fork's devices.
	CounterSets []string
	// Reason says what conflicts, naming the devices and counter sets.
	Reason string

	op string // the operation refused: commit (the default) or update
}

func (e *ConflictError) Error() string {
	op := e.op
	if op == "" {
		op = "commit"
	}
	return op + ": ResourceClaim " + e.Claim.Namespace + "/" + e.Claim.Name + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// conflictingClaim checks that the parent did not change a claim the fork changed since the fork: the
// fork's version was derived from the claim it saw, as an update carries the resourceVersion it read.
func (s *Snapshot) conflictingClaim(p *Snapshot) error {
	for _, key := range sortedKeys(s.base) {
		if p.st.claims[key] != s.base[key] {
			what := "changed"
			if p.st.claims[key] == nil {
				what = "deleted"
			}
			return &ConflictError{Claim: key, Reason: what + " in the parent snapshot since the fork"}
		}
	}
	return nil
}

// newUse is what one claim's change in a fork allocates: the usage of the fork's version of the claim
// that the version the fork started from did not have.
type newUse struct {
	claim types.NamespacedName
	usage []deviceUsage
	// admin are the shares the claim's new results take with admin access: they hold nothing once
	// allocated, but counted against the device's capacity in the call that allocated them.
	admin []deviceUsage
}

// allocatedByFork lists, by claim, what the fork's changes allocate.
func (s *Snapshot) allocatedByFork() []newUse {
	var out []newUse
	for _, key := range sortedKeys(s.base) {
		now := s.st.claims[key]
		if now == nil {
			continue
		}
		// A unit the base version held already (same device, same kind, same consumed capacity) was
		// not allocated by the fork.
		var held []deviceUsage
		if b := s.base[key]; b != nil {
			held = b.usage
		}
		fresh := notIn(now.usage, held)
		var heldAdmin []deviceUsage
		if b := s.base[key]; b != nil {
			heldAdmin = adminSharesOf(b.obj, s.f)
		}
		admin := notIn(adminSharesOf(now.obj, s.f), heldAdmin)
		if len(fresh) > 0 || len(admin) > 0 {
			out = append(out, newUse{claim: key, usage: fresh, admin: admin})
		}
	}
	return out
}

// notIn returns the units of now that held does not have, each unit of held matching one of now.
func notIn(now, held []deviceUsage) []deviceUsage {
	held = slices.Clone(held)
	var out []deviceUsage
	for _, u := range now {
		if i := slices.IndexFunc(held, func(h deviceUsage) bool { return sameUsage(h, u) }); i >= 0 {
			held = slices.Delete(held, i, i+1)
			continue
		}
		out = append(out, u)
	}
	return out
}

// adminSharesOf lists the shares an allocated claim takes with admin access (with consumable capacity):
// usageOf leaves them out, since they hold nothing in the allocated state.
func adminSharesOf(claim *resourceapi.ResourceClaim, f Features) []deviceUsage {
	if claim == nil || claim.Status.Allocation == nil || !f.DRAConsumableCapacity {
		return nil
	}
	var out []deviceUsage
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess && r.ShareID != nil && len(r.ConsumedCapacity) > 0 {
			out = append(out, deviceUsage{id: DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}, shared: true, shareID: *r.ShareID, consumed: r.ConsumedCapacity})
		}
	}
	return out
}

func sameUsage(x, y deviceUsage) bool {
	if x.id != y.id || x.shared != y.shared || len(x.consumed) != len(y.consumed) {
		return false
	}
	for n, q := range x.consumed {
		if v, ok := y.consumed[n]; !ok || v.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// conflictingUse checks the fork's allocations against merged, the parent's state with the fork's
// changes replayed on it. What the fork allocated must still be free there next to everything else; a
// conflict that the fork's own state has too (the fork was given an allocation that was never free, by
// the caller) is not the parent's doing and does not fail the commit, as it would not have had the
// parent stood still.
func (s *Snapshot) conflictingUse(merged *state) error {
	fresh := s.allocatedByFork()
	if len(fresh) == 0 {
		return nil
	}
	found := findConflicts(merged, fresh, s.f, parentSnapshot)
	if len(found) == 0 {
		return nil
	}
	own := map[conflictKey]bool{}
	for _, c := range findConflicts(s.st, fresh, s.f, parentSnapshot) {
		own[c.key] = true
	}
	return conflictIn(slices.DeleteFunc(found, func(c conflict) bool { return own[c.key] }), "commit")
}

// Where findConflicts finds what conflicts: for Commit, the parent; for UpdateClaims, the snapshot.
const (
	parentSnapshot = "in the parent snapshot"
	theSnapshot    = "in the snapshot"
)

type conflictKey struct {
	claim  types.NamespacedName
	device DeviceID
}

type conflict struct {
	key         conflictKey
	counterSets []string
	reason      string
}

// findConflicts checks the fork's allocations (fresh, which st includes) against what else st holds:
// an exclusive device must be held by nothing else, a share by no exclusive holder and within the
// device's capacity next to the other shares, and a device that draws on shared counters must fit what
// the pool's other allocated devices leave. The conflicts come in claim order, then result order.
func findConflicts(st *state, fresh []newUse, f Features, where string) []conflict {
	// What the fork's allocations hold, to take them out of st's totals.
	var excl, shares map[DeviceID]int
	excl, shares = map[DeviceID]int{}, map[DeviceID]int{}
	for _, n := range fresh {
		for _, u := range n.usage {
			if u.shared {
				shares[u.id]++
			} else {
				excl[u.id]++
			}
		}
	}
	othersHold := func(id DeviceID) (exclusive, shared int) {
		return st.inUse[id] - excl[id], st.shares[id] - shares[id]
	}
	ledgers := map[DeviceID]*capacity.Ledger{}
	counters := map[PoolID]*capacity.Counters{}
	counted := map[DeviceID]bool{}
	var out []conflict
	for _, n := range fresh {
		for _, u := range n.usage {
			key := conflictKey{claim: n.claim, device: u.id}
			d := st.device(u.id)
			if d == nil {
				out = append(out, conflict{key: key, reason: fmt.Sprintf("device %s is no longer published %s", u.id, where)})
				continue
			}
			ex, sh := othersHold(u.id)
			switch {
			case !u.shared && (ex > 0 || sh > 0):
				out = append(out, conflict{key: key, reason: fmt.Sprintf("device %s is already allocated %s", u.id, where)})
				continue
			case !u.shared && (excl[u.id] > 1 || shares[u.id] > 0), u.shared && excl[u.id] > 0:
				out = append(out, conflict{key: key, reason: fmt.Sprintf("device %s is allocated by more than one of the changes", u.id)})
				continue
			case u.shared && ex > 0:
				out = append(out, conflict{key: key, reason: fmt.Sprintf("device %s is already allocated exclusively %s", u.id, where)})
				continue
			case u.shared && !d.multi:
				out = append(out, conflict{key: key, reason: fmt.Sprintf("device %s no longer allows multiple allocations %s", u.id, where)})
				continue
			case u.shared:
				l, ok := ledgers[u.id]
				if !ok {
					l = capacity.NewLedger(d.api.Capacity)
					l.Add(othersConsumed(st.consumed[u.id], fresh, u.id))
					ledgers[u.id] = l
				}
				if !l.Fits(u.consumed) {
					out = append(out, conflict{key: key, reason: fmt.Sprintf("device %s has too little capacity left %s", u.id, where)})
					continue
				}
				l.Add(u.consumed)
			}
			// A device's counters are drawn once, by its first holder.
			if !f.DRAPartitionableDevices || !d.counters || counted[u.id] || ex > 0 || sh > 0 {
				continue
			}
			counted[u.id] = true
			c, ok := counters[d.slice.pool]
			if !ok {
				c = st.poolCounters(d.slice.pool, func(id DeviceID) bool {
					ex, sh := othersHold(id)
					return ex > 0 || sh > 0
				})
				counters[d.slice.pool] = c
			}
			if !c.Fits(d.api.ConsumesCounters) {
				var sets []string
				for _, cc := range d.api.ConsumesCounters {
					sets = append(sets, d.slice.pool.String()+"/"+cc.CounterSet)
				}
				out = append(out, conflict{key: key, counterSets: sets, reason: fmt.Sprintf("device %s needs more of counter sets %s than is left %s", u.id, strings.Join(sets, ", "), where)})
				continue
			}
			c.Add(d.api.ConsumesCounters)
		}
	}
	// A claim's shares with admin access hold nothing, but they counted against the capacity of their
	// device in the call that allocated the claim, next to everything st holds (the fork's other shares
	// included: the claim must still be one the allocator could make on the merged state).
	for _, n := range fresh {
		var ledgers map[DeviceID]*capacity.Ledger
		for _, u := range n.admin {
			key := conflictKey{claim: n.claim, device: u.id}
			d := st.device(u.id)
			if d == nil {
				out = append(out, conflict{key: key, reason: fmt.Sprintf("device %s is no longer published %s", u.id, where)})
				continue
			}
			l, ok := ledgers[u.id]
			if !ok {
				if ledgers == nil {
					ledgers = map[DeviceID]*capacity.Ledger{}
				}
				l = capacity.NewLedger(d.api.Capacity)
				l.Add(st.consumed[u.id])
				ledgers[u.id] = l
			}
			if !l.Fits(u.consumed) {
				out = append(out, conflict{key: key, reason: fmt.Sprintf("device %s has too little capacity left %s for the claim's shares with admin access", u.id, where)})
				continue
			}
			l.Add(u.consumed)
		}
	}
	slices.SortStableFunc(out, func(a, b conflict) int {
		return cmp.Or(cmp.Compare(a.key.claim.Namespace, b.key.claim.Namespace), cmp.Compare(a.key.claim.Name, b.key.claim.Name))
	})
	return out
}

// othersConsumed is the consumed capacity of a device's shares less that of the fork's shares.
func othersConsumed(sum map[resourceapi.QualifiedName]resource.Quantity, fresh []newUse, id DeviceID) map[resourceapi.QualifiedName]resource.Quantity {
	out := make(map[resourceapi.QualifiedName]resource.Quantity, len(sum))
	for n, q := range sum {
		out[n] = q.DeepCopy()
	}
	for _, n := range fresh {
		for _, u := range n.usage {
			if u.id != id || !u.shared {
				continue
			}
			for name, q := range u.consumed {
				v := out[name]
				v.Sub(q)
				out[name] = v
			}
		}
	}
	return out
}

// device finds a published device in the newest generation of its pool; nil when there is none.
func (st *state) device(id DeviceID) *deviceEntry {
	for _, e := range st.newestSlices(PoolID{Driver: id.Driver, Pool: id.Pool}) {
		for _, d := range e.devices() {
			if d.id == id {
				return d
			}
		}
	}
	return nil
}

// newestSlices returns the slices of a pool's newest generation.
func (st *state) newestSlices(id PoolID) []*sliceEntry {
	all := st.poolSlices[id]
	var gen int64
	for _, e := range all {
		gen = max(gen, e.generation())
	}
	var out []*sliceEntry
	for _, e := range all {
		if e.generation() == gen {
			out = append(out, e)
		}
	}
	return out
}

// poolCounters returns the shared counters of a pool's newest generation with what the devices for which
// held is true consume already drawn.
func (st *state) poolCounters(id PoolID, held func(DeviceID) bool) *capacity.Counters {
	list := st.newestSlices(id)
	var sets []resourceapi.CounterSet
	seen := map[string]bool{}
	for _, e := range list {
		for _, cs := range e.obj.Spec.SharedCounters {
			if !seen[cs.Name] {
				seen[cs.Name] = true
				sets = append(sets, cs)
			}
		}
	}
	c := capacity.NewCounters(sets)
	for _, e := range list {
		for _, d := range e.devices() {
			if d.counters && held(d.id) {
				c.Add(d.api.ConsumesCounters)
			}
		}
	}
	return c
}

func sortedKeys[V any](m map[types.NamespacedName]V) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return keys
}
