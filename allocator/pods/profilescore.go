package pods

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// How the Scheduler choice scores, as kube-scheduler v1.37.2 does (pkg/scheduler/schedule_one.go
// prioritizeNodes, framework/runtime RunScorePlugins): every plugin of the profile gives each node where
// the pod fits a raw score; the plugins with a NormalizeScore rescale theirs over those nodes; each is
// multiplied by the plugin's weight and the products summed. The nodes with the highest sum are the
// best; kube-scheduler takes one of them (a heap on the total, ties in whatever order its parallel
// filter found the nodes).

// maxNodeScore is framework.MaxNodeScore.
const maxNodeScore = 100

// The defaults kube-scheduler gives a container without a cpu or memory request when it scores
// (schedutil.DefaultMilliCPURequest, DefaultMemoryRequest): a pod requesting nothing still weighs.
const (
	defaultMilliCPURequest = 100
	defaultMemoryRequest   = 200 * 1024 * 1024
)

// NodeScore is a node's score for a pod under the Scheduler choice.
type NodeScore struct {
	Node string
	// Total is the sum of the plugins' scores.
	Total int64
	// Plugins are each plugin's score, normalised and multiplied by its weight, in the profile's order.
	Plugins []PluginScore
}

// PluginScore is one plugin's weighted score of a node.
type PluginScore struct {
	Plugin ScorePlugin
	Score  int64
}

// nonZeroOf is what NodeInfo counts of a pod on a node as its non-zero cpu (millicores) and memory
// (PodInfo.CalculateResource): its requests with every container missing a request counted at the
// defaults (getNonMissingContainerRequests; with pod-level requests, only a resource requested at
// neither level), with pod-level resources and status resources as demandOf counts them.
func nonZeroOf(pod *v1.Pod) (cpu, mem int64) {
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	reqs := resourcehelper.PodRequests(pod, opts)
	missing := v1.ResourceList{}
	levels := resourcehelper.IsPodLevelRequestsSet(pod)
	if _, ok := reqs[v1.ResourceCPU]; !levels || !ok {
		missing[v1.ResourceCPU] = *resource.NewMilliQuantity(defaultMilliCPURequest, resource.DecimalSI)
	}
	if _, ok := reqs[v1.ResourceMemory]; !levels || !ok {
		missing[v1.ResourceMemory] = *resource.NewQuantity(defaultMemoryRequest, resource.DecimalSI)
	}
	opts.NonMissingContainerRequests = missing
	reqs = resourcehelper.PodRequests(pod, opts)
	c, m := reqs[v1.ResourceCPU], reqs[v1.ResourceMemory]
	return c.MilliValue(), m.Value()
}

// scoreInput is what a placement scores: the pod, and per node where it fits the node, what the pods
// on it take and its claims' allocation.
type scoreInput struct {
	r     *request
	nodes []*v1.Node // every node of the cluster (ImageLocality counts the nodes holding an image)
	fit   []int      // the nodes where the pod fits, as indexes into nodes
	usage []*usage   // by position in fit; nil for a node without pods
	// results are, by position in fit, the allocations of the claims to allocate on the node (claims'
	// nc.claims), made only when DynamicResources scores them (a request with firstAvailable); nil
	// otherwise.
	results [][]resourceapi.AllocationResult
	claims  []*nodeClaims
}

// kubeScores scores the nodes of in.fit with the profile, and returns their scores in the order of fit.
func kubeScores(p *profile, in *scoreInput) ([]NodeScore, error) {
	n := len(in.fit)
	out := make([]NodeScore, n)
	for k, i := range in.fit {
		out[k] = NodeScore{Node: in.nodes[i].Name, Plugins: make([]PluginScore, 0, len(p.plugins))}
	}
	raw := make([]int64, n)
	for _, pw := range p.plugins {
		clear(raw)
		normalize, reverse := false, false
		switch pw.Plugin {
		case ScoreNodeResourcesFit:
			fitScores(p, in, raw)
		case ScoreBalancedAllocation:
			balancedScores(p, in, raw)
		case ScoreNodeAffinity:
			if err := affinityScores(in, raw); err != nil {
				return nil, err
			}
			normalize = true
		case ScoreTaintToleration:
			taintScores(in, raw)
			normalize, reverse = true, true
		case ScoreImageLocality:
			imageScores(in, raw)
		case ScoreDynamicResources:
			draScores(in, raw)
			normalize = true
		case ScorePodTopologySpread, ScoreInterPodAffinity:
			// Not reproduced: 0 everywhere, as when the plugin skips the pod.
		}
		if normalize {
			defaultNormalize(raw, reverse)
		}
		for k := range out {
			s := raw[k] * int64(pw.Weight)
			out[k].Plugins = append(out[k].Plugins, PluginScore{Plugin: pw.Plugin, Score: s})
			out[k].Total += s
		}
	}
	return out, nil
}

