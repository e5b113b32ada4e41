package fragscore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/util/feature"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "DRAFragmentation"

// stateKey is where PreScore leaves the pod's demand for Score and NormalizeScore.
const stateKey fwk.StateKey = Name

// Plugin is the score plugin. Use [New] (the factory app.WithPlugin takes).
type Plugin struct {
	handle fwk.Handle
	args   Args

	mu   sync.Mutex // one PreScore at a time: it brings the view up to date
	view *view
	// cost is headroom's FGD for the configured mix, or the learned mix: built again when the
	// inventory or the learned mix changed.
	cost pods.Cost
	mix  []headroom.Shape
	// learned counts the shapes of the pods seen, by name, while no mix is configured.
	learned     map[string]*headroom.Shape
	learnedSeen int
	// sigs numbers the nodes by their node-local devices (nodeSignatures), built again when the
	// Inventory is.
	sigs map[string]int
	// perNode turns off scoring once per scoreKey (the tests compare the two).
	perNode bool
}

var (
	_ fwk.PreScorePlugin  = (*Plugin)(nil)
	_ fwk.ScorePlugin     = (*Plugin)(nil)
	_ fwk.ScoreExtensions = (*Plugin)(nil)
	_ fwk.ReservePlugin   = (*Plugin)(nil)
)

// New is the plugin's factory: it decodes the args ([Args]) and checks them.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	m := h.SharedDRAManager()
	if m == nil {
		return nil, fmt.Errorf("%s: the scheduler has no DRA manager (the DynamicResourceAllocation feature is off)", Name)
	}
	v := newView()
	// The scheduler's own DRA manager reads the informers of its informer factory (and its assume
	// cache and in-flight allocations, which the view reads through the manager): their events say
	// what changed. Another manager (a simulation's) announces nothing, so its view lists.
	if _, own := m.(*dynamicresources.DefaultDRAManager); own && h.SharedInformerFactory() != nil {
		// As kube-scheduler v1.37.2 starts its ResourceSlice tracker (pkg/scheduler/scheduler.go):
		// DeviceTaintRules apply where the DRADeviceTaintRules feature is on.
		taintRules := feature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules)
		v = newFeedView(informerFeed(h.SharedInformerFactory(), m.ResourceClaims(), taintRules))
		if err := v.watchInformers(h.SharedInformerFactory(), taintRules); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
	}
	return &Plugin{handle: h, args: args, view: v, mix: args.shapes(), learned: map[string]*headroom.Shape{}}, nil
}

// DecodeArgs decodes the plugin's args as kube-scheduler hands them over (a *runtime.Unknown of JSON or
// YAML; nil means the defaults) and checks them.
func DecodeArgs(obj runtime.Object) (Args, error) {
	var args Args
	if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
		return Args{}, fmt.Errorf("%s args: %w", Name, err)
	}
	if err := args.validate(); err != nil {
		return Args{}, fmt.Errorf("%s args: %w", Name, err)
	}
	return args, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// demand is what PreScore found for the pod: the claims the DRA plugin will allocate for it (its own
// claims not yet allocated), its CPU and memory as NodeResourcesFit counts them, and what Score rates
// with.
type demand struct {
	claims   []*resourceapi.ResourceClaim
	requests map[v1.ResourceName]int64
	snap     *allocator.Snapshot
	cost     pods.Cost
	mode     Mode
	topo     []resourceapi.FullyQualifiedName
	// scores are the feasible nodes' scores, computed in PreScore once per scoreKey; nil where
	// Score scores each node on its own.
	scores nodeScores
}

// Clone returns the demand itself: it is not changed after PreScore.
func (d *demand) Clone() fwk.StateData { return d }

