package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/fuzz"
)

// generatedScenarios is how many clusters TestGeneratedScenarios draws: each takes a few seconds of a
// busy machine (a pod left pending is awaited for unschedulableFor). DRALLOC_SCHEDULER_SCENARIOS changes it.
const generatedScenarios = 12

// generatedOptions are fuzz.AllOptions but for binding conditions: no driver here would ever complete them,
// and the scheduler would wait for them in PreBind for its binding timeout (CELErrors is off in AllOptions:
// upstream makes such an error the scheduling attempt's, not the node's).
func generatedOptions() fuzz.Options {
	opts := fuzz.AllOptions()
	opts.BindingConditions = false
	opts.MaxNodes = 3
	return opts
}

// fromCluster turns a generated cluster into a scenario: its nodes (with room for pods), slices, classes,
// taint rules and allocated claims as they are; each pending claim becomes, drawn from seed, a template or
// a claim of its own; the pods are two that use every pending claim (a claim of its own is then shared
// by both, a template gives each pod a claim), then one pod per pending claim.
func fromCluster(cl *fuzz.Cluster, seed int) *scenario {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	sc := &scenario{name: fmt.Sprintf("seed %d", seed), slices: cl.Slices, classes: cl.Classes, rules: cl.TaintRules}
	for _, n := range cl.Nodes {
		n = n.DeepCopy()
		alloc := v1.ResourceList{
			v1.ResourcePods:   resource.MustParse("110"),
			v1.ResourceCPU:    resource.MustParse("8"),
			v1.ResourceMemory: resource.MustParse("16Gi"),
		}
		n.Status.Capacity = alloc.DeepCopy()
		n.Status.Allocatable = alloc
		sc.nodes = append(sc.nodes, n)
	}
	for _, c := range cl.Allocated {
		c = c.DeepCopy()
		c.UID, c.Namespace = "", ""
		sc.claims = append(sc.claims, c)
	}
	var entries []string
	for _, c := range cl.Claims {
		if r.IntN(2) == 0 {
			t := &resourceapi.ResourceClaimTemplate{}
			t.Name = c.Name
			t.Spec.Spec = *c.Spec.DeepCopy()
			sc.templates = append(sc.templates, t)
			entries = append(entries, c.Name+"=template:"+c.Name)
		} else {
			c = c.DeepCopy()
			c.UID, c.Namespace = "", ""
			c.Status = resourceapi.ResourceClaimStatus{}
			sc.claims = append(sc.claims, c)
			entries = append(entries, c.Name+"=claim:"+c.Name)
		}
	}
	if len(entries) == 0 {
		return sc
	}
	sc.pods = []*v1.Pod{pod("all-0", entries...), pod("all-1", entries...)}
	for i, e := range entries {
		sc.pods = append(sc.pods, pod(fmt.Sprintf("one-%d", i), e))
	}
	return sc
}

// TestGeneratedScenarios compares dralloc with kube-scheduler on clusters drawn by fuzz.ClusterGen, with
// pods made from their pending claims, pod by pod. The clusters are drawn from fixed seeds (no shrinking:
// each try would cost seconds of a control plane); a failure names its seed.
func TestGeneratedScenarios(t *testing.T) {
	c := client(t)
	n := generatedScenarios
	if s := os.Getenv("DRALLOC_SCHEDULER_SCENARIOS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > 10000 {
			t.Fatalf("DRALLOC_SCHEDULER_SCENARIOS=%q: want a count from 0 to 10000", s)
		}
		n = v
	}
	gen := fuzz.ClusterGen(generatedOptions())
	tl := newTally()
	for seed := range n {
		sc := fromCluster(gen.Example(seed), seed)
		t.Run(sc.name, func(t *testing.T) { runScenario(t, c, sc, tl) })
	}
	t.Logf("%d generated scenarios against kube-scheduler:\n%s", n, tl.summary())
}
