package pods_test

import (
	"context"
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// sharedGPU is one GPU on n1 that takes shares of its 8Gi of memory, in steps of 1Gi.
func sharedGPU() *resourceapi.ResourceSlice {
	s := gpus("n1", 0)
	yes := true
	min, step := resource.MustParse("1Gi"), resource.MustParse("1Gi")
	s.Spec.Devices = []resourceapi.Device{{
		Name:                     "shared",
		AllowMultipleAllocations: &yes,
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {
			Value:         resource.MustParse("8Gi"),
			RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: &min, ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &min, Step: &step}},
		}},
	}}
	return s
}

func memoryTemplate(name, memory string) *resourceapi.ResourceClaimTemplate {
	t := template(name, 1)
	t.Spec.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{
		Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(memory)}}
	return t
}

// preferRanged prefers 6.5Gi for claims of pod entries named "ranged".
func preferRanged(claim *resourceapi.ResourceClaim, request string) map[resourceapi.QualifiedName]resource.Quantity {
	if claim.Annotations[resourceapi.PodResourceClaimAnnotation] != "ranged" {
		return nil
	}
	return map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("6656Mi")}
}

func memoryOf(t *testing.T, p *pods.Placement) string {
	t.Helper()
	q := p.Claims[0].Claim.Status.Allocation.Devices.Results[0].ConsumedCapacity["memory"]
	return q.String()
}

func rangedCluster(t *testing.T, preferred pods.Preferred) *pods.Cluster {
	c := cluster(t, pods.Options{Preferred: preferred}, 0, nodes(1)...)
	must(t, c.Snapshot().AddOrUpdateSlice(sharedGPU()))
	must(t, c.AddOrUpdateTemplate(memoryTemplate("mem-2", "2Gi")))
	must(t, c.AddOrUpdateTemplate(memoryTemplate("mem-4", "4Gi")))
	return c
}

func TestPlaceRanged(t *testing.T) {
	tests := []struct {
		name      string
		preferred pods.Preferred
		pods      []string // templates, entries named "ranged"
		want      []string // memory each pod's share records
	}{
		{name: "without a preferred amount the share records what the request consumes", pods: []string{"mem-2"}, want: []string{"2Gi"}},
		{name: "the largest valid amount up to the preferred one (6.5Gi rounds down to the 1Gi step)", preferred: preferRanged,
			pods: []string{"mem-2"}, want: []string{"6Gi"}},
		{name: "a later share gets what is left, never less than its minimum", preferred: preferRanged,
			pods: []string{"mem-2", "mem-2"}, want: []string{"6Gi", "2Gi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := rangedCluster(t, tt.preferred)
			for i, tmpl := range tt.pods {
				p, err := c.Place(context.Background(), pod("p"+string(rune('a'+i)), "ranged=template:"+tmpl))
				must(t, err)
				if got := memoryOf(t, p); got != tt.want[i] {
					t.Errorf("pod %d records %s, want %s", i, got, tt.want[i])
				}
				must(t, c.Assume(p))
			}
		})
	}
}

func TestPlanHandBack(t *testing.T) {
	c := rangedCluster(t, preferRanged)
	ctx := context.Background()
	first, err := c.Place(ctx, pod("first", "ranged=template:mem-2"))
	must(t, err)
	must(t, c.Assume(first)) // 6Gi of 8Gi
	big := pod("big", "gpu=template:mem-4")
	if _, err := c.Place(ctx, big); !errors.Is(err, pods.ErrNoNode) {
		t.Fatalf("4Gi next to 6Gi: %v, want ErrNoNode", err)
	}
	plan, p, err := c.PlanHandBack(ctx, big)
	must(t, err)
	if len(plan) != 1 {
		t.Fatalf("plan %+v, want one share", plan)
	}
	h := plan[0]
	want := pods.HandBack{Claim: "default/" + first.Claims[0].Claim.Name, Request: "gpu",
		Device: allocator.DeviceID{Driver: driver, Pool: "n1", Device: "shared"}, Capacity: "memory"}
	if h.Claim != want.Claim || h.Request != want.Request || h.Device != want.Device || h.Capacity != want.Capacity ||
		h.Amount.String() != "4Gi" || h.Consumed.String() != "6Gi" {
		t.Errorf("hand-back %+v, want %+v giving back 4Gi of 6Gi", h, want)
	}
	if p.Node != "n1" || memoryOf(t, p) != "4Gi" {
		t.Errorf("then placed on %s with %s, want n1 with 4Gi", p.Node, memoryOf(t, p))
	}
	// Nothing changed: the big pod still does not fit.
	if _, err := c.Place(ctx, big); !errors.Is(err, pods.ErrNoNode) {
		t.Errorf("PlanHandBack changed the snapshot: %v", err)
	}

	// A pod that fits as things are needs no plan.
	plan, p, err = c.PlanHandBack(ctx, pod("small", "gpu=template:mem-2"))
	if err != nil || len(plan) != 0 || p == nil {
		t.Errorf("fitting pod: plan %+v, placement %v, error %v; want an empty plan and a placement", plan, p != nil, err)
	}
	// A pod that does not fit even then.
	huge := memoryTemplate("mem-8", "8Gi")
	huge.ObjectMeta = metav1.ObjectMeta{Namespace: "default", Name: "mem-8"}
	must(t, c.AddOrUpdateTemplate(huge))
	if _, _, err := c.PlanHandBack(ctx, pod("huge", "gpu=template:mem-8")); !errors.Is(err, pods.ErrNoNode) {
		t.Errorf("8Gi next to a 2Gi minimum: %v, want ErrNoNode", err)
	}
}

// Two shares of one device placed for one pod: the ranged one grows only into what the other, allocated in
// the same placement, leaves (8Gi less its 4Gi), never over the device's capacity.
func TestPlaceRangedNextToASiblingShare(t *testing.T) {
	c := rangedCluster(t, preferRanged)
	p, err := c.Place(context.Background(), pod("p", "ranged=template:mem-2", "gpu=template:mem-4"))
	must(t, err)
	got := map[string]string{}
	for _, pc := range p.Claims {
		q := pc.Claim.Status.Allocation.Devices.Results[0].ConsumedCapacity["memory"]
		got[pc.Claim.Annotations[resourceapi.PodResourceClaimAnnotation]] = q.String()
	}
	if got["ranged"] != "4Gi" || got["gpu"] != "4Gi" {
		t.Errorf("shares record %v, want ranged 4Gi next to gpu 4Gi on the 8Gi device", got)
	}
}
