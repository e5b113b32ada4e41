package pods_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// quotaCluster is two nodes with two GPUs each, the class "gpu", the template "one-gpu", and a quota of
// max GPUs for namespace default.
func quotaCluster(t *testing.T, max string) *pods.Cluster {
	t.Helper()
	q := &allocator.Quota{Limits: []allocator.QuotaLimit{{Owner: "default", Class: "gpu", Kind: allocator.QuotaDevices, Max: resource.MustParse(max)}}}
	snap := allocator.NewSnapshot(allocator.Options{Quota: q})
	for _, name := range []string{"node-a", "node-b"} {
		must(t, snap.AddOrUpdateNode(node(name, nil)))
		must(t, snap.AddOrUpdateSlice(gpus(name, 2)))
	}
	must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	c := pods.New(snap, pods.Options{NameSuffix: fixedSuffixes()})
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	return c
}

const quotaReason = "quota owner default, DeviceClass gpu, devices ≤ 2: holds 2, asks for 1 more"

// TestPlaceWithinQuota: with two GPUs of quota and four in the cluster, two pods are placed and the
// third fits nowhere; Explain gives every node the quota as its reason.
func TestPlaceWithinQuota(t *testing.T) {
	c := quotaCluster(t, "2")
	ctx := context.Background()
	for _, name := range []string{"first", "second"} {
		p, err := c.Place(ctx, pod(name, "gpu=template:one-gpu"))
		must(t, err)
		must(t, c.Assume(p))
	}
	_, err := c.Place(ctx, pod("third", "gpu=template:one-gpu"))
	if !errors.Is(err, pods.ErrNoNode) {
		t.Fatalf("Place third: %v, want ErrNoNode", err)
	}
	e, err := c.Explain(ctx, pod("third", "gpu=template:one-gpu"))
	must(t, err)
	// node-a, full, does not fit whatever the quota; node-b has two free GPUs.
	if len(e.Groups) != 2 || e.Groups[1].Reason != quotaReason || e.Groups[1].Examples[0] != "node-b" {
		t.Fatalf("Explain groups %+v, want node-b with %q", e.Groups, quotaReason)
	}
}

// TestPlaceGroupChargesTogether: a gang of three one-GPU pods does not fit a quota of two GPUs although
// the cluster has four, and fits a quota of three.
func TestPlaceGroupChargesTogether(t *testing.T) {
	for _, tc := range []struct {
		max  string
		fits bool
	}{{"2", false}, {"3", true}} {
		c := quotaCluster(t, tc.max)
		must(t, c.AddOrUpdatePodGroup(gang(3, "")))
		g, err := c.PlaceGroup(context.Background(), gang(3, ""), members(names(3), "gpu=template:one-gpu"))
		switch {
		case tc.fits && err != nil:
			t.Fatalf("quota %s: PlaceGroup: %v", tc.max, err)
		case tc.fits && len(g.Pods) != 3:
			t.Fatalf("quota %s: %d placements, want 3", tc.max, len(g.Pods))
		case !tc.fits && !errors.Is(err, pods.ErrGroupUnschedulable):
			t.Fatalf("quota %s: PlaceGroup: %v, %v; want ErrGroupUnschedulable", tc.max, g, err)
		}
	}
}
