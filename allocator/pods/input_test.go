package pods_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

func TestBadInput(t *testing.T) {
	c := cluster(t, pods.Options{}, 1, nodes(1)...)
	both := pod("both", "gpu=claim:x")
	both.Spec.ResourceClaims[0].ResourceClaimTemplateName = ptr("t")
	neither := pod("neither")
	neither.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu"}}
	g := gang(1, "")
	must(t, c.AddOrUpdatePodGroup(g))
	stranger := pod("stranger")
	tests := []struct {
		name      string
		err       error
		wantField string // in the message, with the object
	}{
		{"a pod claim with both sources", func() error { _, err := c.Place(context.Background(), both); return err }(), "Pod default/both: spec.resourceClaims[0]: must specify exactly one"},
		{"a pod claim with no source", func() error { _, err := c.PodClaims(neither); return err }(), "Pod default/neither: spec.resourceClaims[0]: must specify exactly one"},
		{"a nil pod", func() error { _, err := c.Place(context.Background(), nil); return err }(), "Pod: nil object"},
		{"a nil pod to remove", c.Remove(nil), "Pod: nil object"},
		{"a template without a name", c.AddOrUpdateTemplate(&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}}), "ResourceClaimTemplate default/: metadata.name: must not be empty"},
		{"a nil PodGroup", c.AddOrUpdatePodGroup(nil), "PodGroup: nil object"},
		{"a gang member that does not name the group", func() error {
			_, err := c.SearchGroupPlacement(context.Background(), g, []*v1.Pod{stranger}, nil)
			return err
		}(), "pods[0]: spec.schedulingGroup.podGroupName: must name PodGroup default/gang"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, allocator.ErrInvalidInput) {
				t.Fatalf("error %v, want ErrInvalidInput", tt.err)
			}
			if !strings.Contains(tt.err.Error(), tt.wantField) {
				t.Errorf("error %q, want it to contain %q", tt.err, tt.wantField)
			}
		})
	}
}

// allocatedEverywhere is a claim allocated to a network device usable from every node, reserved for
// the given consumers.
func allocatedEverywhere(name string, reserved []resourceapi.ResourceClaimConsumerReference) *resourceapi.ResourceClaim {
	cl := claim(name, 1)
	cl.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: driver, Pool: "fabric", Device: "d"}}}}
	cl.Status.ReservedFor = reserved
	return cl
}

func TestReservationLimit(t *testing.T) {
	full := make([]resourceapi.ResourceClaimConsumerReference, resourceapi.ResourceClaimReservedForMaxSize)
	for i := range full {
		full[i] = resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("u%d", i))}
	}
	ns := nodes(1)
	ns[0].Status.Allocatable[v1.ResourcePods] = resource.MustParse("1000") // room for the 300 members below
	c := cluster(t, pods.Options{}, 0, ns...)
	must(t, c.Snapshot().AddOrUpdateClaim(allocatedEverywhere("full", full)))
	if _, err := c.Place(context.Background(), pod("one-more", "gpu=claim:full")); !errors.Is(err, pods.ErrClaimNotUsable) {
		t.Errorf("a pod's claim reserved for 256 pods: %v, want ErrClaimNotUsable", err)
	}
	// A pod already among the 256 may use it.
	p := pod("p0", "gpu=claim:full")
	p.UID = "u0"
	if _, err := c.Place(context.Background(), p); err != nil {
		t.Errorf("a pod the claim is reserved for: %v", err)
	}

	// A PodGroup's claim is reserved for the group: any number of member pods use it.
	g := gang(1, "", schedulingapi.PodGroupResourceClaim{Name: "fabric", ResourceClaimName: ptr("group-claim")})
	must(t, c.AddOrUpdatePodGroup(g))
	must(t, c.Snapshot().AddOrUpdateClaim(allocatedEverywhere("group-claim", nil)))
	for i := range 300 {
		p := pod(fmt.Sprintf("member-%d", i), "fabric=claim:group-claim")
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr("gang")}
		pl, err := c.Place(context.Background(), p)
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		must(t, c.Assume(pl))
	}
	gc, _ := c.Snapshot().Claim("default", "group-claim")
	if len(gc.Status.ReservedFor) != 1 || gc.Status.ReservedFor[0].Resource != "podgroups" {
		t.Errorf("group claim reserved for %+v, want the PodGroup once", gc.Status.ReservedFor)
	}
}
