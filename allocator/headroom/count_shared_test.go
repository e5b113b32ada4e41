package headroom_test

import (
	"context"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// linkCluster is a cluster where copies of linkPod share one claim, "link": node a has 8 GPUs, one held
// by a pod placed before, and reaches the link of pool net-a; nodes b and c have 4 GPUs each and reach
// the link of pool net-bc. Whichever node the first copy goes to decides which link the shared claim
// gets, and so which nodes the other copies can go to.
func linkCluster(t *testing.T, choice pods.Choice) *pods.Cluster {
	t.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, n := range []struct {
		name, group string
		gpus        int
	}{{"a", "a", 8}, {"b", "bc", 4}, {"c", "bc", 4}} {
		nd := node(n.name, "32")
		nd.Labels = map[string]string{"group": n.group}
		must(snap.AddOrUpdateNode(nd))
		must(snap.AddOrUpdateSlice(gpus(n.name, n.gpus, 0)))
	}
	for _, group := range []string{"a", "bc"} {
		must(snap.AddOrUpdateSlice(&resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "net-" + group},
			Spec: resourceapi.ResourceSliceSpec{
				Driver: "link.example.com",
				Pool:   resourceapi.ResourcePool{Name: "net-" + group, Generation: 1, ResourceSliceCount: 1},
				NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
					{Key: "group", Operator: v1.NodeSelectorOpIn, Values: []string{group}},
				}}}},
				Devices: []resourceapi.Device{{Name: "link-0"}},
			},
		}))
	}
	must(snap.AddOrUpdateClass(gpuClass()))
	must(snap.AddOrUpdateClass(&resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "link"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "link.example.com"`},
		}}},
	}))
	link := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "link", UID: "uid-link"}}
	link.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "link", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "link", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
	}}}
	must(snap.AddOrUpdateClaim(link))
	c := pods.New(snap, pods.Options{Choice: choice, NameSuffix: suffixes()})
	addTemplates(c)
	before, err := c.PlaceOnNode(context.Background(), pod("before", "1", "one-gpu"), "a")
	must(err)
	must(c.Assume(before))
	return c
}

// linkPod asks for one GPU of its own and the shared claim "link".
func linkPod() *v1.Pod {
	p := pod("ring", "1", "one-gpu")
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: "link", ResourceClaimName: ptr("link")})
	return p
}

// TestCountSharedClaimFollowsTheChoice: copies sharing a claim are placed as the cluster's Choice places
// them. FirstFit puts the first copy on a (the first node by name where it fits), the link claim gets
// net-a's link, and a's 7 free GPUs take 7 copies; b and c cannot use the claim. Spread puts the first
// copy on b (a has a device allocated, b and c none), the claim gets net-bc's link, and b and c take 4
// copies each, alternating: 8; a cannot use the claim. The next copy fits nowhere: the nodes the claim
// reaches have no GPU left, the others cannot use the claim.
func TestCountSharedClaimFollowsTheChoice(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		choice pods.Choice
		total  int
		nodes  []headroom.NodeCount
		limits []headroom.Limit
	}{
		{pods.FirstFit, 7, []headroom.NodeCount{{Node: "a", Copies: 7}}, []headroom.Limit{
			{Reason: "allocated ResourceClaim default/link is not available on the node", Nodes: 2, Examples: []string{"b", "c"}},
			{Reason: "cannot allocate all claims", Nodes: 1, Examples: []string{"a"}},
		}},
		{pods.Spread, 8, []headroom.NodeCount{{Node: "b", Copies: 4}, {Node: "c", Copies: 4}}, []headroom.Limit{
			{Reason: "cannot allocate all claims", Nodes: 2, Examples: []string{"b", "c"}},
			{Reason: "allocated ResourceClaim default/link is not available on the node", Nodes: 1, Examples: []string{"a"}},
		}},
	} {
		t.Run(tc.choice.String(), func(t *testing.T) {
			c := linkCluster(t, tc.choice)
			for _, count := range []func(context.Context, *pods.Cluster, *v1.Pod, headroom.Options) (*headroom.Result, error){headroom.Count, headroom.CountEveryCopy} {
				res, err := count(ctx, c, linkPod(), headroom.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if res.Total != tc.total || res.Stop != headroom.Full || !reflect.DeepEqual(res.Nodes, tc.nodes) {
					t.Fatalf("got %d %v on %+v, want %d Full on %+v", res.Total, res.Stop, res.Nodes, tc.total, tc.nodes)
				}
				if !reflect.DeepEqual(res.Limits, tc.limits) {
					t.Errorf("limits %+v, want %+v", res.Limits, tc.limits)
				}
				if claim, _ := c.Snapshot().Claim("default", "link"); claim.Status.Allocation != nil {
					t.Fatal("the cluster's link claim was allocated")
				}
			}
		})
	}
}
