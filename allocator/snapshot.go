package allocator

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/allocator/validation"
	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/taints"
)

// Snapshot is the cluster as the allocator sees it: ResourceSlices, DeviceClasses, ResourceClaims
// (allocated ones are the allocated state), DeviceTaintRules and Nodes. Objects are copied (unless
// Options.NoCopy) and indexed when they are added or updated; a slice's devices are prepared for CEL when
// a call first meets them, and stay prepared, so that [Snapshot.Allocate] only decides.
//
// A Snapshot is safe for concurrent use. Allocate calls run in parallel with each other; changes wait for
// running Allocate calls and are seen by later ones.
//
// The zero Snapshot is ready to use: it is an empty snapshot with the zero Options (the default feature
// gates, FirstFit), as NewSnapshot(Options{}) returns. A Snapshot must not be copied after first use.
type Snapshot struct {
	once   sync.Once // initialises the zero Snapshot on first use (see ready)
	mu     sync.RWMutex
	st     *state
	f      Features
	opts   Options
	env    *celenv.Env
	envErr error
	// pools caches pools built from complete slice sets; shared with forks, whose
	// devices are the same prepared entries.
	pools *poolCache
	// classes caches the node classes of recent filter calls (see NodeClasses); shared with forks.
	classes *classCache
	// consumed remembers what requests consume of devices' capacities; shared with forks.
	consumed *consumedMemo
	// copier makes the private copies of slices (unless NoCopy); shared with forks.
	copier *sliceCopier
	// quota is Options.Quota prepared; nil without one. Shared with forks (its held amounts are kept
	// per state).
	quota *quotaIndex

	// Set on forks: the parent, the parent's revision when forked, and the changes made since, which
	// Commit replays onto the parent when the parent changed in the meantime. base holds, for every claim
	// the fork changed, the entry the fork started from (nil when the claim did not exist), so that Commit
	// can tell what the fork allocated and whether the parent changed the same claim.
	parent  *Snapshot
	baseRev uint64
	log     []func(*Snapshot) error
	base    map[types.NamespacedName]*claimEntry
	closed  bool
}

// NewSnapshot returns an empty snapshot with the given options.
func NewSnapshot(opts Options) *Snapshot {
	s := &Snapshot{}
	s.init(opts)
	return s
}

// init sets up an empty snapshot; NewSnapshot calls it before the snapshot is shared, ready on first use
// of a zero Snapshot.
func (s *Snapshot) init(opts Options) {
	f := DefaultFeatures()
	if opts.Features != nil {
		f = *opts.Features
	}
	s.st, s.f, s.opts, s.env, s.pools, s.classes, s.copier = newState(), f, opts, opts.CEL, &poolCache{}, &classCache{}, newSliceCopier()
	s.consumed = &consumedMemo{}
	if opts.Strategy < FirstFit || opts.Strategy > Spread {
		s.envErr = fmt.Errorf("%w: unsupported strategy %s", ErrInvalidInput, opts.Strategy)
		return
	}
	if opts.Quota != nil {
		q, err := newQuotaIndex(opts.Quota)
		if err != nil {
			s.envErr = err
			return
		}
		s.quota = q
		s.opts.Quota = nil // the index is the snapshot's copy
	}
	if opts.Topology != nil {
		// A private copy: the caller's Options may change after the snapshot is built.
		t := Topology{Attributes: slices.Clone(opts.Topology.Attributes), Steps: opts.Topology.Steps}
		s.opts.Topology = &t
		if err := t.validate(); err != nil {
			s.envErr = err
			return
		}
	}
	if s.env == nil {
		cf := celFeatures(f)
		s.env, s.envErr = celenv.NewEnv(celenv.Options{Features: &cf})
		if s.envErr != nil {
			s.envErr = fmt.Errorf("create CEL environment: %w", s.envErr)
		}
	}
}

// ready makes the zero Snapshot usable: every exported method calls it first. Snapshots from NewSnapshot
// and Fork are set up already; the check is one atomic load.
func (s *Snapshot) ready() {
	s.once.Do(func() {
		if s.st == nil {
			s.init(Options{})
		}
	})
}

func (s *Snapshot) capOpts() capacity.Options {
	return capacity.Options{Features: &s.f}
}

// Features returns the feature gates the snapshot was created with.
func (s *Snapshot) Features() Features {
	s.ready()
	return s.f
}

// change runs fn under the write lock and records it for Commit.
func (s *Snapshot) change(fn func(*Snapshot) error) error {
	s.ready()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := fn(s); err != nil {
		return err
	}
	s.st.rev++
	if s.parent != nil {
		s.log = append(s.log, fn)
	}
	return nil
}

