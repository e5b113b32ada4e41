package allocator

import (
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/taints"
)

// selectable decides whether a device may serve a request, ignoring what is in use: binding conditions
// allowed, the class's selectors, the request's selectors, per-device node selection. Selector verdicts
// are cached on the device across calls, so a lookup costs a few pointer comparisons; only per-device
// node selection, which depends on the node, is cached for the call. CEL failures are fatal, as in
// Kubernetes (they are reported for the first device they happen on, in visiting order).
func (a *allocation) selectable(r *request, d *deviceEntry) (bool, error) {
	if !a.f.BindingConditions() && d.binding {
		return false, nil
	}
	perDevice := d.perDevice
	key := matchKey{dev: d, req: r}
	if perDevice {
		if v, ok := a.matches[key]; ok {
			return v, nil
		}
	}
	ok, err := a.selectorsMatch(r, d, true)
	if err != nil {
		return false, err
	}
	if ok {
		ok, err = a.selectorsMatch(r, d, false)
		if err != nil {
			return false, err
		}
	}
	if perDevice {
		if ok {
			ok, err = d.availableOn(a.node)
			if err != nil {
				return false, nodeInputError("ResourceSlice "+d.slice.name(), "spec.devices.nodeSelector", fmt.Errorf("device %s: node selection: %w", d.id.Device, err))
			}
		}
		a.matches[key] = ok
	}
	return ok, nil
}

// selectorsMatch evaluates the class's (class true) or the request's selectors, compiling each on first
// use.
func (a *allocation) selectorsMatch(r *request, d *deviceEntry, class bool) (bool, error) {
	sels, compiled := r.selectors, r.reqSel
	if class {
		sels, compiled = r.class.Spec.Selectors, r.classSel
	}
	// The object and field are only built for an error.
	where := func(i int, suffix string) (string, string) {
		if class {
			return "DeviceClass " + r.class.Name, fmt.Sprintf("spec.selectors[%d]%s", i, suffix)
		}
		return a.perClaim[r.claimIdx].name(), fmt.Sprintf("%s.selectors[%d]%s", r.path(), i, suffix)
	}
	for i, sel := range sels {
		if sel.CEL == nil {
			object, f := where(i, "")
			return false, inputError(object, f, errors.New("CEL expression empty (unsupported selector type?)"))
		}
		s := compiled[i]
		if s == nil {
			var err error
			if class {
				err = r.classErr[i]
			} else {
				s, err = a.recent.compile(a.s.env, sel.CEL.Expression)
				compiled[i] = s
			}
			if err != nil {
				object, f := where(i, ".cel.expression")
				return false, inputError(object, f, err)
			}
		}
		ok, cached := d.caches.verdicts.get(s)
		if !cached {
			var err error
			ok, err = s.Matches(a.ctx, d.view())
			if err != nil {
				// An evaluation the context interrupted says nothing about the input.
				if a.ctx.Err() != nil {
					return false, aborted(a.ctx)
				}
				object, f := where(i, ".cel.expression")
				return false, nodeInputError(object, f, deviceEvalError(d.id, err))
			}
			d.caches.verdicts.put(s, ok)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// capacityFits checks a request's capacity against a device (with consumable capacity): the request must
// be servable under the device's request policies, and for a device with allowMultipleAllocations what it
// consumes must fit next to the shares already allocated. It returns what the request consumes.
func (a *allocation) capacityFits(r *request, d *deviceEntry) (bool, map[resourceapi.QualifiedName]resource.Quantity, error) {
	consumed, err := a.consumed(r, d)
	if errors.Is(err, capacity.ErrUnsuitable) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, nodeInputError(a.perClaim[r.claimIdx].name(), r.path()+".capacity", fmt.Errorf("checking capacity for device %s: %w", d.id, err))
	}
	if a.sharedNow(d.id) {
		if !a.ledger(d).Fits(consumed) {
			return false, nil, nil
		}
	}
	return true, consumed, nil
}

// consumed is capacity.Consumed, answered from the device's precomputed value for requests without
// capacity requirements. The map must not be modified.
func (a *allocation) consumed(r *request, d *deviceEntry) (map[resourceapi.QualifiedName]resource.Quantity, error) {
	if len(r.capacityRequests()) == 0 {
		return d.plainConsumed()
	}
	return a.s.consumed.consumed(r.capacityRequests(), r.capacityKey(), d, a.capOpts)
}

// ledger returns the running capacity ledger of a device, starting from what the cluster's shares use,
// to read: until the call adds a share to the device it is the ledger the device keeps for the state's
// use of it (deviceEntry.stateLedger), shared by every call that reads it.
func (a *allocation) ledger(d *deviceEntry) *capacity.Ledger {
	l, ok := a.ledgers[d.id]
	if !ok {
		l = d.stateLedger(a.st.consumed[d.id])
		if a.ledgers == nil {
			a.ledgers = map[DeviceID]*capacity.Ledger{}
		}
		a.ledgers[d.id] = l
	}
	return l
}

// ownLedger is ledger, to change: the call's own copy, made on the first change.
func (a *allocation) ownLedger(d *deviceEntry) *capacity.Ledger {
	l := a.ledger(d)
	if !a.owned[d.id] {
		l = l.Clone()
		a.ledgers[d.id] = l
		if a.owned == nil {
			a.owned = map[DeviceID]bool{}
		}
		a.owned[d.id] = true
	}
	return l
}

// poolCounters returns the running shared counters of a pool, starting from what the devices allocated
// in the cluster consume (on any node).
func (a *allocation) poolCounters(p *pool) *capacity.Counters {
	c, ok := a.counters[p]
	if !ok {
		c = a.freshCounters(p)
		if a.counters == nil {
			a.counters = map[*pool]*capacity.Counters{}
		}
		a.counters[p] = c
	}
	return c
}

// blocked: a NoSchedule or NoExecute taint that no toleration of the request tolerates.
func blocked(ts []resourceapi.DeviceTaint, tolerations []resourceapi.DeviceToleration) bool {
	_, ok := taints.Blocking(ts, tolerations)
	return ok
}

// sharedNow: the device serves shares in the cluster or in this call. Most calls meet no shared device
// at all, so the lookups (which hash the ID) are skipped while both maps are empty.
func (a *allocation) sharedNow(id DeviceID) bool {
	if len(a.st.consumed) > 0 {
		if _, ok := a.st.consumed[id]; ok {
			return true
		}
	}
	return len(a.shares) > 0 && a.shares[id] > 0
}