// defaultNormalize is helper.DefaultNormalizeScore with MaxNodeScore: scores rescaled so that the
// highest is 100 (integer division), reversed when asked; all 0 stay 0, or all 100 reversed.
func defaultNormalize(scores []int64, reverse bool) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s)
	}
	for i, s := range scores {
		if highest == 0 {
			if reverse {
				scores[i] = maxNodeScore
			}
			continue
		}
		s = maxNodeScore * s / highest
		if reverse {
			s = maxNodeScore - s
		}
		scores[i] = s
	}
}

// quantityOf is a resource in the units the scheduler counts: cpu in millicores, the others in units.
func quantityOf(list v1.ResourceList, name v1.ResourceName) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// nodeResources is resourceAllocationScorer.calculateNodeAllocatableRequest for one node: per resource
// of the list, what the node allocates, what its pods take and what they take with the pod; an
// extended resource the pod does not request, or one the node does not allocate, is left out (0).
// nonZero: cpu and memory of the pods on the node counted with the defaults for missing requests
// (NodeInfo's NonZeroRequested, NodeResourcesFit); otherwise their requests (BalancedAllocation).
// An extended resource backed by DRA, which the node does not list in status.allocatable, is left out
// where kube-scheduler counts the class's devices on the node (see the package's Node choice).
func nodeResources(resources []ResourceWeight, podReq []int64, node *v1.Node, u *usage, nonZero bool) (requested, allocated, allocatable []int64) {
	requested = make([]int64, len(resources))
	allocated = make([]int64, len(resources))
	allocatable = make([]int64, len(resources))
	for i, r := range resources {
		if podReq[i] == 0 && isScalarResourceName(r.Name) {
			continue
		}
		alloc := quantityOf(node.Status.Allocatable, r.Name)
		if _, listed := node.Status.Allocatable[r.Name]; !listed || alloc == 0 {
			continue
		}
		switch r.Name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		default:
			if !isScalarResourceName(r.Name) {
				continue // the scheduler counts no other resource (framework.Resource)
			}
		}
		var used int64
		if u != nil {
			used = u.requested[r.Name]
			if nonZero && r.Name == v1.ResourceCPU {
				used = u.nonZeroCPU
			} else if nonZero && r.Name == v1.ResourceMemory {
				used = u.nonZeroMem
			}
		}
		allocatable[i] = alloc
		allocated[i] = used
		requested[i] = used + podReq[i]
	}
	return requested, allocated, allocatable
}

// podRequestList is calculatePodResourceRequestList: the pod's request of each resource. nonZero is
// NodeResourcesFit's count (missing cpu and memory requests at the defaults; as its scorer is built
// without the feature flags, pod-level resources and status resources are not looked at); otherwise
// BalancedAllocation's (pod-level resources and status resources, as 1.37 enables them).
func podRequestList(pod *v1.Pod, resources []ResourceWeight, nonZero bool) []int64 {
	var opts resourcehelper.PodResourcesOptions
	if nonZero {
		opts.SkipPodLevelResources = true
		opts.NonMissingContainerRequests = v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(defaultMilliCPURequest, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(defaultMemoryRequest, resource.DecimalSI),
		}
	} else {
		opts.UseStatusResources = true
		opts.InPlacePodLevelResourcesVerticalScalingEnabled = true
	}
	reqs := resourcehelper.PodRequests(pod, opts)
	out := make([]int64, len(resources))
	for i, r := range resources {
		out[i] = quantityOf(reqs, r.Name)
	}
	return out
}

// fitScores is NodeResourcesFit's Score with the profile's scoring strategy.
func fitScores(p *profile, in *scoreInput, raw []int64) {
	res := p.strategy.Resources
	podReq := podRequestList(in.r.pod, res, true)
	for k, i := range in.fit {
		requested, _, allocatable := nodeResources(res, podReq, in.nodes[i], in.usage[k], true)
		raw[k] = strategyScore(p.strategy, requested, allocatable)
	}
}

