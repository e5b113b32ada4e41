package pods_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
	"github.com/dralloc/dralloc/fuzz/upstream/reference"
)

// searchTimeout bounds upstream's search on one node; a node where it runs out is not compared.
const searchTimeout = 2 * time.Second

// placeConfigs are the generator options the placement is compared under, with every gate on (so that
// upstream uses its deterministic allocator variant and FirstFit results can be compared exactly).
func placeConfigs() map[string]fuzz.Options {
	return map[string]fuzz.Options{
		"plain":              {MaxDevices: 6, MaxClaims: 3, MaxRequests: 3},
		"pools":              {MultiSlicePools: true, IncompletePools: true, NetworkAttached: true, PerDeviceNodeSelection: true},
		"partitionable":      {Partitionable: true, Allocated: true, Constraints: true},
		"consumableCapacity": {NetworkAttached: true, ConsumableCapacity: true, Allocated: true, MaxClaims: 3},
		"taints":             {Taints: true, Allocated: true},
		"firstAvailable":     {FirstAvailable: true, Constraints: true, MaxRequests: 3},
		"allMode":            {AllMode: true, NetworkAttached: true, Allocated: true},
		"adminAccess":        {AdminAccess: true, Allocated: true},
	}
}

type verdict string

const (
	fits       verdict = "fits"
	doesNotFit verdict = "does not fit"
	fatal      verdict = "fatal error"
	gaveUp     verdict = "gave up"
)

type nodeAnswer struct {
	verdict verdict
	results []resourceapi.AllocationResult
	err     error
}

// upstreamOnNode runs upstream's allocator for the claims on one node, over the allocated state and
// the slices (with DeviceTaintRules applied) as kube-scheduler hands them to it.
func upstreamOnNode(ctx context.Context, c *fuzz.Cluster, node *v1.Node, claims []*resourceapi.ResourceClaim) nodeAnswer {
	features := reference.Features(c.Gates())
	cache := cel.NewCache(100, cel.Features{EnableConsumableCapacity: features.ConsumableCapacity, EnableListTypeAttributes: features.ListTypeAttributes})
	a, err := structured.NewAllocator(ctx, features, reference.AllocatedState(c.Allocated, true), reference.Classes(c.Classes), reference.TaintedSlices(c.Slices, c.TaintRules), cache)
	if err != nil {
		return nodeAnswer{verdict: fatal, err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, searchTimeout)
	defer cancel()
	results, err := a.Allocate(ctx, node, claims)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nodeAnswer{verdict: gaveUp, err: err}
	case errors.Is(err, structured.ErrFailedAllocationOnNode):
		return nodeAnswer{verdict: doesNotFit, err: err}
	case err != nil:
		return nodeAnswer{verdict: fatal, err: err}
	case results == nil:
		return nodeAnswer{verdict: doesNotFit}
	}
	return nodeAnswer{verdict: fits, results: results}
}

// placeTally counts compared pods by what upstream says.
type placeTally struct {
	mu                                     sync.Mutex
	placed, pending, skipped, disagreement int
	nodes                                  int
}

// TestPlaceAgreesWithUpstreamNodeByNode: pods whose spec.resourceClaims name the generated pending
// claims (all in one pod, or split among several placed and assumed one after the other) are placed
// by pods.Cluster (FirstFit, built-in predicates off: the nodes differ only in their devices). Upstream's allocator is run on every node in order of name: the pod must go to the first
// node where it fits, with the very devices upstream picks there (share IDs aside), and must fit
// nowhere when upstream fits it on no node. Cases where upstream has a fatal error or gives up on a
// node before the first fit are counted as skipped.
func TestPlaceAgreesWithUpstreamNodeByNode(t *testing.T) {
	names := make([]string, 0)
	for n := range placeConfigs() {
		names = append(names, n)
	}
	sort.Strings(names)
	total := &placeTally{}
	for _, name := range names {
		opts := placeConfigs()[name]
		opts.MaxNodes = max(opts.MaxNodes, 4)
		t.Run(name, func(t *testing.T) {
			tl := &placeTally{}
			rapid.Check(t, func(rt *rapid.T) {
				c := fuzz.ClusterGen(opts).Draw(rt, "cluster")
				all := verify.AllFeatures()
				c.Features = &all
				comparePlacement(rt, c, tl)
			})
			t.Logf("%-20s %4d pods placed, %4d pending, %3d skipped, %d nodes compared; %d disagreements", name, tl.placed, tl.pending, tl.skipped, tl.nodes, tl.disagreement)
			total.mu.Lock()
			total.placed += tl.placed
			total.pending += tl.pending
			total.skipped += tl.skipped
			total.nodes += tl.nodes
			total.disagreement += tl.disagreement
			total.mu.Unlock()
		})
	}
	t.Logf("all: %d pods placed, %d pending, %d skipped, %d nodes compared; %d disagreements", total.placed, total.pending, total.skipped, total.nodes, total.disagreement)
}

