package pods_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// smallNode is a node allocating 4 CPUs and 8Gi of memory: scores come out in round numbers.
func smallNode(name string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Allocatable = v1.ResourceList{
		v1.ResourcePods:   resource.MustParse("110"),
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("8Gi"),
	}
	return n
}

// requesting returns the pod with its container requesting cpu and memory ("" for none).
func requesting(p *v1.Pod, cpu, mem string) *v1.Pod {
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[v1.ResourceMemory] = resource.MustParse(mem)
	}
	p.Spec.Containers[0].Resources.Requests = req
	return p
}

// boundTo returns the pod bound to the node.
func boundTo(p *v1.Pod, node string) *v1.Pod {
	p.Spec.NodeName = node
	return p
}

// scoreLine prints a placement's scores: "node total plugin=score …" per node, then the best nodes.
func scoreLine(p *pods.Placement) string {
	var b strings.Builder
	for _, s := range p.Scores {
		fmt.Fprintf(&b, "%s %d", s.Node, s.Total)
		for _, ps := range s.Plugins {
			if ps.Score != 0 {
				fmt.Fprintf(&b, " %s=%d", ps.Plugin, ps.Score)
			}
		}
		b.WriteString("; ")
	}
	fmt.Fprintf(&b, "best %v", p.Best)
	return b.String()
}

func TestSchedulerChoiceScores(t *testing.T) {
	// Node a holds a pod requesting 2 CPUs and 2Gi; b is empty. The pod asks 1 CPU and 1Gi.
	// NodeResourcesFit, LeastAllocated: a: cpu (4000−3000)×100/4000 = 25, memory (8−3)×100/8 = 62,
	// (25+62)/2 = 43; b: 75 and 87, 81.
	// MostAllocated: a: 75 and 37, 56; b: 25 and 12, 18.
	// RequestedToCapacityRatio on the shape (0,0)–(100,10): the utilisation itself: a: 75 and 37,
	// round(56) = 56; b: 25 and 12, round(18.5) = 19.
	// BalancedAllocation: a: shares with the pod 0.75 and 0.375, balance (1−0.1875)×100 = 81; without,
	// 0.5 and 0.25, 87: 50 + (50+81−87)/2 = 72. b: with, 0.25 and 0.125, 93; without 100:
	// 50 + (50+93−100)/2 = 71.
	// TaintToleration: no taints anywhere: 100 on both, × 3.
	for _, tc := range []struct {
		name     string
		strategy *pods.ScoringStrategy
		want     string
	}{
		{"LeastAllocated (the default) prefers the emptier node", nil,
			"b 452 TaintToleration=300 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; a 415 TaintToleration=300 NodeResourcesFit=43 NodeResourcesBalancedAllocation=72; best [b]"},
		{"MostAllocated prefers the fuller node", &pods.ScoringStrategy{Type: pods.MostAllocated},
			"a 428 TaintToleration=300 NodeResourcesFit=56 NodeResourcesBalancedAllocation=72; b 389 TaintToleration=300 NodeResourcesFit=18 NodeResourcesBalancedAllocation=71; best [a]"},
		{"RequestedToCapacityRatio rounds the weighted mean", &pods.ScoringStrategy{Type: pods.RequestedToCapacityRatio,
			Shape: []pods.UtilizationShapePoint{{Utilization: 0, Score: 0}, {Utilization: 100, Score: 10}}},
			"a 428 TaintToleration=300 NodeResourcesFit=56 NodeResourcesBalancedAllocation=72; b 390 TaintToleration=300 NodeResourcesFit=19 NodeResourcesBalancedAllocation=71; best [a]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(t, pods.Options{Choice: pods.Scheduler, Profile: &pods.ScoreProfile{ScoringStrategy: tc.strategy}}, 0, smallNode("a"), smallNode("b"))
			must(t, c.AddOrUpdatePod(boundTo(requesting(pod("old"), "2", "2Gi"), "a")))
			p, err := c.Place(context.Background(), requesting(pod("new"), "1", "1Gi"))
			must(t, err)
			if got := scoreLine(p); got != tc.want {
				t.Errorf("scores:\n got %s\nwant %s", got, tc.want)
			}
			if p.Node != p.Best[0] {
				t.Errorf("node %s, want the first of the best, %s", p.Node, p.Best[0])
			}
		})
	}
}

