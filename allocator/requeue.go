package allocator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/celenv"
)

// RequeueOptions configure a Requeue. The zero value uses the gates Kubernetes 1.37 enables by default and
// a new CEL environment.
type RequeueOptions struct {
	// Features are the feature gates; nil means DefaultFeatures().
	Features *Features
	// CEL is the environment that compiles and evaluates selectors. nil means a new environment with the
	// features above; share the Env of the Snapshot to share its compile cache.
	CEL *celenv.Env
	// Snapshot, when set, is the Snapshot the same events are applied to, first: a slice given to
	// [Requeue.AddOrUpdateSlice] that the Snapshot holds unchanged (the same object, or an equal spec) is
	// not copied again, and its devices' prepared CEL views are the Snapshot's, so that a cluster's
	// devices are kept and prepared once. A slice the Snapshot holds in another version is copied, as
	// without a Snapshot; the answers are the same either way.
	Snapshot *Snapshot
	// Quota is the quota the scheduler's allocations apply (the Snapshot's Options.Quota), for the
	// claims refused for it ([Requeue.AddPendingOverQuota]): its Owner keys claims (nil: their
	// namespace), and its limits tell which quota changes may let them fit ([Requeue.SetQuota]). The
	// Requeue keeps a copy. nil is a Requeue that knows no limit.
	Quota *Quota
}

// Requeue tells a scheduler which pending claims may fit after a cluster event, as the queueing hints of
// kube-scheduler's DRA plugin decide whether a pod that failed scheduling is worth retrying.
//
// It is fed the events an informer delivers: DeviceClasses, ResourceSlices, DeviceTaintRules and the
// deallocation of claims, and it holds the pending claims (claims without an allocation that a pod waits
// for). Pending claims are indexed by the DeviceClass names of their requests and subrequests, and the
// class verdicts of every published device are computed when the device or the class changes (a device
// whose attributes or capacity change is evaluated against every class once), so an event costs time
// proportional to the devices it touches, the classes that select them and the claims that ask for those
// classes, never a scan of all pending claims. A claim that names a missing class cannot be allocated
// and is not woken until its last missing class appears.
//
// The answer of an event is a superset: every pending claim that did not fit before the event and fits
// after it is returned; a returned claim may still not fit (the devices may be on another node, too few,
// or taken by a constraint). Claims are returned sorted by namespace and name.
//
// The context of an event bounds the evaluation of request selectors; when it has ended they count as
// failing, which makes the answer larger, never smaller. Class verdicts, which are kept, are evaluated
// without the context's deadline (selectors are cost-bounded); a class event, which visits every
// published device, checks the context between slices and, once it has ended, returns its error and
// changes nothing.
//
// The Requeue keeps a prepared version of every published device (the CEL view, as a Snapshot does), so
// that deallocations and taint changes, which name devices only, can be answered without the slices: its
// own copy, or the Snapshot's (see RequeueOptions.Snapshot).
// Node events are not covered: a node whose labels change can make slices with a node selector usable.
//
// A claim registered with [Requeue.AddPendingOverQuota] was refused for its owner's quota; it is woken
// as well when its owner's quota may have room again, and not by devices it could not take within the
// quota (see there).
//
// A Requeue is safe for concurrent use; events are applied one at a time. Inputs are never mutated.
type Requeue struct {
	mu   sync.Mutex
	f    Features
	env  *celenv.Env
	snap *Snapshot

	classes map[string]*rqClass
	slices  map[string]*rqSlice
	pools   map[PoolID]map[string]*rqSlice
	devices map[DeviceID][]*rqDevice
	rules   map[string]resourceapi.DeviceTaintRuleSpec
	pending map[types.NamespacedName]*rqClaim
	byClass map[string][]*rqEntry

	// quota is RequeueOptions.Quota as SetQuota last replaced it, nil when none; overQuota lists the
	// claims refused for quota under each owner and class of their requests that charge, quotaGone
	// those refused for a limit on a capacity or a counter under what the limit counts.
	quota     *quotaIndex
	overQuota map[ownerClass]map[*rqClaim]struct{}
	quotaGone map[quotaResource]map[*rqClaim]struct{}

	// epoch marks the claims already woken by the event in progress; woken collects them.
	epoch uint64
	woken []*rqClaim
}

// rqClass is a DeviceClass with compiled selectors.
type rqClass struct {
	selectors []*celenv.Selector
}

// rqSlice is a published ResourceSlice as the Requeue keeps it.
type rqSlice struct {
	name    string
	pool    PoolID
	spec    *resourceapi.ResourceSliceSpec
	devices []*rqDevice
	// shared is the Snapshot's entry whose spec and prepared devices this slice uses, or nil.
	shared *sliceEntry
}

