package allocator

import (
	"errors"
	"fmt"
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
type Snapshot struct {
	mu     sync.RWMutex
	st     *state
	f      Features
	opts   Options
	env    *celenv.Env
	envErr error
	// pools caches pools built from complete slice sets; shared with forks, whose
	// devices are the same prepared entries.
	pools *poolCache

	// Set on forks: the parent, the parent's revision when forked, and the changes made since, which
	// Commit replays onto the parent when the parent changed in the meantime.
	parent  *Snapshot
	baseRev uint64
	log     []func(*Snapshot) error
	closed  bool
}

// NewSnapshot returns an empty snapshot with the given options.
func NewSnapshot(opts Options) *Snapshot {
	f := DefaultFeatures()
	if opts.Features != nil {
		f = *opts.Features
	}
	s := &Snapshot{st: newState(), f: f, opts: opts, env: opts.CEL, pools: &poolCache{}}
	if opts.Strategy < FirstFit || opts.Strategy > Spread {
		s.envErr = fmt.Errorf("%w: unsupported strategy %s", ErrInvalidInput, opts.Strategy)
		return s
	}
	if s.env == nil {
		cf := celFeatures(f)
		s.env, s.envErr = celenv.NewEnv(celenv.Options{Features: &cf})
		if s.envErr != nil {
			s.envErr = fmt.Errorf("create CEL environment: %w", s.envErr)
		}
	}
	return s
}

func (s *Snapshot) capOpts() capacity.Options {
	return capacity.Options{DisableFractionalCapacityRange: !s.f.DRAFractionalCapacityRange}
}

// Features returns the feature gates the snapshot was created with.
func (s *Snapshot) Features() Features { return s.f }

// change runs fn under the write lock and records it for Commit.
func (s *Snapshot) change(fn func(*Snapshot) error) error {
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
// Options.NoCopy) and indexed; its devices are prepared, with their effective taints, when an Allocate
// call first meets them. The cost is that of the copy and the indexes, whatever the number of slices.
func (s *Snapshot) AddOrUpdateSlice(slice *resourceapi.ResourceSlice) error {
	if slice == nil {
		return inputError("ResourceSlice", "", errors.New("nil object"))
	}
	if err := s.validate("ResourceSlice "+slice.Name, func(o validation.Options) field.ErrorList { return validation.ResourceSlice(slice, o) }); err != nil {
		return err
	}
	slice = own(s, slice)
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
// Options.NoCopy) and its selectors compiled; a selector that does not compile fails the calls that use
// the class, with the error naming it.
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
	return s.change(func(s *Snapshot) error {
		s.st.classes[class.Name] = newClassEntry(class, s.env)
		return nil
	})
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
		if old, ok := s.st.claims[key]; ok {
			s.st.applyUsage(old.usage, -1)
		}
		e := &claimEntry{obj: claim, usage: usageOf(claim, s.f)}
		s.st.claims[key] = e
		s.st.applyUsage(e.usage, 1)
		return nil
	})
}

// DeleteClaim removes a ResourceClaim; its devices are free again.
func (s *Snapshot) DeleteClaim(namespace, name string) error {
	return s.change(func(s *Snapshot) error {
		key := types.NamespacedName{Namespace: namespace, Name: name}
		if old, ok := s.st.claims[key]; ok {
			s.st.applyUsage(old.usage, -1)
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
		return nil
	})
}

// DeleteNode removes a Node.
func (s *Snapshot) DeleteNode(name string) error {
	return s.change(func(s *Snapshot) error {
		delete(s.st.nodes, name)
		return nil
	})
}

// Fork returns a copy of the snapshot for what-if questions: changes to the fork are invisible to the
// snapshot until [Snapshot.Commit]; [Snapshot.Discard] throws them away. Forking copies the snapshot's
// indexes (not the objects or prepared devices, which are shared), so it costs time proportional to the
// number of objects, not their size. A fork can itself be forked.
func (s *Snapshot) Fork() *Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &Snapshot{
		st:      s.st.clone(),
		f:       s.f,
		opts:    s.opts,
		env:     s.env,
		envErr:  s.envErr,
		pools:   s.pools,
		parent:  s,
		baseRev: s.st.rev,
		closed:  s.closed,
	}
}

// Commit applies the fork's changes to the snapshot it was forked from. When that snapshot did not change
// since the fork, the fork's state is adopted as is; otherwise the fork's changes are replayed in order on
// top of the newer state. The fork cannot be used afterwards. Commit on a snapshot that is not a fork
// returns an error.
func (s *Snapshot) Commit() error {
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
	s.closed = true
	if p.st.rev == s.baseRev {
		p.st = s.st
		if p.parent != nil {
			p.log = append(p.log, s.log...)
		}
		return nil
	}
	for _, fn := range s.log {
		if err := fn(p); err != nil {
			return fmt.Errorf("commit: replay change: %w", err)
		}
		p.st.rev++
		if p.parent != nil {
			p.log = append(p.log, fn)
		}
	}
	return nil
}

// Discard throws the fork's changes away; the fork cannot be used afterwards.
func (s *Snapshot) Discard() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.st = newState()
	s.log = nil
}
