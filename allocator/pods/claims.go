package pods

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

// PodClaim is one ResourceClaim of a pod, resolved as the control plane resolves it.
type PodClaim struct {
	// Name is the entry of pod.spec.resourceClaims.
	Name string
	// Claim is the ResourceClaim: the one in the snapshot (read-only: copy it before changing it) or,
	// when Generated, the claim the control plane would create.
	Claim *resourceapi.ResourceClaim
	// Generated reports a claim that does not exist yet: the resourceclaim controller would create it
	// from its template.
	Generated bool
	// PodGroup is set when the claim is the pod's PodGroup's claim (DRAWorkloadResourceClaims): it is
	// shared by the group's pods and reserved for the group, not for each pod.
	PodGroup *schedulingapi.PodGroup
}

// PodClaims returns the claims of pod.spec.resourceClaims in order, resolved as the control plane
// resolves them (entries whose pod.status.resourceClaimStatuses says no claim is needed are left out):
//
//   - resourceClaimName is that claim; it must be in the snapshot (else [ErrClaimNotFound]).
//   - resourceClaimTemplateName is, as the resourceclaim controller decides: the claim named in
//     pod.status.resourceClaimStatuses if it exists and the pod owns it; else a claim the pod owns (an
//     owner reference with controller: true) with the annotation resource.kubernetes.io/pod-claim-name
//     naming the entry; else the claim the controller creates from the template: generateName
//     <pod>-<entry>- (both parts cut in proportion when longer than 57 characters), the template's
//     labels and annotations plus that annotation, the pod as controlling owner (controller: true,
//     no blockOwnerDeletion, as the controller of 1.37 writes it), the template's spec, and the name
//     the API server would give it (the suffix from Options.NameSuffix).
//   - With DRAWorkloadResourceClaims, an entry equal in every field to an entry of the pod's PodGroup's
//     spec.resourceClaims (pod.spec.schedulingGroup.podGroupName) is the group's claim: the named
//     claim, or the one generated for the group (found or created in the same way, with the PodGroup as
//     owner, apiVersion scheduling.k8s.io/v1beta1, and podGroup.status.resourceClaimStatuses in place of
//     the pod's status).
//
// The extended-resource claim depends on the node and is not among them; see [Cluster.Place].
func (c *Cluster) PodClaims(pod *v1.Pod) ([]PodClaim, error) {
	return c.podClaims(c.snap, pod, nil)
}

// podClaims resolves the pod's claims; names it generates are added to taken (when not nil) and are
// never names already in it.
func (c *Cluster) podClaims(snap *allocator.Snapshot, pod *v1.Pod, taken map[string]bool) ([]PodClaim, error) {
	if pod == nil {
		return nil, &allocator.InputError{Object: "Pod", Err: errors.New("nil object")}
	}
	group, err := c.podGroup(pod)
	if err != nil {
		return nil, err
	}
	out := make([]PodClaim, 0, len(pod.Spec.ResourceClaims))
	if taken == nil {
		taken = map[string]bool{}
	}
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		field := fmt.Sprintf("spec.resourceClaims[%d]", i)
		if (pc.ResourceClaimName == nil) == (pc.ResourceClaimTemplateName == nil) {
			return nil, &allocator.InputError{Object: podName(pod), Field: field, Err: errors.New("must specify exactly one of resourceClaimName, resourceClaimTemplateName")}
		}
		if group != nil {
			if gc := matchingGroupClaim(group, pc); gc != nil {
				r, needed, err := c.groupClaim(snap, group, gc, taken)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", podName(pod), field, err)
				}
				if needed {
					out = append(out, r)
				}
				continue
			}
		}
		if pc.ResourceClaimName != nil {
			claim, ok := snap.Claim(pod.Namespace, *pc.ResourceClaimName)
			if !ok {
				return nil, fmt.Errorf("%s: %s.resourceClaimName: %w: %s/%s", podName(pod), field, ErrClaimNotFound, pod.Namespace, *pc.ResourceClaimName)
			}
			out = append(out, PodClaim{Name: pc.Name, Claim: claim})
			continue
		}
		owner := ownerOf{apiVersion: "v1", kind: "Pod", name: pod.Name, uid: uidOf(pod)}
		r, needed, err := c.templateClaim(snap, pod.Namespace, pc.Name, *pc.ResourceClaimTemplateName, owner, pod.Status.ResourceClaimStatuses, taken)
		if err != nil {
			return nil, fmt.Errorf("%s: %s.resourceClaimTemplateName: %w", podName(pod), field, err)
		}
		if needed {
			out = append(out, r)
			if r.Generated {
				taken[r.Claim.Name] = true
			}
		}
	}
	return out, nil
}