// own returns the object the snapshot keeps: a copy, or the object itself with Options.NoCopy.
func own[T interface{ DeepCopy() T }](s *Snapshot, obj T) T {
	if s.opts.NoCopy {
		return obj
	}
	return obj.DeepCopy()
}

// AddOrUpdateSlice adds a ResourceSlice or replaces the one with the same name. The slice is copied (unless
// Options.NoCopy; the copy shares equal maps between devices, see sliceCopier) and indexed; its devices are prepared, with their effective taints, when an Allocate
// call first meets them. The cost is that of the copy and the indexes, whatever the number of slices.
func (s *Snapshot) AddOrUpdateSlice(slice *resourceapi.ResourceSlice) error {
	if slice == nil {
		return inputError("ResourceSlice", "", errors.New("nil object"))
	}
	s.ready()
	// The private copy is validated rather than the input: it is what the snapshot keeps, it equals the
	// input, and its devices share maps, which validation checks once (validation.Memo).
	var memo *validation.Memo
	if !s.opts.NoCopy {
		slice, memo = s.copier.slice(slice), &s.copier.memo
	}
	if err := s.validate("ResourceSlice "+slice.Name, func(o validation.Options) field.ErrorList {
		o.Memo = memo
		return validation.ResourceSlice(slice, o)
	}); err != nil {
		return err
	}
	return s.change(func(s *Snapshot) error {
		st := s.st
		seq := st.seq
		old, exists := st.slices[slice.Name]
		if exists {
			seq = old.seq
		}
		e, err := newSliceEntry(slice, seq, s.st.taints, s.capOpts())
		if err != nil {
			return err
		}
		if !s.opts.NoCopy {
			e.derived = &s.copier.derived
		}
		if exists {
			st.removeSlice(old)
		} else {
			st.seq++
		}
		st.insertSlice(e)
		return nil
	})
}

// DeleteSlice removes the ResourceSlice with the given name; removing an unknown name does nothing.
func (s *Snapshot) DeleteSlice(name string) error {
	return s.change(func(s *Snapshot) error {
		if old, ok := s.st.slices[name]; ok {
			s.st.removeSlice(old)
		}
		return nil
	})
}

// AddOrUpdateClass adds a DeviceClass or replaces the one with the same name. The class is copied (unless
// Options.NoCopy) and its selectors compiled now. A selector that does not compile is reported at once:
// validated classes (the default) are refused with the validation errors, leaving the snapshot unchanged.
// With Options.TrustAPIServer the class is one the cluster holds, so it is added all the same and the
// first compile error is returned (an *InputError naming the class and spec.selectors[i].cel.expression,
// wrapping ErrInvalidInput): as in Kubernetes, whose scheduler compiles class selectors when it allocates,
// the calls whose claims use the class then fail with that error, and calls for other claims are unaffected.
func (s *Snapshot) AddOrUpdateClass(class *resourceapi.DeviceClass) error {
	if class == nil {
		return inputError("DeviceClass", "", errors.New("nil object"))
	}
	if class.Name == "" {
		return inputError("DeviceClass", "metadata.name", errors.New("must not be empty"))
	}
	if err := s.validate("DeviceClass "+class.Name, func(o validation.Options) field.ErrorList { return validation.DeviceClass(class, o) }); err != nil {
		return err
	}
	class = own(s, class)
	var compileErr error
	if err := s.change(func(s *Snapshot) error {
		ce := newClassEntry(class, s.env)
		s.st.classes[class.Name] = ce
		compileErr = ce.compileError()
		return nil
	}); err != nil {
		return err
	}
	return compileErr
}

// DeleteClass removes the DeviceClass with the given name.
func (s *Snapshot) DeleteClass(name string) error {
	return s.change(func(s *Snapshot) error {
		delete(s.st.classes, name)
		return nil
	})
}

// AddOrUpdateClaim adds a ResourceClaim or replaces the one with the same namespace and name. The devices
// of its status.allocation become the allocated state: they are in use for every Allocate call that
// follows (results with adminAccess excepted, as in Kubernetes).
func (s *Snapshot) AddOrUpdateClaim(claim *resourceapi.ResourceClaim) error {
	if claim == nil {
		return inputError("ResourceClaim", "", errors.New("nil object"))
	}
	if claim.Name == "" {
		return inputError("ResourceClaim", "metadata.name", errors.New("must not be empty"))
	}
	if err := s.validate("ResourceClaim "+claim.Namespace+"/"+claim.Name, func(o validation.Options) field.ErrorList { return validation.ResourceClaim(claim, o) }); err != nil {
		return err
	}
	claim = own(s, claim)
	return s.change(func(s *Snapshot) error {
		key := types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}
		s.touchClaim(key)
		if old, ok := s.st.claims[key]; ok {
			s.st.applyUsage(key, old.usage, -1)
			s.st.unindexClaim(old.obj)
		}
		s.st.indexClaim(claim)
		e := &claimEntry{obj: claim, usage: usageOf(claim, s.f)}
		s.st.claims[key] = e
		s.st.applyUsage(key, e.usage, 1)
		return nil
	})
}