// PreScore resolves the pod's claims through the scheduler's DRA manager and brings dralloc's view of
// the DRA state up to date with it. A pod without claims to allocate is skipped: it takes no devices,
// so no node's fragmentation grows by its devices.
func (p *Plugin) PreScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	m := p.handle.SharedDRAManager()
	claims, err := podClaims(m.ResourceClaims(), pod)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if len(claims) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rebuilt, err := p.view.sync(m)
	if errors.Is(err, errNotSynced) {
		// Just after the scheduler started: the pod is not rated rather than rated on a part of the
		// cluster.
		klog.FromContext(ctx).V(4).Info("pod not scored: the plugin's view is not synced yet", "pod", klog.KObj(pod))
		return fwk.NewStatus(fwk.Skip)
	}
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("%s: %w", Name, err))
	}
	d := &demand{claims: claims, snap: p.view.snap, mode: p.args.Mode, topo: p.args.TopologyAttributes}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	d.requests = map[v1.ResourceName]int64{}
	if q, ok := reqs[v1.ResourceCPU]; ok {
		d.requests[v1.ResourceCPU] = q.MilliValue()
	}
	if q, ok := reqs[v1.ResourceMemory]; ok {
		d.requests[v1.ResourceMemory] = q.Value()
	}
	if d.mode == Fragmentation {
		learnedChanged := false
		if len(p.args.Mix) == 0 {
			learnedChanged = p.learn(pod, claims, reqs)
		}
		if rebuilt || learnedChanged || p.cost == nil {
			cost, _, err := p.view.inv.FGD(p.mix)
			if err != nil {
				return fwk.AsStatus(fmt.Errorf("%s: mix: %w", Name, err))
			}
			p.cost = cost
		}
		d.cost = p.cost
	}
	if rebuilt || p.sigs == nil {
		p.sigs = nodeSignatures(p.view.slices, newSigner(p.args))
	}
	if !p.perNode {
		scores, err := p.scoreByKey(ctx, pod, d, nodes)
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("%s: %w", Name, err))
		}
		d.scores = scores
	}
	state.Write(stateKey, d)
	return nil
}

// learn counts the pod's shape into the learned mix, the shapes of the pods scored so far weighted by
// how many pods had each (the paper's target workload, estimated from the workload seen). It reports
// whether the mix handed to FGD changed: on a new shape, and otherwise when the number of pods seen
// doubled, so that FGD's memos are kept while the weights settle.
func (p *Plugin) learn(pod *v1.Pod, claims []*resourceapi.ResourceClaim, reqs v1.ResourceList) bool {
	sh, err := shapeOf(claims, reqs)
	if err != nil {
		klog.FromContext(context.Background()).V(4).Info("pod not counted into the learned mix", "pod", klog.KObj(pod), "err", err)
		return false
	}
	p.learnedSeen++
	s, known := p.learned[sh.Name]
	if !known && len(p.learned) >= maxLearnedShapes {
		return false
	}
	if !known {
		s = &sh
		p.learned[sh.Name] = s
	}
	s.Weight++
	seen := p.learnedSeen
	if known && seen&(seen-1) != 0 {
		return false
	}
	p.mix = p.mix[:0:0]
	for _, s := range p.learned {
		p.mix = append(p.mix, *s)
	}
	slices.SortFunc(p.mix, func(a, b headroom.Shape) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	// The weights are counts of pods (of the shapes kept); FGD wants them to sum to 1.
	var sum float64
	for _, s := range p.mix {
		sum += s.Weight
	}
	for i := range p.mix {
		p.mix[i].Weight /= sum
	}
	return true
}

// maxLearnedShapes bounds the learned mix: shapes past it are not counted.
const maxLearnedShapes = 256

// Score rates the node by the growth of its fragmentation (headroom's FGD measure, the paper's score
// 100·σ(−growth in GPUs)) if the pod's claims were allocated there as the DRA plugin allocates them:
// first fit, in the upstream allocator's order (dralloc's FirstFit takes the devices the scheduler
// takes). Topology mode rates the same allocation by how few topology domains it spans. A node where
// dralloc finds no allocation (its view lags the DRA plugin's) scores 0; Score never fails a pod.
// PreScore has scored the feasible nodes once per situation (scoreKey: nodes that the pod's claims,
// the scores and their devices cannot tell apart score alike), so Score looks the node up; a node
// PreScore was not given is scored here.
func (p *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	d, err := readDemand(state)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	if n := nodeInfo.Node(); n != nil && d.scores != nil {
		if s, ok := d.scores[n.Name]; ok {
			return s, nil
		}
	}
	return p.scoreNode(ctx, d, pod, nodeInfo)
}

// scoreNode scores the node on its own: Score's rating, allocating the pod's claims there.
func (p *Plugin) scoreNode(ctx context.Context, d *demand, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, nil
	}
	results, err := d.snap.Allocate(ctx, node, d.claims)
	if err != nil {
		if errors.Is(err, allocator.ErrUnsatisfiable) {
			return 0, nil
		}
		klog.FromContext(ctx).V(4).Info("allocation for scoring failed", "pod", klog.KObj(pod), "node", klog.KObj(node), "err", err)
		return 0, nil
	}
	if d.mode == Topology {
		return topologyScore(d.snap, results, d.topo), nil
	}
	// What the node's pods request, in a map of the pool: Score runs for many nodes at once, and FGD
	// reads the map without keeping it.
	req := nodeInfo.GetRequested()
	requested := requestedMaps.Get().(map[v1.ResourceName]int64)
	requested[v1.ResourceCPU], requested[v1.ResourceMemory] = req.GetMilliCPU(), req.GetMemory()
	cost, err := d.cost(pods.CostInput{Snapshot: d.snap, Pod: pod, Node: node, Results: results, Requested: requested, PodRequests: d.requests})
	requestedMaps.Put(requested)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	// FGD's cost is minus the simulator's integer score, 0..100.
	return int64(math.Max(0, math.Min(100, -cost))), nil
}