// strategyScore is the scorer of leastResourceScorer, mostResourceScorer or
// buildRequestedToCapacityRatioScorerFunction: per resource the node allocates, a score from 0 to 100,
// averaged by the resources' weights (integer division; RequestedToCapacityRatio rounds, and leaves
// out resources scoring 0).
func strategyScore(st ScoringStrategy, requested, allocatable []int64) int64 {
	var sum, weights int64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		w := st.Resources[i].Weight
		var s int64
		switch st.Type {
		case MostAllocated:
			req := min(requested[i], allocatable[i]) // pods without requests count at the defaults
			s = req * maxNodeScore / allocatable[i]
		case RequestedToCapacityRatio:
			util := int64(100)
			if requested[i] <= allocatable[i] {
				util = requested[i] * 100 / allocatable[i]
			}
			if s = shapeScore(st.Shape, util); s <= 0 {
				continue
			}
		default: // LeastAllocated
			if requested[i] <= allocatable[i] {
				s = (allocatable[i] - requested[i]) * maxNodeScore / allocatable[i]
			}
		}
		sum += s * w
		weights += w
	}
	if weights == 0 {
		return 0
	}
	if st.Type == RequestedToCapacityRatio {
		return int64(math.Round(float64(sum) / float64(weights)))
	}
	return sum / weights
}

// shapeScore is helper.BuildBrokenLinearFunction over the shape with its scores scaled from 0–10 to
// 0–100 (requestedToCapacityRatioScorer).
func shapeScore(shape []UtilizationShapePoint, util int64) int64 {
	const scale = maxNodeScore / 10 // MaxNodeScore / MaxCustomPriorityScore
	for i, pt := range shape {
		if util <= int64(pt.Utilization) {
			if i == 0 {
				return int64(pt.Score) * scale
			}
			prev := shape[i-1]
			ps, s := int64(prev.Score)*scale, int64(pt.Score)*scale
			return ps + (s-ps)*(util-int64(prev.Utilization))/int64(pt.Utilization-prev.Utilization)
		}
	}
	return int64(shape[len(shape)-1].Score) * scale
}

// balancedScores is NodeResourcesBalancedAllocation's Score: a pod that requests none of the resources
// (best effort) is skipped (0 everywhere); otherwise 50 + (50 + balance with the pod − balance
// without it) ÷ 2, a balance being (1 − the standard deviation of requested ÷ allocatable) × 100.
func balancedScores(p *profile, in *scoreInput, raw []int64) {
	podReq := podRequestList(in.r.pod, p.balanced, false)
	if !slices.ContainsFunc(podReq, func(v int64) bool { return v != 0 }) {
		return
	}
	for k, i := range in.fit {
		requested, allocated, allocatable := nodeResources(p.balanced, podReq, in.nodes[i], in.usage[k], false)
		with, without := balance(requested, allocatable), balance(allocated, allocatable)
		raw[k] = maxNodeScore/2 + (maxNodeScore/2+with-without)/2
	}
}

// balance is balancedResourceScore: each resource's share used (at most 1); their standard deviation
// (half the difference for two); (1 − it) × 100, truncated.
func balance(requested, allocatable []int64) int64 {
	var fractions []float64
	var total float64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		f := min(float64(requested[i])/float64(allocatable[i]), 1)
		total += f
		fractions = append(fractions, f)
	}
	std := 0.0
	if len(fractions) == 2 {
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	} else if len(fractions) > 2 {
		mean := total / float64(len(fractions))
		var sum float64
		for _, f := range fractions {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(len(fractions)))
	}
	return int64((1 - std) * float64(maxNodeScore))
}

// affinityScores is NodeAffinity's Score: the sum of the weights of the pod's preferred node affinity
// terms the node matches. Invalid terms are the pod's error, as the plugin's PreScore fails.
func affinityScores(in *scoreInput, raw []int64) error {
	pod := in.r.pod
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return fmt.Errorf("%s: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution: %w", podName(pod), err)
	}
	for k, i := range in.fit {
		raw[k] = terms.Score(in.nodes[i])
	}
	return nil
}

