package pods_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

const ns = "ns"

// claimCase is a generated pod with its PodGroup, claims and template.
type claimCase struct {
	Pod    *v1.Pod
	Group  *schedulingv1beta1.PodGroup // nil: the pod is in no group
	Claims []*resourceapi.ResourceClaim
}

// The objects a generated claim can belong to: the pod, another pod, the pod's PodGroup. UIDs are
// those of the objects, as the API server keeps them unique.
var (
	podRef   = metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "uid-p"}
	otherRef = metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "q", UID: "uid-q"}
	// The PodGroup as an owner reference names it: scheduling.k8s.io/v1beta1, as the resourceclaim
	// controller of Kubernetes 1.37 writes it, or the alpha version v1alpha3.
	groupRefs = []metav1.OwnerReference{
		{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup", Name: "g", UID: "uid-g"},
		{APIVersion: "scheduling.k8s.io/v1alpha3", Kind: "PodGroup", Name: "g", UID: "uid-g"},
	}
	consumers = []resourceapi.ResourceClaimConsumerReference{
		{Resource: "pods", Name: "p", UID: "uid-p"},
		{Resource: "pods", Name: "q", UID: "uid-q"},
		{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: "g", UID: "uid-g"},
	}
	entryNames = []string{"a", "b", "c"}
)

const nClaims = 5 // claim-0 … claim-4; claim-5 is named but never exists

func claimSpec() resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name:    "gpu",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
	}}}}
}

func drawClaimCase(t *rapid.T) *claimCase {
	cc := &claimCase{}
	for i := range nClaims {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("claim-%d", i)}, Spec: claimSpec()}
		switch rapid.IntRange(0, 5).Draw(t, "owner") {
		case 1:
			c.OwnerReferences = []metav1.OwnerReference{withController(podRef, true)}
		case 2:
			c.OwnerReferences = []metav1.OwnerReference{withController(podRef, false)}
		case 3:
			c.OwnerReferences = []metav1.OwnerReference{withController(otherRef, true)}
		case 4, 5:
			c.OwnerReferences = []metav1.OwnerReference{withController(rapid.SampledFrom(groupRefs).Draw(t, "groupRef"), true)}
		}
		if rapid.Bool().Draw(t, "annotated") {
			c.Annotations = map[string]string{resourceapi.PodResourceClaimAnnotation: rapid.SampledFrom(entryNames).Draw(t, "annotation")}
		}
		if rapid.Bool().Draw(t, "allocated") {
			c.Status.Allocation = &resourceapi.AllocationResult{}
			for _, cons := range consumers {
				if rapid.Bool().Draw(t, "reservedFor") {
					c.Status.ReservedFor = append(c.Status.ReservedFor, cons)
				}
			}
			if rapid.IntRange(0, 3).Draw(t, "full") == 0 {
				for j := len(c.Status.ReservedFor); j < resourceapi.ResourceClaimReservedForMaxSize; j++ {
					c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: fmt.Sprintf("x%d", j), UID: types.UID(fmt.Sprintf("uid-x%d", j))})
				}
			}
		}
		cc.Claims = append(cc.Claims, c)
	}

	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podRef.Name, UID: podRef.UID}}
	p.Spec.Containers = []v1.Container{{Name: "main"}}
	n := rapid.IntRange(1, len(entryNames)).Draw(t, "entries")
	for _, name := range entryNames[:n] {
		pc := v1.PodResourceClaim{Name: name}
		if rapid.Bool().Draw(t, "byName") {
			pc.ResourceClaimName = ptr.To(fmt.Sprintf("claim-%d", rapid.IntRange(0, nClaims).Draw(t, "claim")))
		} else {
			pc.ResourceClaimTemplateName = ptr.To(rapid.SampledFrom([]string{"t", "t2"}).Draw(t, "template"))
			if rapid.Bool().Draw(t, "hasStatus") {
				st := v1.PodResourceClaimStatus{Name: name}
				if rapid.IntRange(0, 4).Draw(t, "statusNil") > 0 {
					st.ResourceClaimName = ptr.To(fmt.Sprintf("claim-%d", rapid.IntRange(0, nClaims).Draw(t, "statusClaim")))
				}
				p.Status.ResourceClaimStatuses = append(p.Status.ResourceClaimStatuses, st)
			}
		}
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, pc)
	}
	cc.Pod = p

	if rapid.Bool().Draw(t, "inGroup") {
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("g")}
		g := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g", UID: "uid-g"}}
		for _, pc := range p.Spec.ResourceClaims {
			switch rapid.IntRange(0, 2).Draw(t, "groupEntry") {
			case 0: // not in the group
				continue
			case 1: // the same entry: the group's claim
			case 2: // the same name, another source: the pod's own claim
				if pc.ResourceClaimName != nil {
					pc = v1.PodResourceClaim{Name: pc.Name, ResourceClaimTemplateName: ptr.To("t")}
				} else {
					pc = v1.PodResourceClaim{Name: pc.Name, ResourceClaimName: ptr.To("claim-0")}
				}
			}
			g.Spec.ResourceClaims = append(g.Spec.ResourceClaims, schedulingv1beta1.PodGroupResourceClaim{Name: pc.Name, ResourceClaimName: pc.ResourceClaimName, ResourceClaimTemplateName: pc.ResourceClaimTemplateName})
			if pc.ResourceClaimTemplateName != nil && rapid.Bool().Draw(t, "groupStatus") {
				g.Status.ResourceClaimStatuses = append(g.Status.ResourceClaimStatuses, schedulingv1beta1.PodGroupResourceClaimStatus{
					Name: pc.Name, ResourceClaimName: ptr.To(fmt.Sprintf("claim-%d", rapid.IntRange(0, nClaims).Draw(t, "groupStatusClaim"))),
				})
			}
		}
		cc.Group = g
	}
	return cc
}

