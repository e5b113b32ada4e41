package pods_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator/pods"
)

// Pods read from manifests have no UID until the API server creates them. Removing one of them leaves
// the claims and reservations of the others alone: an owner or a consumer is the object of that name,
// not every object without a UID.
func TestRemovePodsWithoutUID(t *testing.T) {
	c := cluster(t, pods.Options{}, 3, nodes(1)...)
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	must(t, c.Snapshot().AddOrUpdateClaim(claim("shared", 1)))
	ctx := context.Background()
	first, second := pod("first", "gpu=template:one-gpu", "both=claim:shared"), pod("second", "gpu=template:one-gpu", "both=claim:shared")
	first.UID, second.UID = "", ""
	for _, p := range []*v1.Pod{first, second} {
		pl, err := c.Place(ctx, p)
		must(t, err)
		must(t, c.Assume(pl))
	}
	must(t, c.Remove(first))

	var names []string
	for _, cl := range c.Snapshot().Claims("default") {
		names = append(names, cl.Name)
		switch {
		case cl.Name == "shared":
			if cl.Status.Allocation == nil {
				t.Errorf("claim shared was deallocated after removing the first pod")
			}
			if len(cl.Status.ReservedFor) != 1 || cl.Status.ReservedFor[0].Name != "second" {
				t.Errorf("claim shared: reservedFor %v, want the second pod only", cl.Status.ReservedFor)
			}
		case len(cl.OwnerReferences) != 1 || cl.OwnerReferences[0].Name != "second":
			t.Errorf("claim %s: owners %v, want the second pod: the first pod's claim is left", cl.Name, cl.OwnerReferences)
		}
	}
	if len(names) != 2 {
		t.Errorf("claims %v, want shared and the second pod's generated claim", names)
	}
}