// DeleteClaim removes a ResourceClaim; its devices are free again.
func (s *Snapshot) DeleteClaim(namespace, name string) error {
	return s.change(func(s *Snapshot) error {
		key := types.NamespacedName{Namespace: namespace, Name: name}
		s.touchClaim(key)
		if old, ok := s.st.claims[key]; ok {
			s.st.applyUsage(key, old.usage, -1)
			s.st.unindexClaim(old.obj)
			delete(s.st.claims, key)
		}
		return nil
	})
}

// AddOrUpdateTaintRule adds a DeviceTaintRule or replaces the one with the same name. The effective taints
// of every device are recomputed. An invalid rule is rejected with an error naming it and the snapshot is
// left unchanged.
func (s *Snapshot) AddOrUpdateTaintRule(rule *resourceapi.DeviceTaintRule) error {
	if rule == nil {
		return inputError("DeviceTaintRule", "", errors.New("nil object"))
	}
	if rule.Name == "" {
		return inputError("DeviceTaintRule", "metadata.name", errors.New("must not be empty"))
	}
	if err := s.validate("DeviceTaintRule "+rule.Name, func(o validation.Options) field.ErrorList { return validation.DeviceTaintRule(rule, o) }); err != nil {
		return err
	}
	rule = own(s, rule)
	return s.change(func(s *Snapshot) error {
		old, existed := s.st.rules[rule.Name]
		s.st.rules[rule.Name] = rule
		if err := s.retaint(); err != nil {
			if existed {
				s.st.rules[rule.Name] = old
			} else {
				delete(s.st.rules, rule.Name)
			}
			return err
		}
		return nil
	})
}

// DeleteTaintRule removes a DeviceTaintRule; the taints it added disappear.
func (s *Snapshot) DeleteTaintRule(name string) error {
	return s.change(func(s *Snapshot) error {
		if _, ok := s.st.rules[name]; !ok {
			return nil
		}
		delete(s.st.rules, name)
		return s.retaint()
	})
}

// retaint rebuilds the rule evaluator and the effective taints of all devices.
func (s *Snapshot) retaint() error {
	st := s.st
	var ev *taints.Evaluator
	if len(st.rules) > 0 {
		rules := make([]*resourceapi.DeviceTaintRule, 0, len(st.rules))
		for _, r := range st.rules {
			rules = append(rules, r)
		}
		var err error
		ev, err = taints.NewEvaluator(rules)
		if err != nil {
			return err
		}
	}
	st.taints = ev
	entries := make([]*sliceEntry, 0, len(st.slices))
	for _, e := range st.slices {
		entries = append(entries, e)
	}
	for _, e := range entries {
		st.removeSlice(e)
		st.insertSlice(e.withTaints(ev))
	}
	return nil
}

// AddOrUpdateNode adds a Node or replaces the one with the same name; see [Snapshot.AllocateOnNode].
func (s *Snapshot) AddOrUpdateNode(node *v1.Node) error {
	if node == nil {
		return inputError("Node", "", errors.New("nil object"))
	}
	if node.Name == "" {
		return inputError("Node", "metadata.name", errors.New("must not be empty"))
	}
	node = own(s, node)
	return s.change(func(s *Snapshot) error {
		s.st.nodes[node.Name] = node
		s.st.addNode(node)
		return nil
	})
}

// DeleteNode removes a Node.
func (s *Snapshot) DeleteNode(name string) error {
	return s.change(func(s *Snapshot) error {
		delete(s.st.nodes, name)
		s.st.nodeList = withoutNode(s.st.nodeList, name)
		return nil
	})
}

// Fork returns a copy of the snapshot for what-if questions: changes to the fork are invisible to the
// snapshot until [Snapshot.Commit]; [Snapshot.Discard] throws them away. Forking copies the snapshot's
// indexes (not the objects or prepared devices, which are shared), so it costs time proportional to the
// number of objects, not their size. A fork can itself be forked, and many forks of one snapshot may be
// used and committed concurrently.
func (s *Snapshot) Fork() *Snapshot {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &Snapshot{
		st:       s.st.clone(),
		f:        s.f,
		opts:     s.opts,
		env:      s.env,
		envErr:   s.envErr,
		pools:    s.pools,
		classes:  s.classes,
		consumed: s.consumed,
		copier:   s.copier,
		quota:    s.quota,
		parent:   s,
		baseRev:  s.st.rev,
		closed:   s.closed,
	}
}