// requestedMaps are Score's maps of what a node's pods request (cpu and memory, always both set).
var requestedMaps = sync.Pool{New: func() any { return make(map[v1.ResourceName]int64, 2) }}

// ScoreExtensions returns the plugin: it normalizes its scores.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return p }

// NormalizeScore stretches the scores of the feasible nodes over 0..100: the node whose fragmentation
// grows least gets 100, the one whose grows most 0, so that the plugin's weight, not the band the
// nodes' growths fall in, says how much it counts next to the other score plugins. Nodes of one score
// keep one score (all 100 where all are alike).
func (p *Plugin) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	if len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi == lo {
			scores[i].Score = fwk.MaxScore
			continue
		}
		scores[i].Score = (scores[i].Score - lo) * fwk.MaxScore / (hi - lo)
	}
	return nil
}

// Reserve never fails the pod: it tells the view that the pod's claims may change in the DRA
// plugin's tracker without an informer event (the DRA plugin reserves their allocations now, and
// writes and assumes them in the binding cycle), so that the next sync reads them again.
func (p *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	p.claimsReserved(pod)
	return nil
}

// Unreserve tells the view, as Reserve does, that the DRA plugin may have taken back what it reserved
// or assumed for the pod's claims.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	p.claimsReserved(pod)
}

// claimsReserved marks the pod's claims to be read again by the incremental view (a listing view
// reads every claim anyway). A pod whose claim names cannot be resolved has nothing the DRA plugin
// can reserve.
func (p *Plugin) claimsReserved(pod *v1.Pod) {
	if p.view.feed == nil || len(pod.Spec.ResourceClaims) == 0 {
		return
	}
	names, err := podClaimNames(pod)
	if err != nil || len(names) == 0 {
		return
	}
	keys := make([]types.NamespacedName, len(names))
	for i, n := range names {
		keys[i] = types.NamespacedName{Namespace: pod.Namespace, Name: n.name}
	}
	p.view.claimsReserved(keys)
}

func readDemand(state fwk.CycleState) (*demand, error) {
	v, err := state.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("%s: reading PreScore's state: %w", Name, err)
	}
	d, ok := v.(*demand)
	if !ok {
		return nil, fmt.Errorf("%s: PreScore's state is a %T", Name, v)
	}
	return d, nil
}
