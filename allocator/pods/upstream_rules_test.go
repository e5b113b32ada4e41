package pods_test

import (
	"context"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator/pods"
)

// The rules of k8s.io/dynamic-resource-allocation/resourceclaim that fuzz/upstream/pods compares
// pods.Cluster with, on the cases where they once disagreed.

// A claim generated for a PodGroup names the group with the apiVersion the control plane served
// (scheduling.k8s.io/v1beta1 in Kubernetes 1.37); resourceclaim.IsForPod ignores the version, and so
// must the Cluster, or it generates a second claim for the group (and RemovePodGroup keeps the claim).
func TestGroupClaimOwnedInAnyVersion(t *testing.T) {
	for _, apiVersion := range []string{"scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"} {
		t.Run(apiVersion, func(t *testing.T) {
			c := cluster(t, pods.Options{}, 1, nodes(1)...)
			must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
			g := gang(1, "", schedulingapi.PodGroupResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr("one-gpu")})
			g.Status.ResourceClaimStatuses = []schedulingapi.PodGroupResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr("gang-gpu-x")}}
			must(t, c.AddOrUpdatePodGroup(g))
			existing := claim("gang-gpu-x", 1)
			existing.Annotations = map[string]string{resourceapi.PodResourceClaimAnnotation: "gpu"}
			existing.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: "PodGroup", Name: g.Name, UID: g.UID, Controller: ptr(true)}}
			must(t, c.Snapshot().AddOrUpdateClaim(existing))

			got, err := c.PodClaims(members([]string{"w0"}, "gpu=template:one-gpu")[0])
			must(t, err)
			if len(got) != 1 || got[0].Generated || got[0].Claim.Name != "gang-gpu-x" || got[0].PodGroup == nil {
				for _, pc := range got {
					t.Errorf("entry %s: claim %s, generated %v, PodGroup claim %v", pc.Name, pc.Claim.Name, pc.Generated, pc.PodGroup != nil)
				}
				t.Fatalf("got %d claims, want the group's claim gang-gpu-x", len(got))
			}
			// The group's claim goes with the group, whichever version named it.
			must(t, c.RemovePodGroup(g))
			if _, ok := c.Snapshot().Claim(g.Namespace, "gang-gpu-x"); ok {
				t.Errorf("claim gang-gpu-x kept after RemovePodGroup, want it deleted with its PodGroup")
			}
		})
	}
}

// A claim whose status.reservedFor has the pod needs no reservation (resourceclaim.IsReservedForPod):
// the pod may use it even when reservedFor is full, and placing it adds no entry.
func TestClaimReservedForThePodAlready(t *testing.T) {
	full := func(first resourceapi.ResourceClaimConsumerReference) *resourceapi.ResourceClaim {
		cl := claim("shared", 1)
		cl.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: driver, Pool: "n1", Device: "gpu-0"},
		}}}
		cl.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{first}
		for i := 1; i < resourceapi.ResourceClaimReservedForMaxSize; i++ {
			cl.Status.ReservedFor = append(cl.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: fmt.Sprintf("x%d", i), UID: types.UID(fmt.Sprintf("uid-x%d", i))})
		}
		return cl
	}
	tests := []struct {
		name    string
		first   resourceapi.ResourceClaimConsumerReference
		inGroup bool // the pod's entry is its PodGroup's claim
	}{
		{"the pod's claim, reserved for the pod", resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: "w0", UID: "uid-w0"}, false},
		{"the group's claim, reserved for the member pod", resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: "w0", UID: "uid-w0"}, true},
		{"the group's claim, reserved for the group", resourceapi.ResourceClaimConsumerReference{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: "gang", UID: "uid-gang"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(t, pods.Options{}, 1, nodes(1)...)
			var claims []schedulingapi.PodGroupResourceClaim
			if tc.inGroup {
				claims = append(claims, schedulingapi.PodGroupResourceClaim{Name: "gpu", ResourceClaimName: ptr("shared")})
			}
			must(t, c.AddOrUpdatePodGroup(gang(1, "", claims...)))
			must(t, c.Snapshot().AddOrUpdateClaim(full(tc.first)))
			p, err := c.Place(context.Background(), members([]string{"w0"}, "gpu=claim:shared")[0])
			must(t, err)
			if n := len(p.Claims[0].Claim.Status.ReservedFor); n != resourceapi.ResourceClaimReservedForMaxSize {
				t.Errorf("reservedFor has %d entries, want %d", n, resourceapi.ResourceClaimReservedForMaxSize)
			}
		})
	}
}