// rqDevice is one published device with the classes whose selectors select it (or fail on it).
type rqDevice struct {
	id      DeviceID
	api     *resourceapi.Device
	view    *celenv.Device
	classes []rqVerdict
}

// rqVerdict records that the selectors of a class select a device, or that one of them failed on it
// (which makes the allocation of every claim using the class fail while the device exists).
type rqVerdict struct {
	class  string
	failed bool
}

// rqClaim is a pending claim.
type rqClaim struct {
	key  types.NamespacedName
	mark uint64
	// missing counts the entries whose class does not exist: as in Kubernetes a missing class fails the
	// whole claim, so such a claim is never woken until its last missing class appears.
	missing int
	entries []*rqEntry
	// quota is set while the claim waits for its owner's quota (AddPendingOverQuota).
	quota *rqQuota
}

// rqEntry is one request or subrequest of a pending claim, listed under its class.
type rqEntry struct {
	claim     *rqClaim
	class     string
	pos       int
	selectors []*celenv.Selector
	all       bool
	admin     bool
	// req is the index of the request in the claim; count the devices an exact count asks for (0 for
	// all devices).
	req   int
	count int64
	// overQuota: no allocation that uses the entry fits the owner's quota on devices (see
	// AddPendingOverQuota), so a device it could take does not wake it.
	overQuota bool
}

// NewRequeue returns an empty Requeue. It fails when a new CEL environment cannot be built, and with an
// [InputError] naming the field when opts.Quota is invalid.
func NewRequeue(opts RequeueOptions) (*Requeue, error) {
	var quota *quotaIndex
	if opts.Quota != nil {
		var err error
		if quota, err = newQuotaIndexOf("RequeueOptions", opts.Quota); err != nil {
			return nil, err
		}
	}
	f := DefaultFeatures()
	if opts.Features != nil {
		f = *opts.Features
	}
	env := opts.CEL
	if env == nil {
		cf := celenv.DefaultFeatures()
		cf.DRAConsumableCapacity = f.DRAConsumableCapacity
		cf.DRAListTypeAttributes = f.DRAListTypeAttributes
		var err error
		if env, err = celenv.NewEnv(celenv.Options{Features: &cf}); err != nil {
			return nil, fmt.Errorf("requeue: build CEL environment: %w", err)
		}
	}
	return &Requeue{
		f:       f,
		env:     env,
		snap:    opts.Snapshot,
		classes: map[string]*rqClass{},
		slices:  map[string]*rqSlice{},
		pools:   map[PoolID]map[string]*rqSlice{},
		devices: map[DeviceID][]*rqDevice{},
		rules:   map[string]resourceapi.DeviceTaintRuleSpec{},
		pending: map[types.NamespacedName]*rqClaim{},
		byClass: map[string][]*rqEntry{},

		quota:     quota,
		overQuota: map[ownerClass]map[*rqClaim]struct{}{},
		quotaGone: map[quotaResource]map[*rqClaim]struct{}{},
	}, nil
}

// Len returns the number of pending claims.
func (r *Requeue) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// AddPending registers a claim that a pod waits for and that has no allocation yet, or replaces the one
// with the same namespace and name. Its selectors are compiled now; a selector that does not compile, a
// claim with an allocation or a request without a class is an error naming the claim and the field, and
// leaves the Requeue unchanged.
func (r *Requeue) AddPending(claim *resourceapi.ResourceClaim) error {
	c, err := r.newPending(claim)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addPending(c)
	return nil
}

// newPending prepares a pending claim's entries; errors name the claim and the field.
func (r *Requeue) newPending(claim *resourceapi.ResourceClaim) (*rqClaim, error) {
	if claim == nil {
		return nil, rqInputError("ResourceClaim", "", errors.New("claim is nil"))
	}
	obj := "ResourceClaim " + claim.Namespace + "/" + claim.Name
	if claim.Name == "" {
		return nil, rqInputError(obj, "metadata.name", errors.New("name is required"))
	}
	if claim.Status.Allocation != nil {
		return nil, rqInputError(obj, "status.allocation", errors.New("an allocated claim is not pending"))
	}
	c := &rqClaim{key: types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}}
	for i := range claim.Spec.Devices.Requests {
		req := &claim.Spec.Devices.Requests[i]
		path := fmt.Sprintf("spec.devices.requests[%d]", i)
		switch {
		case req.Exactly != nil:
			e, err := r.rqNewEntry(obj, path+".exactly", req.Exactly.DeviceClassName, req.Exactly.Selectors,
				req.Exactly.AllocationMode == resourceapi.DeviceAllocationModeAll,
				req.Exactly.AdminAccess != nil && *req.Exactly.AdminAccess)
			if err != nil {
				return nil, err
			}
			e.claim, e.req = c, i
			if !e.all {
				e.count = req.Exactly.Count
			}
			c.entries = append(c.entries, e)
		case len(req.FirstAvailable) > 0:
			for j := range req.FirstAvailable {
				sub := &req.FirstAvailable[j]
				e, err := r.rqNewEntry(obj, fmt.Sprintf("%s.firstAvailable[%d]", path, j), sub.DeviceClassName, sub.Selectors,
					sub.AllocationMode == resourceapi.DeviceAllocationModeAll, false)
				if err != nil {
					return nil, err
				}
				e.claim, e.req = c, i
				if !e.all {
					e.count = sub.Count
				}
				c.entries = append(c.entries, e)
			}
		default:
			return nil, rqInputError(obj, path, errors.New("exactly or firstAvailable is required"))
		}
	}
	return c, nil
}