func podName(pod *v1.Pod) string { return "Pod " + pod.Namespace + "/" + pod.Name }

// podGroup returns the pod's PodGroup when PodGroup claims are on and the pod names one.
func (c *Cluster) podGroup(pod *v1.Pod) (*schedulingapi.PodGroup, error) {
	if c.opts.DisableWorkloadClaims || pod.Spec.SchedulingGroup == nil || pod.Spec.SchedulingGroup.PodGroupName == nil {
		return nil, nil
	}
	name := *pod.Spec.SchedulingGroup.PodGroupName
	g, ok := c.group(pod.Namespace, name)
	if !ok {
		return nil, fmt.Errorf("%s: spec.schedulingGroup.podGroupName: %w: %s/%s", podName(pod), ErrPodGroupNotFound, pod.Namespace, name)
	}
	return g, nil
}

// matchingGroupClaim returns the group's entry equal to the pod's in every field, as the API defines
// the match (name, resourceClaimName and resourceClaimTemplateName).
func matchingGroupClaim(g *schedulingapi.PodGroup, pc *v1.PodResourceClaim) *schedulingapi.PodGroupResourceClaim {
	for i := range g.Spec.ResourceClaims {
		gc := &g.Spec.ResourceClaims[i]
		if gc.Name == pc.Name && samePtr(gc.ResourceClaimName, pc.ResourceClaimName) && samePtr(gc.ResourceClaimTemplateName, pc.ResourceClaimTemplateName) {
			return gc
		}
	}
	return nil
}

func samePtr(x, y *string) bool {
	if x == nil || y == nil {
		return x == y
	}
	return *x == *y
}

func (c *Cluster) groupClaim(snap *allocator.Snapshot, g *schedulingapi.PodGroup, gc *schedulingapi.PodGroupResourceClaim, taken map[string]bool) (PodClaim, bool, error) {
	if gc.ResourceClaimName != nil {
		claim, ok := snap.Claim(g.Namespace, *gc.ResourceClaimName)
		if !ok {
			return PodClaim{}, false, fmt.Errorf("PodGroup %s/%s claim %s: %w: %s/%s", g.Namespace, g.Name, gc.Name, ErrClaimNotFound, g.Namespace, *gc.ResourceClaimName)
		}
		return PodClaim{Name: gc.Name, Claim: claim, PodGroup: g}, true, nil
	}
	statuses := make([]v1.PodResourceClaimStatus, len(g.Status.ResourceClaimStatuses))
	for i, s := range g.Status.ResourceClaimStatuses {
		statuses[i] = v1.PodResourceClaimStatus{Name: s.Name, ResourceClaimName: s.ResourceClaimName}
	}
	owner := ownerOf{apiVersion: schedulingapi.SchemeGroupVersion.String(), kind: "PodGroup", name: g.Name, uid: uidOf(g)}
	r, needed, err := c.templateClaim(snap, g.Namespace, gc.Name, *gc.ResourceClaimTemplateName, owner, statuses, taken)
	r.PodGroup = g
	return r, needed, err
}

// ownerOf is the object a generated claim belongs to: a Pod or a PodGroup.
type ownerOf struct {
	apiVersion, kind, name string
	uid                    types.UID
}

