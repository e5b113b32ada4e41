package pods

import (
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
)

// The Scheduler choice scores the nodes where a pod fits with the score plugins of a kube-scheduler
// profile (v1.37.2): which plugins, their weights and the arguments of NodeResourcesFit and
// NodeResourcesBalancedAllocation, as a KubeSchedulerConfiguration profile sets them. The zero
// ScoreProfile is the default profile (pkg/scheduler/apis/config/v1/default_plugins.go with the
// defaults of defaults.go): the weights of DefaultScoreWeights, NodeResourcesFit's LeastAllocated over
// cpu and memory, NodeResourcesBalancedAllocation over cpu and memory.

// ScorePlugin names one of kube-scheduler's score plugins as a KubeSchedulerConfiguration profile names
// it (plugins.score, plugins.multiPoint).
type ScorePlugin string

const (
	// ScoreTaintToleration is TaintToleration: nodes with fewer PreferNoSchedule taints the pod does not
	// tolerate score higher.
	ScoreTaintToleration ScorePlugin = "TaintToleration"
	// ScoreNodeAffinity is NodeAffinity: the weights of the pod's preferred node affinity terms the node
	// matches.
	ScoreNodeAffinity ScorePlugin = "NodeAffinity"
	// ScoreNodeResourcesFit is NodeResourcesFit with its scoring strategy ([ScoringStrategy]).
	ScoreNodeResourcesFit ScorePlugin = "NodeResourcesFit"
	// ScorePodTopologySpread is PodTopologySpread. It is not reproduced (see the package's Node choice):
	// it scores 0 on every node.
	ScorePodTopologySpread ScorePlugin = "PodTopologySpread"
	// ScoreInterPodAffinity is InterPodAffinity. It is not reproduced (see the package's Node choice): it
	// scores 0 on every node.
	ScoreInterPodAffinity ScorePlugin = "InterPodAffinity"
	// ScoreDynamicResources is DynamicResources: for each request with firstAvailable, the earlier the
	// subrequest allocated on the node, the higher.
	ScoreDynamicResources ScorePlugin = "DynamicResources"
	// ScoreBalancedAllocation is NodeResourcesBalancedAllocation: nodes whose resources the pod leaves
	// more evenly used score higher.
	ScoreBalancedAllocation ScorePlugin = "NodeResourcesBalancedAllocation"
	// ScoreImageLocality is ImageLocality: nodes that already hold the pod's images (status.images)
	// score higher.
	ScoreImageLocality ScorePlugin = "ImageLocality"
)

// DefaultScoreWeights are the score plugins of kube-scheduler's default profile with their weights, in
// the profile's order (getDefaultPlugins with DynamicResourceAllocation on).
func DefaultScoreWeights() []PluginWeight {
	return []PluginWeight{
		{ScoreTaintToleration, 3},
		{ScoreNodeAffinity, 2},
		{ScoreNodeResourcesFit, 1},
		{ScorePodTopologySpread, 2},
		{ScoreInterPodAffinity, 2},
		{ScoreDynamicResources, 2},
		{ScoreBalancedAllocation, 1},
		{ScoreImageLocality, 1},
	}
}

// PluginWeight is a score plugin with its weight.
type PluginWeight struct {
	Plugin ScorePlugin
	Weight int32
}

// ScoringStrategyType is NodeResourcesFitArgs' scoringStrategy.type.
type ScoringStrategyType string

const (
	// LeastAllocated favours the nodes with the most left of the resources after the pod:
	// (allocatable − requested) × 100 ÷ allocatable per resource, averaged by weight.
	LeastAllocated ScoringStrategyType = "LeastAllocated"
	// MostAllocated favours the nodes with the least left: requested × 100 ÷ allocatable per resource,
	// averaged by weight.
	MostAllocated ScoringStrategyType = "MostAllocated"
	// RequestedToCapacityRatio scores each resource's utilisation after the pod (0–100) on the broken
	// line of Shape, averaged by weight.
	RequestedToCapacityRatio ScoringStrategyType = "RequestedToCapacityRatio"
)

// ScoringStrategy is NodeResourcesFitArgs' scoringStrategy.
type ScoringStrategy struct {
	// Type is the strategy; "" is LeastAllocated.
	Type ScoringStrategyType
	// Resources are the resources scored with their weights (1 to 100, 0 meaning 1); none means cpu and
	// memory with weight 1, as kube-scheduler defaults them.
	Resources []ResourceWeight
	// Shape is requestedToCapacityRatio.shape, for RequestedToCapacityRatio only: points of
	// utilisation (0 to 100, increasing) and score (0 to 10).
	Shape []UtilizationShapePoint
}

// ResourceWeight is a resource with its weight (ResourceSpec of kube-scheduler's configuration).
type ResourceWeight struct {
	Name   v1.ResourceName
	Weight int64
}

// UtilizationShapePoint is one point of RequestedToCapacityRatio's shape.
type UtilizationShapePoint struct {
	Utilization int32
	Score       int32
}

// ScoreProfile configures the Scheduler choice as a KubeSchedulerConfiguration profile configures
// kube-scheduler's scoring. The zero value is the default profile.
type ScoreProfile struct {
	// Weights sets the weight of score plugins (plugins.score.enabled or multiPoint.enabled with a
	// weight); a plugin of the default profile not named keeps its default weight, and a weight of 0 is
	// 1, as kube-scheduler makes it. A plugin not of the default profile is an error: kube-scheduler has
	// no other score plugin that scores a pod on a node.
	Weights []PluginWeight
	// Disabled switches score plugins off (plugins.score.disabled); "*" switches off every plugin of the
	// default profile, leaving those named in Weights.
	Disabled []ScorePlugin
	// ScoringStrategy is NodeResourcesFit's; nil is LeastAllocated over cpu and memory.
	ScoringStrategy *ScoringStrategy
	// BalancedResources are NodeResourcesBalancedAllocationArgs' resources (their weights play no part
	// in the score); none means cpu and memory.
	BalancedResources []ResourceWeight
}