func comparePlacement(rt *rapid.T, c *fuzz.Cluster, tl *placeTally) {
	ctx := context.Background()
	snap, err := c.Snapshot(allocator.Options{})
	if err != nil {
		rt.Fatalf("snapshot: %v", err)
	}
	for _, claim := range c.Claims {
		if err := snap.AddOrUpdateClaim(claim); err != nil {
			rt.Fatalf("add claim: %v", err)
		}
	}
	cl := pods.New(snap, pods.Options{NoBuiltinPredicates: true, Workers: 2})
	nodes := slices.Clone(c.Nodes)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })

	// The claims go to one pod or are split among several, placed one after the other: each pod that
	// fits is assumed, and upstream sees its claims in the allocated state of the next.
	npods := rapid.IntRange(1, max(1, len(c.Claims))).Draw(rt, "pods")
	state := *c
	state.Allocated = slices.Clone(c.Allocated)
	for p := range npods {
		lo, hi := p*len(c.Claims)/npods, (p+1)*len(c.Claims)/npods
		claims := c.Claims[lo:hi]
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fuzz.Namespace, Name: fmt.Sprintf("pod-%d", p), UID: types.UID(fmt.Sprintf("uid-pod-%d", p))}}
		pod.Spec.Containers = []v1.Container{{Name: "main"}}
		for i, claim := range claims {
			pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: fmt.Sprintf("claim-%d", i), ResourceClaimName: ptr.To(claim.Name)})
		}
		placement, ok := comparePod(rt, ctx, cl, &state, nodes, pod, claims, tl)
		if !ok {
			return
		}
		if placement == nil {
			continue
		}
		if err := cl.Assume(placement); err != nil {
			rt.Fatalf("assume: %v", err)
		}
		for _, pc := range placement.Claims {
			state.Allocated = append(state.Allocated, pc.Claim)
		}
	}
}

// comparePod places one pod and compares; ok is false when the case cannot be compared further.
func comparePod(rt *rapid.T, ctx context.Context, cl *pods.Cluster, c *fuzz.Cluster, nodes []*v1.Node, pod *v1.Pod, claims []*resourceapi.ResourceClaim, tl *placeTally) (*pods.Placement, bool) {
	placement, placeErr := cl.Place(ctx, pod)
	var first *v1.Node
	var want nodeAnswer
	for _, n := range nodes {
		a := upstreamOnNode(ctx, c, n, claims)
		tl.mu.Lock()
		tl.nodes++
		tl.mu.Unlock()
		if a.verdict == fatal || a.verdict == gaveUp {
			tl.mu.Lock()
			tl.skipped++
			tl.mu.Unlock()
			return nil, false
		}
		if a.verdict == fits {
			first, want = n, a
			break
		}
	}
	disagree := func(format string, args ...any) {
		tl.mu.Lock()
		tl.disagreement++
		tl.mu.Unlock()
		y, _ := yaml.Marshal(c)
		rt.Errorf("%s: %s\ncluster:\n%s", pod.Name, fmt.Sprintf(format, args...), y)
	}
	if first == nil {
		tl.mu.Lock()
		tl.pending++
		tl.mu.Unlock()
		if !errors.Is(placeErr, pods.ErrNoNode) {
			disagree("upstream fits the claims on no node; pods.Cluster: placement %v, error %v", placementNode(placement), placeErr)
			return nil, false
		}
		return nil, true
	}
	tl.mu.Lock()
	tl.placed++
	tl.mu.Unlock()
	if placeErr != nil {
		disagree("upstream fits the claims on %s first; pods.Cluster: %v", first.Name, placeErr)
		return nil, false
	}
	if placement.Node != first.Name {
		disagree("upstream fits the claims on %s first; pods.Cluster places the pod on %s", first.Name, placement.Node)
		return nil, false
	}
	var got []resourceapi.AllocationResult
	for _, pc := range placement.Claims {
		got = append(got, *pc.Claim.Status.Allocation)
		if !pc.Allocated {
			disagree("claim %s was pending and is not allocated by the placement", pc.Claim.Name)
		}
		want := resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID}
		if !slices.Contains(pc.Claim.Status.ReservedFor, want) {
			disagree("claim %s: reservedFor %v, want the pod", pc.Claim.Name, pc.Claim.Status.ReservedFor)
		}
	}
	if a, b := reference.Normalized(want.results), reference.Normalized(got); !equality.Semantic.DeepEqual(a, b) {
		disagree("on %s the devices differ:\nupstream: %s\npods.Cluster: %s", first.Name, dump(a), dump(b))
		return nil, false
	}
	return placement, true
}

func placementNode(p *pods.Placement) string {
	if p == nil {
		return "none"
	}
	return p.Node
}

func dump(v any) string {
	y, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(y))
}