// taintScores is TaintToleration's Score: the node's PreferNoSchedule taints that none of the pod's
// tolerations with effect PreferNoSchedule or empty tolerates (normalised reversed: fewest is best).
func taintScores(in *scoreInput, raw []int64) {
	var tolerations []v1.Toleration
	for _, t := range in.r.pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tolerations = append(tolerations, t)
		}
	}
	for k, i := range in.fit {
		taints := in.nodes[i].Spec.Taints
		for j := range taints {
			if taints[j].Effect == v1.TaintEffectPreferNoSchedule &&
				!corev1helpers.TolerationsTolerateTaint(logr.Discard(), tolerations, &taints[j], false) {
				raw[k]++
			}
		}
	}
}

// ImageLocality's thresholds (imagelocality: 23 MiB, 1000 MiB per container).
const (
	mib                   = 1024 * 1024
	imageMinThreshold     = 23 * mib
	imageMaxPerContainerT = 1000 * mib
)

// imageScores is ImageLocality's Score: the size of each of the pod's images (init containers,
// containers, image volumes; "name" without a tag is "name:latest") that the node lists in
// status.images, scaled by the share of all nodes listing it, summed, clamped between 23 MiB and
// 1000 MiB per image, and mapped onto 0–100.
func imageScores(in *scoreInput, raw []int64) {
	pod := in.r.pod
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, normalizedImage(c.Image))
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, normalizedImage(c.Image))
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.Image != nil {
			names = append(names, normalizedImage(vol.Image.Reference))
		}
	}
	if len(names) == 0 {
		return
	}
	// How many nodes list each of the pod's images (createImageExistenceMap), over every node.
	holders := map[string]int{}
	for _, name := range names {
		holders[name] = 0
	}
	for _, node := range in.nodes {
		seen := map[string]bool{}
		for _, img := range node.Status.Images {
			for _, name := range img.Names {
				if _, ok := holders[name]; ok && !seen[name] {
					seen[name] = true
					holders[name]++
				}
			}
		}
	}
	total := float64(len(in.nodes))
	maxThreshold := int64(imageMaxPerContainerT) * int64(len(names))
	for k, i := range in.fit {
		// getNodeImageStates: a name listed twice on a node takes the size of its last listing.
		sizes := map[string]int64{}
		for _, img := range in.nodes[i].Status.Images {
			for _, name := range img.Names {
				if _, ok := holders[name]; ok {
					sizes[name] = img.SizeBytes
				}
			}
		}
		var sum int64
		for _, name := range names {
			if size, ok := sizes[name]; ok {
				sum += int64(float64(size) * (float64(holders[name]) / total))
			}
		}
		sum = min(max(sum, imageMinThreshold), maxThreshold)
		raw[k] = maxNodeScore * (sum - imageMinThreshold) / (maxThreshold - imageMinThreshold)
	}
}

// normalizedImage is imagelocality's normalizedImageName: a name without a tag gets ":latest".
func normalizedImage(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		name += ":latest"
	}
	return name
}

// draScores is DynamicResources' Score (computeScore): over the pod's claims, allocated already or on
// the node, each request with firstAvailable scores 8 − the index of the subrequest allocated (the first
// subrequest 8, as resourceapi.FirstAvailableDeviceRequestMaxSize is 8).
func draScores(in *scoreInput, raw []int64) {
	var fixed int64 // the claims allocated before: the same on every node
	for _, claim := range in.r.allocated {
		fixed += firstAvailableScore(claim, claim.Status.Allocation)
	}
	for k := range in.fit {
		raw[k] = fixed
		if in.results[k] == nil {
			continue
		}
		for j, claim := range in.claims[k].claims {
			raw[k] += firstAvailableScore(claim, &in.results[k][j])
		}
	}
}

// firstAvailableScore is one claim's part of computeScore.
func firstAvailableScore(claim *resourceapi.ResourceClaim, a *resourceapi.AllocationResult) int64 {
	var score int64
	for _, req := range claim.Spec.Devices.Requests {
		for j, sub := range req.FirstAvailable {
			ref := req.Name + "/" + sub.Name
			if slices.ContainsFunc(a.Devices.Results, func(r resourceapi.DeviceRequestAllocationResult) bool { return r.Request == ref }) {
				score += int64(resourceapi.FirstAvailableDeviceRequestMaxSize - j)
			}
		}
	}
	return score
}

// hasFirstAvailable reports whether a claim has a request with firstAvailable, whose allocation
// DynamicResources scores.
func hasFirstAvailable(claims []*resourceapi.ResourceClaim) bool {
	for _, c := range claims {
		for _, r := range c.Spec.Devices.Requests {
			if len(r.FirstAvailable) > 0 {
				return true
			}
		}
	}
	return false
}