func TestSchedulerChoiceCountsMissingRequestsAtTheDefaults(t *testing.T) {
	// A pod without requests on a counts 100m of cpu and 200Mi of memory for NodeResourcesFit (NodeInfo's
	// NonZeroRequested), none for BalancedAllocation. a: cpu (4000−1100)×100/4000 = 72, memory
	// (8192−1224)×100/8192 = 85, (72+85)/2 = 78; b: 81. Both 71 for balance. Counting the pod at nothing
	// would tie them.
	c := cluster(t, pods.Options{Choice: pods.Scheduler}, 0, smallNode("a"), smallNode("b"))
	must(t, c.AddOrUpdatePod(boundTo(pod("old"), "a")))
	p, err := c.Place(context.Background(), requesting(pod("new"), "1", "1Gi"))
	must(t, err)
	want := "b 452 TaintToleration=300 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; a 449 TaintToleration=300 NodeResourcesFit=78 NodeResourcesBalancedAllocation=71; best [b]"
	if got := scoreLine(p); got != want {
		t.Errorf("scores:\n got %s\nwant %s", got, want)
	}
}

// threeNodes: a has an untolerated PreferNoSchedule taint, b the label zone=x, c the image
// registry.example/app:v1 of 500Mi.
func threeNodes() []*v1.Node {
	a, b, c := smallNode("a"), smallNode("b"), smallNode("c")
	a.Spec.Taints = []v1.Taint{{Key: "spot", Value: "true", Effect: v1.TaintEffectPreferNoSchedule}}
	b.Labels = map[string]string{"zone": "x"}
	c.Status.Images = []v1.ContainerImage{{Names: []string{"registry.example/app:v1"}, SizeBytes: 500 * 1024 * 1024}}
	return []*v1.Node{a, b, c}
}

func TestSchedulerChoiceNodePreferences(t *testing.T) {
	// Every node is empty and alike for the resources: NodeResourcesFit 81 and BalancedAllocation 71
	// everywhere (152). TaintToleration: a has 1 untolerated taint, the others 0: normalised reversed,
	// a 0, b and c 100, × 3. NodeAffinity (a preference for zone=x of weight 10): b 10, normalised 100,
	// × 2. ImageLocality: c holds the image, 1 node of 3: 524288000/3 = 174762666 bytes, clamped
	// between 23Mi and 1000Mi: 100 × (174762666 − 24117248) / (1048576000 − 24117248) = 14.
	preferX := func(p *v1.Pod) *v1.Pod {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
			Weight: 10, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"x"}}}},
		}}}}
		return p
	}
	withImage := func(p *v1.Pod) *v1.Pod {
		p.Spec.Containers[0].Image = "registry.example/app:v1"
		return p
	}
	tolerating := func(p *v1.Pod) *v1.Pod {
		p.Spec.Tolerations = []v1.Toleration{{Key: "spot", Operator: v1.TolerationOpExists}}
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		profile *pods.ScoreProfile
		want    string
	}{
		{"ties are all best, the first by name placed", requesting(pod("p"), "1", "1Gi"), nil,
			"b 452 TaintToleration=300 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; c 452 TaintToleration=300 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; a 152 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; best [b c]"},
		{"a toleration with an empty effect tolerates PreferNoSchedule", tolerating(requesting(pod("p"), "1", "1Gi")), nil,
			"a 452 TaintToleration=300 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; b 452 TaintToleration=300 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; c 452 TaintToleration=300 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; best [a b c]"},
		{"preferred node affinity", preferX(requesting(pod("p"), "1", "1Gi")), nil,
			"b 652 TaintToleration=300 NodeAffinity=200 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; c 452 TaintToleration=300 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; a 152 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; best [b]"},
		{"image locality", withImage(requesting(pod("p"), "1", "1Gi")), nil,
			"c 466 TaintToleration=300 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71 ImageLocality=14; b 452 TaintToleration=300 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; a 152 NodeResourcesFit=81 NodeResourcesBalancedAllocation=71; best [c]"},
		{"weights and disabled plugins as a profile sets them", preferX(withImage(requesting(pod("p"), "1", "1Gi"))),
			&pods.ScoreProfile{Disabled: []pods.ScorePlugin{"*"}, Weights: []pods.PluginWeight{{Plugin: pods.ScoreImageLocality, Weight: 20}}},
			"c 280 ImageLocality=280; a 0; b 0; best [c]"},
		{"a weight of 0 is 1", withImage(requesting(pod("p"), "1", "1Gi")),
			&pods.ScoreProfile{Disabled: []pods.ScorePlugin{pods.ScoreTaintToleration, pods.ScoreNodeResourcesFit, pods.ScoreBalancedAllocation}, Weights: []pods.PluginWeight{{Plugin: pods.ScoreImageLocality}}},
			"c 14 ImageLocality=14; a 0; b 0; best [c]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(t, pods.Options{Choice: pods.Scheduler, Profile: tc.profile}, 0, threeNodes()...)
			p, err := c.Place(context.Background(), tc.pod)
			must(t, err)
			if got := scoreLine(p); got != tc.want {
				t.Errorf("scores:\n got %s\nwant %s", got, tc.want)
			}
			if p.Node != p.Best[0] {
				t.Errorf("node %s, want %s", p.Node, p.Best[0])
			}
		})
	}
}

