package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// generatedScenarios is how many clusters TestGeneratedScenarios draws: each takes a few seconds of a
// busy machine (a pod left pending is awaited for unschedulableFor). DRALLOC_SCHEDULER_SCENARIOS changes it.
const generatedScenarios = 12

// generatedOptions are the generator's options for a seed. Even seeds draw every feature but binding
// conditions: no driver here would ever complete them, and the scheduler would wait for them in PreBind for
// its binding timeout (CELErrors is off in AllOptions: upstream makes such an error the scheduling
// attempt's, not the node's). With every feature most pods fit nowhere or fail (an incomplete pool fails
// a request for all devices), so odd seeds leave out incomplete pools, allocationMode All and the rarer
// features, and more of their pods are placed.
func generatedOptions(seed int) fuzz.Options {
	var opts fuzz.Options
	if seed%2 == 0 {
		opts = fuzz.AllOptions()
		opts.BindingConditions = false
	} else {
		opts = fuzz.Options{NetworkAttached: true, Partitionable: true, MIG: true, ConsumableCapacity: true, Taints: true,
			FirstAvailable: true, Constraints: true, AdminAccess: true, Config: true, Allocated: true}
	}
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

// generated draws n scenarios from seeds 0, 1, …. Most generated pods fit nowhere, so every other
// scenario is one where dralloc places at least one pod (seeds where it places none are skipped, at most
// 50 per scenario); the others are taken as drawn, so that pods only kube-scheduler places are met too.
func generated(n int) []*scenario {
	var out []*scenario
	seed, skipped := 0, 0
	for len(out) < n {
		sc := fromCluster(fuzz.ClusterGen(generatedOptions(seed)).Example(seed), seed)
		seed++
		if len(out)%2 == 1 && skipped < 50 && !placesSome(sc) {
			skipped++
			continue
		}
		skipped = 0
		out = append(out, sc)
	}
	return out
}

// placesSome reports whether dralloc places at least one of the scenario's pods, pod after pod.
func placesSome(sc *scenario) bool {
	const ns = "probe"
	snap := allocator.NewSnapshot(allocator.Options{Features: ptrTo(verify.AllFeatures())})
	cl := pods.New(snap, pods.Options{})
	var errs []error
	for _, x := range sc.nodes {
		errs = append(errs, snap.AddOrUpdateNode(x))
	}
	for _, x := range sc.classes {
		errs = append(errs, snap.AddOrUpdateClass(x))
	}
	for _, x := range sc.slices {
		errs = append(errs, snap.AddOrUpdateSlice(x))
	}
	for _, x := range sc.rules {
		errs = append(errs, snap.AddOrUpdateTaintRule(x))
	}
	for _, x := range sc.templates {
		x = x.DeepCopy()
		x.Namespace = ns
		errs = append(errs, cl.AddOrUpdateTemplate(x))
	}
	for _, x := range sc.claims {
		x = x.DeepCopy()
		x.Namespace = ns
		errs = append(errs, snap.AddOrUpdateClaim(x))
	}
	if errors.Join(errs...) != nil {
		return false
	}
	for i, p := range sc.pods {
		p = p.DeepCopy()
		p.Namespace, p.UID = ns, types.UID(fmt.Sprintf("probe-%d", i))
		if _, err := cl.Place(context.Background(), p); err == nil {
			return true
		}
	}
	return false
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
	tl := newTally()
	for _, sc := range generated(n) {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, c, sc, tl) })
	}
	t.Logf("%d generated scenarios against kube-scheduler:\n%s", n, tl.summary())
}
