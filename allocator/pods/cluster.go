package pods

import (
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

var (
	// ErrClaimNotFound reports that a pod names a ResourceClaim (directly, or through its status or its
	// PodGroup) that is not in the snapshot; as in Kubernetes the pod waits for it.
	ErrClaimNotFound = errors.New("resource claim not found")
	// ErrTemplateNotFound reports that a pod or PodGroup names a ResourceClaimTemplate the Cluster does not have.
	ErrTemplateNotFound = errors.New("resource claim template not found")
	// ErrPodGroupNotFound reports that a pod names a PodGroup the Cluster does not have.
	ErrPodGroupNotFound = errors.New("pod group not found")
	// ErrClaimNotUsable reports a claim that this pod cannot use: owned by another pod, reserved for the
	// maximum number of consumers, or allocated for other nodes.
	ErrClaimNotUsable = errors.New("resource claim cannot be used by the pod")
	// ErrNoNode reports that the pod fits on no node; the error is a *NoNodeError with the reason of
	// each node.
	ErrNoNode = errors.New("pod fits on no node")
)

// Choice chooses among the nodes where a pod fits.
type Choice int

const (
	// FirstFit takes the first node, in order of node name, where the pod fits.
	FirstFit Choice = iota
	// BestFit packs, within each node and across nodes. On each node the pod's claims are allocated
	// with [allocator.BestFit] whatever the snapshot's strategy: a MIG partition goes to the GPU whose
	// counter set is fullest, not the first in upstream order, and a share of a device with
	// allowMultipleAllocations to the device whose capacity is most used, which keeps other GPUs whole.
	// Among nodes, its first key is the fill of that allocation: how full the shared counter sets are
	// that the allocation's devices draw on (see the package's Node choice). Then the node with the most
	// devices already allocated to claims pinned to it (the fullest node), which keeps empty nodes
	// empty; then the first by name. Without shared counters in the snapshot only the second and third
	// keys remain.
	BestFit
	// Spread takes the node with the fewest devices allocated to claims pinned to it; ties go to the first
	// by name.
	Spread
	// Scheduler scores every node where the pod fits as kube-scheduler does with the score plugins of a
	// profile ([Options.Profile]; the default profile's when nil) and takes the first by name among
	// those with the highest total; [Placement.Best] lists them all, for the caller to draw one as
	// kube-scheduler does, and [Placement.Scores] gives every node's score. The pod's claims are
	// allocated as kube-scheduler allocates them ([allocator.FirstFit]), whatever the snapshot's
	// strategy. See the package's Node choice for what is reproduced and what is not.
	Scheduler
)

func (c Choice) String() string {
	switch c {
	case FirstFit:
		return "FirstFit"
	case BestFit:
		return "BestFit"
	case Spread:
		return "Spread"
	case Scheduler:
		return "Scheduler"
	}
	return fmt.Sprintf("Choice(%d)", int(c))
}

// Predicate decides whether a pod may run on a node before its claims are looked at; a non-nil error
// is the reason it may not.
type Predicate func(pod *v1.Pod, node *v1.Node) error

// Options configure a [Cluster]. The zero value is the sensible default: FirstFit, one worker per CPU,
// the built-in NodeAffinity and TaintToleration predicates and the built-in filters ([Filter]), random
// name suffixes, the scheduler gates of Kubernetes 1.37 on.
type Options struct {
	// Choice chooses among the nodes where a pod fits.
	Choice Choice
	// Profile configures the Scheduler choice's scores as a KubeSchedulerConfiguration profile does;
	// nil is kube-scheduler's default profile. The other choices do not use it. An invalid profile is
	// the error of every Place.
	Profile *ScoreProfile
	// Cost, when set, replaces Choice for Place: every node is filtered, the pod's claims are allocated
	// on each node where it fits with [allocator.BestFit], and the node whose allocation costs least is
	// chosen (ties: the first by name). The pod fits on the same nodes as under FirstFit. PlaceGroup
	// uses it for each pod, as it uses Place; SearchGroupPlacement does not.
	Cost Cost
	// Prefer, with Cost, names devices that the pod's claims should take first on the node Cost chose
	// (the devices the cost rated that node with, where they are not those of BestFit's allocation): the
	// claims are allocated there again with [allocator.Snapshot.AllocatePreferring] (BestFit's order
	// behind the devices named), and that allocation is placed. It does not change where the pod fits.
	// nil, or no devices named, places the allocation Cost rated.
	Prefer Prefer
	// Workers is the number of goroutines that filter nodes; 0 means runtime.GOMAXPROCS(0).
	Workers int
	// NoBuiltinPredicates switches off the checks of kube-scheduler's NodeAffinity (nodeSelector and
	// required node affinity) and TaintToleration (node taints with effect NoSchedule or NoExecute)
	// plugins.
	NoBuiltinPredicates bool
	// Predicate is an additional check of every node, after the built-in ones.
	Predicate Predicate
	// NameSuffix returns the random part of a generated name, as the API server appends it to
	// metadata.generateName (five characters). nil means random; tests inject a deterministic source.
	// One Cluster calls it from one goroutine at a time (a Cluster and its forks may call it concurrently).
	NameSuffix func() string
	// StepBudget is the Limit of the [Budget] of a [Cluster.SearchGroupPlacement] call that sets none (a nil
	// Budget, or Limit 0); 0 means DefaultGroupBudget. Running out gives an error wrapping
	// allocator.ErrSearchBudget.
	StepBudget int
	// Preferred gives requests for shares of devices with allowMultipleAllocations a preferred amount
	// above their capacity.requests (an SDK extension, see capacity.ConsumedRange); nil means none. It is
	// used by Place and PlaceGroup, not by SearchGroupPlacement.
	Preferred Preferred
	// DisableExtendedResources switches off the DRAExtendedResource gate (GA in 1.37): extended resource
	// requests are then left to device plugins.
	DisableExtendedResources bool
	// DisableWorkloadClaims switches off the DRAWorkloadResourceClaims gate: PodGroup claims are then
	// ignored and every pod claim is the pod's own.
	DisableWorkloadClaims bool
	// DisableFilters switches off built-in filters of kube-scheduler: NodeName, NodeUnschedulable,
	// NodePorts, NodeResourcesFit, SchedulingGates (see [Filter]). nil means all of them on, as in
	// kube-scheduler's default profile; other names switch nothing off. NodeAffinity and
	// TaintToleration are switched off with NoBuiltinPredicates.
	DisableFilters []Filter
}

// Cluster places pods on the nodes of a Snapshot. The snapshot holds slices, classes, claims and nodes
// (the caller keeps it up to date); the Cluster adds ResourceClaimTemplates and PodGroups. A Cluster is
// safe for concurrent use; Place calls may run in parallel, while Assume and Remove change the snapshot.
type Cluster struct {
	snap *allocator.Snapshot
	opts Options

	mu        sync.RWMutex
	templates map[types.NamespacedName]*resourceapi.ResourceClaimTemplate
	groups    map[types.NamespacedName]*schedulingapi.PodGroup
	bound     map[types.NamespacedName]*boundPod // pods on nodes: added by the caller or assumed (fit.go)
	usage     map[string]*usage                  // per node: what the bound pods take; entries never change
	suffixMu  sync.Mutex
	assumeMu  sync.Mutex // one Assume, AssumeGroup, Remove or commit at a time (assume.go)
	// parent is the Cluster this one was forked from, and podLog what happened to its pods on nodes
	// since, for Commit.
	parent *Cluster
	podLog []podChange
	load   loadCache // for BestFit and Spread
	// profile is Options.Profile checked and defaulted, for the Scheduler choice; profileErr says why
	// it is invalid.
	profile    *profile
	profileErr error
	// fullIdx remembers the nodes where pods of a shape were found full (nodeindex.go); noIndex turns
	// it off (tests compare placements with and without).
	fullIdx nodeIndex
	noIndex bool
	// freed is the fork Explain last asked where pods fit once claims release their devices
	// (explain_freed.go).
	freed atomic.Pointer[freedFork]
	// perNode makes Explain explain every node on its own, fork afresh for every pod and ask the fork
	// node by node: the reference the tests compare node classes and the kept fork with.
	perNode bool
}

// New returns a Cluster that places pods on the nodes of snap.
func New(snap *allocator.Snapshot, opts Options) *Cluster {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.NameSuffix == nil {
		opts.NameSuffix = randomSuffix
	}
	c := &Cluster{
		snap:      snap,
		opts:      opts,
		templates: map[types.NamespacedName]*resourceapi.ResourceClaimTemplate{},
		groups:    map[types.NamespacedName]*schedulingapi.PodGroup{},
	}
	if opts.Choice == Scheduler {
		sp := opts.Profile
		if sp == nil {
			sp = &ScoreProfile{}
		}
		c.profile, c.profileErr = sp.compile()
	}
	return c
}

// Fork returns a Cluster on a fork of the snapshot ([allocator.Snapshot.Fork]) with the same templates,
// PodGroups, pods on nodes ([Cluster.AddOrUpdatePod]) and options, for what-if questions: place, assume
// and remove pods there, then apply the changes with [Cluster.Commit] or drop them with
// Snapshot().Discard(). Templates, PodGroups and pods added to one of the two Clusters afterwards, or
// assumed there, are not seen by the other until the commit. (Snapshot().Commit() carries the claims
// alone, not the pods on nodes.) Both call Options.NameSuffix.
func (c *Cluster) Fork() *Cluster {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return &Cluster{snap: c.snap.Fork(), opts: c.opts, templates: maps.Clone(c.templates), groups: maps.Clone(c.groups),
		bound: maps.Clone(c.bound), usage: maps.Clone(c.usage), parent: c, profile: c.profile, profileErr: c.profileErr}
}

// Commit applies a fork's changes to the Cluster it was forked from, all or nothing: the claims, as
// [allocator.Snapshot.Commit] applies them (a conflict with what the parent did since the fork is an
// error wrapping allocator.ErrConflict, and nothing is applied), and the pods the fork placed on nodes or
// removed. A pod the fork placed must still fit on its node in the parent (NodePorts, NodeResourcesFit),
// else the commit conflicts too. The fork cannot be used after a successful Commit.
func (c *Cluster) Commit() error {
	if c.parent == nil {
		return errors.New("commit: Cluster is not a fork")
	}
	p := c.parent
	p.assumeMu.Lock()
	defer p.assumeMu.Unlock()
	c.mu.RLock()
	log := slices.Clone(c.podLog)
	c.mu.RUnlock()
	last := map[types.NamespacedName]int{}
	for i, ch := range log {
		last[ch.key] = i
	}
	var added []podOnNode
	for i, ch := range log {
		if last[ch.key] == i && ch.pod != nil {
			added = append(added, podOnNode{pod: ch.pod, node: ch.node})
		}
	}
	if err := p.stillFit(added); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := c.snap.Commit(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	forgot := false
	for _, ch := range log {
		var had bool
		if ch.pod != nil {
			_, had = p.recordLocked(ch.key, ch.node, ch.demand, ch.pod)
		} else {
			_, had = p.forgetLocked(ch.key)
		}
		forgot = forgot || had
	}
	if forgot {
		// Pods forgotten next to a commit's claims, which are no change the index can follow: it
		// is emptied (nodeindex.go).
		p.fullIdx.reset()
	}
	return nil
}

// Snapshot returns the snapshot the Cluster places pods on.
func (c *Cluster) Snapshot() *allocator.Snapshot { return c.snap }

// AddOrUpdateTemplate adds a ResourceClaimTemplate or replaces the one with the same namespace and name.
// The template is copied.
func (c *Cluster) AddOrUpdateTemplate(t *resourceapi.ResourceClaimTemplate) error {
	if t == nil {
		return &allocator.InputError{Object: "ResourceClaimTemplate", Err: errors.New("nil object")}
	}
	if t.Name == "" {
		return &allocator.InputError{Object: "ResourceClaimTemplate " + t.Namespace + "/", Field: "metadata.name", Err: errors.New("must not be empty")}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.templates[types.NamespacedName{Namespace: t.Namespace, Name: t.Name}] = t.DeepCopy()
	return nil
}

// DeleteTemplate removes a ResourceClaimTemplate.
func (c *Cluster) DeleteTemplate(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.templates, types.NamespacedName{Namespace: namespace, Name: name})
}

// AddOrUpdatePodGroup adds a PodGroup (scheduling.k8s.io/v1beta1) or replaces the one with the same
// namespace and name. The group is copied.
func (c *Cluster) AddOrUpdatePodGroup(g *schedulingapi.PodGroup) error {
	if g == nil {
		return &allocator.InputError{Object: "PodGroup", Err: errors.New("nil object")}
	}
	if g.Name == "" {
		return &allocator.InputError{Object: "PodGroup " + g.Namespace + "/", Field: "metadata.name", Err: errors.New("must not be empty")}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.groups[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}] = g.DeepCopy()
	return nil
}

// DeletePodGroup removes a PodGroup.
func (c *Cluster) DeletePodGroup(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.groups, types.NamespacedName{Namespace: namespace, Name: name})
}

func (c *Cluster) template(namespace, name string) (*resourceapi.ResourceClaimTemplate, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.templates[types.NamespacedName{Namespace: namespace, Name: name}]
	return t, ok
}

func (c *Cluster) group(namespace, name string) (*schedulingapi.PodGroup, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	g, ok := c.groups[types.NamespacedName{Namespace: namespace, Name: name}]
	return g, ok
}

func (c *Cluster) suffix() string {
	c.suffixMu.Lock()
	defer c.suffixMu.Unlock()
	return c.opts.NameSuffix()
}

// nameTries bounds how often a generated name is drawn again because it is taken.
const nameTries = 16

// freeName draws the name the API server would give a new claim with metadata.generateName base: one
// that no claim of the namespace in snap has, nor any name in taken (generated earlier for the same
// placement). The API server answers a taken name with AlreadyExists and the resourceclaim controller
// tries again; a name is never reused, which would overwrite another pod's claim.
func (c *Cluster) freeName(snap *allocator.Snapshot, namespace, base string, taken map[string]bool) (string, error) {
	for range nameTries {
		name := generatedName(base, c.suffix())
		if _, exists := snap.Claim(namespace, name); !exists && !taken[name] {
			return name, nil
		}
	}
	return "", fmt.Errorf("ResourceClaim %s/%s*: %w: every generated name drawn (%d) is taken", namespace, base, allocator.ErrConflict, nameTries)
}

// suffixAlphabet is the API server's alphabet for generated names (k8s.io/apimachinery/pkg/util/rand):
// no vowels, no characters that look alike.
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func randomSuffix() string {
	var b [5]byte
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(suffixAlphabet))))
		if err != nil {
			// crypto/rand does not fail on supported platforms.
			panic(fmt.Sprintf("read random bytes: %v", err))
		}
		b[i] = suffixAlphabet[n.Int64()]
	}
	return string(b[:])
}

// generatedName is the name the API server gives an object with metadata.generateName base, as its
// SimpleNameGenerator does: the base cut to 58 characters, then the suffix.
func generatedName(base, suffix string) string {
	const maxGeneratedNameLength = 63 - 5
	if len(base) > maxGeneratedNameLength {
		base = base[:maxGeneratedNameLength]
	}
	return base + suffix
}