// owns reports whether the claim has o as its controlling owner, as the resourceclaim controller's
// owner index and resourceclaim.IsForPod check it. The version in the owner reference's apiVersion is
// ignored, as resourceclaim.IsForPod ignores it for a PodGroup owner: claims generated for a PodGroup
// by a release that served another version of scheduling.k8s.io are still the group's. The name is
// compared too: it adds nothing for objects the API server created (a UID has one name), and tells
// apart objects read from manifests, which have no UID yet.
func (o ownerOf) owns(claim *resourceapi.ResourceClaim) bool {
	for _, ref := range claim.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && apiGroup(ref.APIVersion) == apiGroup(o.apiVersion) && ref.Kind == o.kind && ref.UID == o.uid && ref.Name == o.name {
			return true
		}
	}
	return false
}

// apiGroup is the group of an apiVersion: "" for "v1", "scheduling.k8s.io" for "scheduling.k8s.io/v1beta1".
func apiGroup(apiVersion string) string {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return group
}

// templateClaim resolves an entry with a template as the resourceclaim controller does (handleClaim):
// the status names the claim (an entry without a name: no claim needed), a claim generated earlier is
// found, or a new one is generated.
func (c *Cluster) templateClaim(snap *allocator.Snapshot, namespace, entry, templateName string, owner ownerOf, statuses []v1.PodResourceClaimStatus, taken map[string]bool) (PodClaim, bool, error) {
	for _, s := range statuses {
		if s.Name != entry {
			continue
		}
		if s.ResourceClaimName == nil {
			return PodClaim{}, false, nil
		}
		if claim, ok := snap.Claim(namespace, *s.ResourceClaimName); ok && owner.owns(claim) {
			return PodClaim{Name: entry, Claim: claim}, true, nil
		}
		// As the controller: a claim that is gone or no longer owned is created anew.
		break
	}
	// The controller's claim-pod-owner index: claims with a controlling owner of that UID.
	for _, claim := range snap.ClaimsOwnedBy(namespace, owner.uid) {
		if name, ok := claim.Annotations[resourceapi.PodResourceClaimAnnotation]; ok && name == entry && owner.owns(claim) {
			return PodClaim{Name: entry, Claim: claim}, true, nil
		}
	}
	t, ok := c.template(namespace, templateName)
	if !ok {
		return PodClaim{}, false, fmt.Errorf("%w: %s/%s", ErrTemplateNotFound, namespace, templateName)
	}
	claim, err := c.fromTemplate(snap, t, entry, owner, taken)
	if err != nil {
		return PodClaim{}, false, err
	}
	return PodClaim{Name: entry, Claim: claim, Generated: true}, true, nil
}

// fromTemplate builds the claim the resourceclaim controller creates for an entry (handleClaim, and
// handlePodGroupClaim for a PodGroup, in kubernetes v1.37.2 pkg/controller/resourceclaim/controller.go):
// an owner reference with controller: true only (v1.37.2 sets no blockOwnerDeletion), generateName
// <owner>-<entry>-, both parts truncated in proportion to their length when that is longer than 57
// characters (which leaves the trailing hyphen out), then the API server's name generation.
func (c *Cluster) fromTemplate(snap *allocator.Snapshot, t *resourceapi.ResourceClaimTemplate, entry string, owner ownerOf, taken map[string]bool) (*resourceapi.ResourceClaim, error) {
	annotations := maps.Clone(t.Spec.ObjectMeta.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[resourceapi.PodResourceClaimAnnotation] = entry
	generateName := owner.name + "-" + entry + "-"
	const maxBaseLen = 57 // room for a hyphen and five random characters in 63
	if len(generateName) > maxBaseLen {
		generateName = owner.name[:len(owner.name)*maxBaseLen/len(generateName)] + "-" + entry[:len(entry)*maxBaseLen/len(generateName)]
	}
	name, err := c.freeName(snap, t.Namespace, generateName, taken)
	if err != nil {
		return nil, err
	}
	yes := true
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    t.Namespace,
			Name:         name,
			GenerateName: generateName,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: owner.apiVersion,
				Kind:       owner.kind,
				Name:       owner.name,
				UID:        owner.uid,
				Controller: &yes,
			}},
			Annotations: annotations,
			Labels:      maps.Clone(t.Spec.ObjectMeta.Labels),
		},
		Spec: *t.Spec.Spec.DeepCopy(),
	}
	return claim, nil
}