// addPending registers a prepared claim, replacing the one with the same key. The caller holds mu.
func (r *Requeue) addPending(c *rqClaim) {
	r.removePending(c.key)
	r.pending[c.key] = c
	for _, e := range c.entries {
		list := r.byClass[e.class]
		e.pos = len(list)
		r.byClass[e.class] = append(list, e)
		if r.classes[e.class] == nil {
			c.missing++
		}
	}
}

func (r *Requeue) rqNewEntry(obj, path, class string, sels []resourceapi.DeviceSelector, all, admin bool) (*rqEntry, error) {
	if class == "" {
		return nil, rqInputError(obj, path+".deviceClassName", errors.New("a device class name is required"))
	}
	compiled, err := r.compileSelectors(obj, path+".selectors", sels)
	if err != nil {
		return nil, err
	}
	return &rqEntry{class: class, selectors: compiled, all: all, admin: admin}, nil
}

func (r *Requeue) compileSelectors(obj, path string, sels []resourceapi.DeviceSelector) ([]*celenv.Selector, error) {
	var out []*celenv.Selector
	for i := range sels {
		field := fmt.Sprintf("%s[%d].cel", path, i)
		if sels[i].CEL == nil {
			return nil, rqInputError(obj, field, errors.New("a CEL selector is required"))
		}
		s, err := r.env.Compile(sels[i].CEL.Expression)
		if err != nil {
			return nil, rqInputError(obj, field+".expression", err)
		}
		out = append(out, s)
	}
	return out, nil
}

// RemovePending forgets a pending claim (it was allocated or deleted); an unknown claim is ignored.
func (r *Requeue) RemovePending(namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removePending(types.NamespacedName{Namespace: namespace, Name: name})
}

func (r *Requeue) removePending(key types.NamespacedName) {
	c := r.pending[key]
	if c == nil {
		return
	}
	delete(r.pending, key)
	r.forgetQuota(c)
	for _, e := range c.entries {
		list := r.byClass[e.class]
		last := list[len(list)-1]
		list[e.pos] = last
		last.pos = e.pos
		list[len(list)-1] = nil
		list = list[:len(list)-1]
		if len(list) == 0 {
			delete(r.byClass, e.class)
		} else {
			r.byClass[e.class] = list
		}
	}
}

// rqInputError is an *InputError wrapping ErrInvalidInput.
func rqInputError(object, field string, err error) error {
	return &InputError{Object: object, Field: field, Err: err}
}

// begin starts collecting the claims an event wakes.
func (r *Requeue) begin() {
	r.epoch++
	r.woken = r.woken[:0]
}

// wake adds a claim to the event's answer once.
func (r *Requeue) wake(c *rqClaim) {
	if c.mark == r.epoch || c.missing > 0 {
		return
	}
	c.mark = r.epoch
	r.woken = append(r.woken, c)
}

// end returns the woken claims sorted by namespace and name.
func (r *Requeue) end() []types.NamespacedName {
	if len(r.woken) == 0 {
		return nil
	}
	slices.SortFunc(r.woken, func(a, b *rqClaim) int {
		if c := cmp.Compare(a.key.Namespace, b.key.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.key.Name, b.key.Name)
	})
	out := make([]types.NamespacedName, len(r.woken))
	for i, c := range r.woken {
		out[i] = c.key
		r.woken[i] = nil
	}
	r.woken = r.woken[:0]
	return out
}

// selectorsVerdict evaluates selectors on a device: selected when all match, failed when one fails. A
// failure counts as selected, because a failing selector makes the allocation fail while the device exists
// and therefore a change of the device may let a claim fit.
func selectorsVerdict(ctx context.Context, sels []*celenv.Selector, view *celenv.Device) (selected, failed bool) {
	selected = true
	for _, s := range sels {
		ok, err := s.Matches(ctx, view)
		if err != nil {
			return true, true
		}
		if !ok {
			selected = false
		}
	}
	return selected, false
}