// profile is a ScoreProfile checked and defaulted: the plugins that score, in the default profile's
// order, with their weights.
type profile struct {
	plugins  []PluginWeight
	strategy ScoringStrategy
	balanced []ResourceWeight
}

// defaultResources is the resources kube-scheduler scores when none are configured (defaultResourceSpec).
var defaultResources = []ResourceWeight{{v1.ResourceCPU, 1}, {v1.ResourceMemory, 1}}

// maxResourceWeight is the largest weight of a resource (validateResources of kube-scheduler's
// ValidateNodeResourcesFitArgs).
const maxResourceWeight = 100

// compile checks the profile and fills in kube-scheduler's defaults (SetDefaults_NodeResourcesFitArgs,
// SetDefaults_NodeResourcesBalancedAllocationArgs, getValidScoreWeights), with the validation of
// ValidateNodeResourcesFitArgs.
func (sp *ScoreProfile) compile() (*profile, error) {
	bad := func(field string, format string, a ...any) error {
		return &allocator.InputError{Object: "Options.Profile", Field: field, Err: fmt.Errorf(format, a...)}
	}
	p := &profile{}
	all := DefaultScoreWeights()
	disableAll := slices.Contains(sp.Disabled, "*")
	for i, d := range sp.Disabled {
		if d != "*" && !slices.ContainsFunc(all, func(w PluginWeight) bool { return w.Plugin == d }) {
			return nil, bad(fmt.Sprintf("disabled[%d]", i), "unknown score plugin %q", d)
		}
	}
	for i, w := range sp.Weights {
		if !slices.ContainsFunc(all, func(d PluginWeight) bool { return d.Plugin == w.Plugin }) {
			return nil, bad(fmt.Sprintf("weights[%d].plugin", i), "unknown score plugin %q", w.Plugin)
		}
		if w.Weight < 0 {
			return nil, bad(fmt.Sprintf("weights[%d].weight", i), "must not be negative, got %d", w.Weight)
		}
	}
	for _, d := range all {
		set := slices.IndexFunc(sp.Weights, func(w PluginWeight) bool { return w.Plugin == d.Plugin })
		switch {
		case set >= 0:
			if w := sp.Weights[set].Weight; w > 0 {
				d.Weight = w
			} else {
				d.Weight = 1 // getValidScoreWeights: a weight of zero is 1
			}
		case disableAll || slices.Contains(sp.Disabled, d.Plugin):
			continue
		}
		p.plugins = append(p.plugins, d)
	}
	if sp.ScoringStrategy != nil {
		p.strategy = *sp.ScoringStrategy
	}
	if p.strategy.Type == "" {
		p.strategy.Type = LeastAllocated
	}
	var err error
	if p.strategy.Resources, err = resourceWeights(sp.scoringResources(), "scoringStrategy.resources", bad); err != nil {
		return nil, err
	}
	if p.balanced, err = resourceWeights(sp.BalancedResources, "balancedResources", bad); err != nil {
		return nil, err
	}
	switch p.strategy.Type {
	case LeastAllocated, MostAllocated:
	case RequestedToCapacityRatio:
		shape := p.strategy.Shape
		if len(shape) == 0 {
			return nil, bad("scoringStrategy.shape", "must not be empty for %s", RequestedToCapacityRatio)
		}
		for i, pt := range shape {
			if pt.Utilization < 0 || pt.Utilization > 100 {
				return nil, bad(fmt.Sprintf("scoringStrategy.shape[%d].utilization", i), "must be in the range 0 to 100, got %d", pt.Utilization)
			}
			if i > 0 && pt.Utilization <= shape[i-1].Utilization {
				return nil, bad(fmt.Sprintf("scoringStrategy.shape[%d].utilization", i), "must be greater than the previous point's")
			}
			if pt.Score < 0 || pt.Score > 10 {
				return nil, bad(fmt.Sprintf("scoringStrategy.shape[%d].score", i), "must be in the range 0 to 10, got %d", pt.Score)
			}
		}
	default:
		return nil, bad("scoringStrategy.type", "unknown scoring strategy %q", p.strategy.Type)
	}
	return p, nil
}

func (sp *ScoreProfile) scoringResources() []ResourceWeight {
	if sp.ScoringStrategy == nil {
		return nil
	}
	return sp.ScoringStrategy.Resources
}

var errEmpty = errors.New("must not be empty")

// resourceWeights is the resources with kube-scheduler's defaults: none is cpu and memory, a weight of
// 0 is 1.
func resourceWeights(in []ResourceWeight, field string, bad func(string, string, ...any) error) ([]ResourceWeight, error) {
	if len(in) == 0 {
		return defaultResources, nil
	}
	out := make([]ResourceWeight, len(in))
	for i, r := range in {
		if r.Name == "" {
			return nil, bad(fmt.Sprintf("%s[%d].name", field, i), "%w", errEmpty)
		}
		if r.Weight < 0 || r.Weight > maxResourceWeight {
			return nil, bad(fmt.Sprintf("%s[%d].weight", field, i), "must be in the range 0 to %d, got %d", maxResourceWeight, r.Weight)
		}
		if r.Weight == 0 {
			r.Weight = 1
		}
		out[i] = r
	}
	return out, nil
}