// touchClaim records, on a fork, the entry a claim had before the fork first changed it.
func (s *Snapshot) touchClaim(key types.NamespacedName) { s.touchClaimWas(key, s.st.claims[key]) }

// touchClaimWas is touchClaim after the change: the claim's entry before it was was.
func (s *Snapshot) touchClaimWas(key types.NamespacedName, was *claimEntry) {
	if s.parent == nil {
		return
	}
	if _, ok := s.base[key]; ok {
		return
	}
	if s.base == nil {
		s.base = map[types.NamespacedName]*claimEntry{}
	}
	s.base[key] = was
}

// Commit applies the fork's changes to the snapshot it was forked from, all or nothing. When that
// snapshot did not change since the fork, the fork's state is adopted as is. Otherwise the fork's changes
// are replayed in order on a copy of the newer state, and the copy replaces the state only when the
// fork's allocations still hold there; when they do not, Commit returns an error wrapping [ErrConflict]
// (a *[ConflictError] naming the claim and what conflicts) and the parent is left as it was. A fork's
// allocations conflict with the parent when, since the fork, the parent:
//
//   - changed or deleted a claim the fork changed (as the API server refuses an update of a claim whose
//     resourceVersion moved on),
//   - allocated a device the fork allocated, or allocated shares of it whose capacity leaves too little
//     for the fork's shares (a claim's shares with admin access included: they hold nothing once
//     allocated, but count in the call that allocates the claim, as in the Kubernetes allocator), or
//     consumed the shared counters the fork's devices need,
//   - stopped publishing a device the fork allocated (the slice was deleted or no longer lists it, or the
//     device no longer allows multiple allocations while the fork took a share of it).
//
// This is how kube-scheduler keeps two pods from getting one device: its dynamicresources plugin keeps
// the allocations it made but has not yet written as in-flight allocations (claimTracker's
// inFlightAllocations, which ListAllAllocatedDevices adds to the allocated state of every later
// decision), the assume cache refuses to assume a claim older than the one it holds, and the API server
// refuses the status update of a claim whose resourceVersion moved on. Changes to
// slices, classes, taint rules and nodes never conflict: the fork's version of such an object wins, and a
// class or taint that changed after a device was allocated leaves the allocation standing, as it does in
// Kubernetes (NoExecute taints evict through the taints package, not here).
//
// The fork cannot be used after a successful Commit; after a conflict it can still be read (to explain
// the conflict) and must be discarded. Commit on a snapshot that is not a fork returns an error.
func (s *Snapshot) Commit() error {
	s.ready()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parent == nil {
		return errors.New("commit: snapshot is not a fork")
	}
	if s.closed {
		return ErrClosed
	}
	p := s.parent
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.st.rev == s.baseRev {
		s.closed = true
		p.st = s.st
		p.adoptLog(s.log, s.base)
		return nil
	}
	if err := s.conflictingClaim(p); err != nil {
		return err
	}
	// Replay on a scratch snapshot sharing the parent's settings; its parent is the parent's, so that
	// the claims it touches are recorded for a commit of the parent.
	scratch := &Snapshot{st: p.st.clone(), f: p.f, opts: p.opts, env: p.env, envErr: p.envErr, pools: p.pools, classes: p.classes, consumed: p.consumed, copier: p.copier, parent: p.parent}
	for _, fn := range s.log {
		if err := fn(scratch); err != nil {
			return fmt.Errorf("commit: replay change: %w", err)
		}
		scratch.st.rev++
	}
	if err := s.conflictingUse(scratch.st); err != nil {
		return err
	}
	s.closed = true
	p.st = scratch.st
	p.adoptLog(s.log, scratch.base)
	return nil
}

// adoptLog records a committed child's changes on a fork, with the claims they touched: a claim the fork
// had not changed yet had, before the child's changes, the entry the child started from.
func (s *Snapshot) adoptLog(log []func(*Snapshot) error, base map[types.NamespacedName]*claimEntry) {
	if s.parent == nil {
		return
	}
	s.log = append(s.log, log...)
	for key, e := range base {
		if _, ok := s.base[key]; ok {
			continue
		}
		if s.base == nil {
			s.base = map[types.NamespacedName]*claimEntry{}
		}
		s.base[key] = e
	}
}

// Discard throws the fork's changes away; the fork cannot be used afterwards. Discard on a snapshot that
// is not a fork returns an error and leaves the snapshot usable, as Commit does; discarding a fork twice
// returns [ErrClosed].
func (s *Snapshot) Discard() error {
	s.ready()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parent == nil {
		return errors.New("discard: snapshot is not a fork")
	}
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.st = newState()
	s.log = nil
	s.base = nil
	return nil
}