func withController(ref metav1.OwnerReference, controller bool) metav1.OwnerReference {
	ref.Controller = ptr.To(controller)
	return ref
}

func (cc *claimCase) claim(name string) *resourceapi.ResourceClaim {
	for _, c := range cc.Claims {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// expectation is what the control plane does with one entry of pod.spec.resourceClaims.
type expectation struct {
	skip     bool   // no claim needed (a status entry without a name)
	notFound bool   // a named claim that does not exist: the pod waits
	name     string // the claim the entry resolves to; empty: found by owner or generated
	group    bool   // the PodGroup's claim, reserved for the group
	// owned accepts a claim as the owner's (the upstream IsForPod or IsForPodGroup).
	owned func(*resourceapi.ResourceClaim) bool
}

// expect applies the upstream helpers to one entry, as kube-scheduler's dynamicresources plugin and
// the resourceclaim controller use them: BindTo says whether the entry is the PodGroup's; Name (or
// NameFromPodGroup) names the claim; for a template entry the named claim counts only when IsForPod
// (or IsForPodGroup) accepts it, otherwise the controller finds or creates one.
func expect(t *rapid.T, cc *claimCase, group *schedulingv1beta1.PodGroup, pc *v1.PodResourceClaim) expectation {
	cons, err := resourceclaim.BindTo(cc.Pod, group, pc)
	if err != nil {
		t.Fatalf("BindTo: %v", err)
	}
	var e expectation
	var name *string
	var mustCheck bool
	if cons.Resource == "podgroups" {
		e.group = true
		var gc *schedulingv1beta1.PodGroupResourceClaim
		for i := range group.Spec.ResourceClaims {
			if group.Spec.ResourceClaims[i].Name == pc.Name {
				gc = &group.Spec.ResourceClaims[i]
			}
		}
		name, mustCheck, err = resourceclaim.NameFromPodGroup(group, gc)
		e.owned = func(c *resourceapi.ResourceClaim) bool { return resourceclaim.IsForPodGroup(group, c) == nil }
	} else {
		name, mustCheck, err = resourceclaim.Name(cc.Pod, pc)
		e.owned = func(c *resourceapi.ResourceClaim) bool { return resourceclaim.IsForPod(cc.Pod, c, false) == nil }
	}
	switch {
	case errors.Is(err, resourceclaim.ErrClaimNotFound):
		return e // generated or found by owner
	case err != nil:
		t.Fatalf("Name: %v", err)
	case name == nil:
		e.skip = true
		return e
	}
	claim := cc.claim(*name)
	switch {
	case claim == nil && pc.ResourceClaimName != nil:
		e.notFound = true
	case claim != nil && (!mustCheck || e.owned(claim)):
		e.name = *name
	}
	return e
}

type claimTally struct {
	mu                                                      sync.Mutex
	cases, entries, named, byOwner, generated, skipped      int
	groupEntries, waiting, refused, reserved, disagreements int
}

// TestPodClaimsAgreeWithUpstreamHelpers: on generated pods (entries by name and by template, with and
// without pod.status.resourceClaimStatuses, in a PodGroup or not) and claims (owned by the pod, another
// pod or the PodGroup, as its controller or not, annotated for an entry or not, allocated and reserved
// or not), pods.Cluster.PodClaims resolves every entry as the upstream helpers do, and Place reserves
// the claims for the consumer BindTo names and refuses an allocated claim only when its reservedFor is
// full and IsReservedForPod says the pod is not among them.
func TestPodClaimsAgreeWithUpstreamHelpers(t *testing.T) {
	tl := &claimTally{}
	rapid.Check(t, func(rt *rapid.T) { compareClaims(rt, drawClaimCase(rt), tl) })
	t.Logf("%d cases, %d entries: %d resolved by name or status, %d found by owner, %d generated, %d not needed, %d PodGroup entries; %d pods waiting for a claim, %d refused (reservedFor full), %d placed and reserved; %d disagreements",
		tl.cases, tl.entries, tl.named, tl.byOwner, tl.generated, tl.skipped, tl.groupEntries, tl.waiting, tl.refused, tl.reserved, tl.disagreements)
}

func compareClaims(rt *rapid.T, cc *claimCase, tl *claimTally) {
	snap := allocator.NewSnapshot(allocator.Options{})
	nodeName := "node"
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	node.Status.Allocatable = v1.ResourceList{v1.ResourcePods: resource.MustParse("110")} // as a kubelet reports it
	must(rt, snap.AddOrUpdateNode(node))
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "gpus"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.example.com", NodeName: &nodeName, Pool: resourceapi.ResourcePool{Name: nodeName, ResourceSliceCount: 1},
	}}
	for i := range 8 {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	must(rt, snap.AddOrUpdateSlice(slice))
	must(rt, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}},
	}}))
	for _, c := range cc.Claims {
		must(rt, snap.AddOrUpdateClaim(c))
	}
	c := pods.New(snap, pods.Options{})
	for _, name := range []string{"t", "t2"} {
		must(rt, c.AddOrUpdateTemplate(&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: resourceapi.ResourceClaimTemplateSpec{Spec: claimSpec()}}))
	}
	if cc.Group != nil {
		must(rt, c.AddOrUpdatePodGroup(cc.Group))
	}

	fail := func(format string, args ...any) {
		tl.mu.Lock()
		tl.disagreements++
		tl.mu.Unlock()
		y, _ := yaml.Marshal(cc)
		rt.Errorf("%s\ncase:\n%s", fmt.Sprintf(format, args...), y)
	}
	var want []expectation
	var wantEntries []string
	waiting := false
	for i := range cc.Pod.Spec.ResourceClaims {
		pc := &cc.Pod.Spec.ResourceClaims[i]
		e := expect(rt, cc, cc.Group, pc)
		if e.notFound {
			waiting = true
			break
		}
		if !e.skip {
			want = append(want, e)
			wantEntries = append(wantEntries, pc.Name)
		}
	}
	got, err := c.PodClaims(cc.Pod)
	tl.mu.Lock()
	tl.cases++
	tl.mu.Unlock()
	if waiting {
		tl.mu.Lock()
		tl.waiting++
		tl.mu.Unlock()
		if !errors.Is(err, pods.ErrClaimNotFound) {
			fail("a named claim does not exist: want ErrClaimNotFound, got %v", err)
		}
		return
	}
	if err != nil {
		fail("PodClaims: %v", err)
		return
	}
	var gotEntries []string
	for _, g := range got {
		gotEntries = append(gotEntries, g.Name)
	}
	if !slices.Equal(gotEntries, wantEntries) {
		fail("entries %v, want %v", gotEntries, wantEntries)
		return
	}
	for i, e := range want {
		g := got[i]
		tl.mu.Lock()
		tl.entries++
		if e.group {
			tl.groupEntries++
		}
		tl.mu.Unlock()
		if (g.PodGroup != nil) != e.group {
			fail("entry %s: PodGroup claim %v, BindTo says %v", g.Name, g.PodGroup != nil, e.group)
		}
		if e.name != "" {
			tl.mu.Lock()
			tl.named++
			tl.mu.Unlock()
			if g.Generated || g.Claim.Name != e.name {
				fail("entry %s: claim %s (generated %v), want %s", g.Name, g.Claim.Name, g.Generated, e.name)
			}
			continue
		}
		// The controller's turn: a claim of the owner annotated for the entry, or a new one.
		var candidates []string
		for _, claim := range cc.Claims {
			if e.owned(claim) && claim.Annotations[resourceapi.PodResourceClaimAnnotation] == g.Name {
				candidates = append(candidates, claim.Name)
			}
		}
		switch {
		case len(candidates) > 0:
			tl.mu.Lock()
			tl.byOwner++
			tl.mu.Unlock()
			if g.Generated || !slices.Contains(candidates, g.Claim.Name) {
				fail("entry %s: claim %s (generated %v), want one of the owner's %v", g.Name, g.Claim.Name, g.Generated, candidates)
			}
		default:
			tl.mu.Lock()
			tl.generated++
			tl.mu.Unlock()
			if !g.Generated {
				fail("entry %s: claim %s, want a new one (the owner has none for the entry)", g.Name, g.Claim.Name)
			} else if !e.owned(g.Claim) || g.Claim.Annotations[resourceapi.PodResourceClaimAnnotation] != g.Name {
				fail("entry %s: the generated claim is not the owner's for the entry upstream: %s", g.Name, dump(g.Claim.ObjectMeta))
			}
		}
	}
	tl.mu.Lock()
	tl.skipped += len(cc.Pod.Spec.ResourceClaims) - len(want)
	tl.mu.Unlock()

	// Reservation: refused only for a full reservedFor without the pod (or its group).
	refuse := false
	for _, g := range got {
		claim := g.Claim
		if claim.Status.Allocation != nil && len(claim.Status.ReservedFor) >= resourceapi.ResourceClaimReservedForMaxSize &&
			!resourceclaim.IsReservedForPod(cc.Pod, claim, true) {
			refuse = true
		}
	}
	p, err := c.Place(context.Background(), cc.Pod)
	if refuse {
		tl.mu.Lock()
		tl.refused++
		tl.mu.Unlock()
		if !errors.Is(err, pods.ErrClaimNotUsable) {
			fail("an allocated claim's reservedFor is full without the pod: want ErrClaimNotUsable, got %v", err)
		}
		return
	}
	if err != nil {
		fail("Place: %v", err)
		return
	}
	tl.mu.Lock()
	tl.reserved++
	tl.mu.Unlock()
	for i, pc := range p.Claims {
		if pc.Name == "" {
			continue
		}
		entry := cc.Pod.Spec.ResourceClaims[slices.IndexFunc(cc.Pod.Spec.ResourceClaims, func(x v1.PodResourceClaim) bool { return x.Name == pc.Name })]
		cons, _ := resourceclaim.BindTo(cc.Pod, cc.Group, &entry)
		if cons.APIGroup == v1.GroupName {
			cons.APIGroup = "" // the core group
		}
		// As the scheduler's PreBind: a claim reserved for the pod already gets no new entry; any other
		// gets the consumer BindTo names.
		before := cc.claim(pc.Claim.Name)
		already := before != nil && resourceclaim.IsReservedForPod(cc.Pod, before, true)
		if !already && !slices.Contains(pc.Claim.Status.ReservedFor, cons) {
			fail("claim %d (%s): reservedFor lacks %v, the consumer BindTo names", i, pc.Claim.Name, cons)
		}
		if already && len(pc.Claim.Status.ReservedFor) != len(before.Status.ReservedFor) {
			fail("claim %d (%s): reserved for the pod already, yet reservedFor grows from %d to %d entries", i, pc.Claim.Name, len(before.Status.ReservedFor), len(pc.Claim.Status.ReservedFor))
		}
		if !resourceclaim.IsReservedForPod(cc.Pod, pc.Claim, true) {
			fail("claim %d (%s): IsReservedForPod is false after placing", i, pc.Claim.Name)
		}
	}
}

func must(t *rapid.T, err error) {
	if err != nil {
		t.Fatal(err)
	}
}