func TestSchedulerChoiceFirstAvailable(t *testing.T) {
	// Node big has a device of size big, node small one of size small; the claim asks first for big,
	// then small. DynamicResources: big's allocation takes the first subrequest (8), small's the
	// second (7): normalised 100 and 87, × 2. The pod requests no cpu or memory: NodeResourcesFit counts
	// the defaults, alike on both nodes: cpu (4000−100)×100/4000 = 97, memory (8192−200)×100/8192 = 97,
	// 97; BalancedAllocation skips a best-effort pod.
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, name := range []string{"big", "small"} {
		must(t, snap.AddOrUpdateNode(smallNode(name)))
		s := gpus(name, 1)
		s.Spec.Devices[0].Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"size": {StringValue: ptr(name)}}
		must(t, snap.AddOrUpdateSlice(s))
	}
	must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	c := pods.New(snap, pods.Options{Choice: pods.Scheduler, NameSuffix: fixedSuffixes()})
	sub := func(size string) resourceapi.DeviceSubRequest {
		return resourceapi.DeviceSubRequest{Name: size, DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["` + driver + `"].size == "` + size + `"`}}}}
	}
	cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gpu"}}
	cl.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpu", FirstAvailable: []resourceapi.DeviceSubRequest{sub("big"), sub("small")}}}
	must(t, snap.AddOrUpdateClaim(cl))
	p, err := c.Place(context.Background(), pod("p", "gpu=claim:gpu"))
	must(t, err)
	want := "big 597 TaintToleration=300 NodeResourcesFit=97 DynamicResources=200; small 571 TaintToleration=300 NodeResourcesFit=97 DynamicResources=174; best [big]"
	if got := scoreLine(p); got != want {
		t.Errorf("scores:\n got %s\nwant %s", got, want)
	}
	if got := p.Claims[0].Claim.Status.Allocation.Devices.Results[0].Request; got != "gpu/big" {
		t.Errorf("allocated subrequest %s, want gpu/big", got)
	}
}

func TestSchedulerChoiceInvalidProfile(t *testing.T) {
	for _, tc := range []struct {
		profile *pods.ScoreProfile
		field   string
	}{
		{&pods.ScoreProfile{Weights: []pods.PluginWeight{{Plugin: "NodeResourcesFitt", Weight: 1}}}, "weights[0].plugin"},
		{&pods.ScoreProfile{Weights: []pods.PluginWeight{{Plugin: pods.ScoreNodeAffinity, Weight: -1}}}, "weights[0].weight"},
		{&pods.ScoreProfile{Disabled: []pods.ScorePlugin{"VolumeBinding"}}, "disabled[0]"},
		{&pods.ScoreProfile{ScoringStrategy: &pods.ScoringStrategy{Type: "Packed"}}, "scoringStrategy.type"},
		{&pods.ScoreProfile{ScoringStrategy: &pods.ScoringStrategy{Type: pods.RequestedToCapacityRatio}}, "scoringStrategy.shape"},
		{&pods.ScoreProfile{ScoringStrategy: &pods.ScoringStrategy{Type: pods.RequestedToCapacityRatio,
			Shape: []pods.UtilizationShapePoint{{Utilization: 50, Score: 1}, {Utilization: 50, Score: 2}}}}, "scoringStrategy.shape[1].utilization"},
		{&pods.ScoreProfile{ScoringStrategy: &pods.ScoringStrategy{Resources: []pods.ResourceWeight{{Name: v1.ResourceCPU, Weight: 101}}}}, "scoringStrategy.resources[0].weight"},
		{&pods.ScoreProfile{BalancedResources: []pods.ResourceWeight{{Weight: 1}}}, "balancedResources[0].name"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := cluster(t, pods.Options{Choice: pods.Scheduler, Profile: tc.profile}, 0, smallNode("a"))
			_, err := c.Place(context.Background(), pod("p"))
			var ie *allocator.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || ie.Object != "Options.Profile" {
				t.Fatalf("error %v, want an InputError of Options.Profile at %s", err, tc.field)
			}
		})
	}
}

func TestSchedulerChoiceOnlyUnderScheduler(t *testing.T) {
	// The other choices leave Best and Scores empty, and ignore the profile.
	for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit, pods.Spread} {
		c := cluster(t, pods.Options{Choice: choice, Profile: &pods.ScoreProfile{Disabled: []pods.ScorePlugin{"NoSuchPlugin"}}}, 0, smallNode("a"), smallNode("b"))
		p, err := c.Place(context.Background(), pod("p"))
		must(t, err)
		if p.Best != nil || p.Scores != nil {
			t.Errorf("%s: best %v, scores %v; want none", choice, p.Best, p.Scores)
		}
	}
}

func ExampleScoreProfile() {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, name := range []string{"a", "b"} {
		_ = snap.AddOrUpdateNode(smallNode(name))
	}
	// Bin-packing, as a KubeSchedulerConfiguration profile with NodeResourcesFit's MostAllocated.
	c := pods.New(snap, pods.Options{Choice: pods.Scheduler, Profile: &pods.ScoreProfile{
		ScoringStrategy: &pods.ScoringStrategy{Type: pods.MostAllocated},
	}})
	_ = c.AddOrUpdatePod(boundTo(requesting(pod("web-0"), "2", "2Gi"), "a"))
	p, _ := c.Place(context.Background(), requesting(pod("web-1"), "1", "1Gi"))
	for _, s := range p.Scores {
		fmt.Println(s.Node, s.Total)
	}
	fmt.Println("kube-scheduler binds to one of", p.Best)
	// Output:
	// a 428
	// b 389
	// kube-scheduler binds to one of [a]
}

func ExampleCluster_Place_scheduler() {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, name := range []string{"a", "b", "c"} {
		_ = snap.AddOrUpdateNode(smallNode(name))
	}
	c := pods.New(snap, pods.Options{Choice: pods.Scheduler})
	_ = c.AddOrUpdatePod(boundTo(requesting(pod("old"), "2", "2Gi"), "a"))
	p, _ := c.Place(context.Background(), requesting(pod("new"), "1", "1Gi"))
	// b and c score alike: kube-scheduler takes either, at random; Node is the first by name.
	best := slices.Clone(p.Best)
	fmt.Println(p.Node, best, len(p.Scores))
	// Output: b [b c] 3
}
