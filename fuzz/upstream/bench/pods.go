package bench

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// NodeChooser is a Releaser that chooses the node itself, as a scheduler does: the whole-GPU measures
// give it each claim once instead of asking every node.
type NodeChooser interface {
	Releaser
	// Place allocates the claim on the node the placer chooses and records it; nil when it fits nowhere.
	Place(ctx context.Context, claim *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error)
}

// PodsPlacer places each claim through allocator/pods, as kube-scheduler places a pod: the claim is
// added to the snapshot unallocated, a pod naming it (resourceClaimName) is placed by Cluster.Place
// with the Cluster's Choice and assumed; a departure removes the pod (which deallocates the claim) and
// deletes the claim.
type PodsPlacer struct {
	Cluster *pods.Cluster
	pods    map[types.NamespacedName]*v1.Pod // by claim
}

// NewPodsPlacer returns a placer over a fresh snapshot of the cluster, with the in-node strategy and the
// choice across nodes.
func NewPodsPlacer(c Cluster, strategy allocator.Strategy, choice pods.Choice) (*PodsPlacer, error) {
	s, err := NewSnapshot(c, allocator.Options{Strategy: strategy})
	if err != nil {
		return nil, err
	}
	return &PodsPlacer{Cluster: pods.New(s, pods.Options{Choice: choice}), pods: map[types.NamespacedName]*v1.Pod{}}, nil
}

// Place implements NodeChooser.
func (p *PodsPlacer) Place(ctx context.Context, claim *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	snap := p.Cluster.Snapshot()
	if err := snap.AddOrUpdateClaim(claim); err != nil {
		return nil, err
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: "pod-" + claim.Name, UID: types.UID("uid-pod-" + claim.Name)},
		Spec: v1.PodSpec{
			Containers:     []v1.Container{{Name: "main"}},
			ResourceClaims: []v1.PodResourceClaim{{Name: "part", ResourceClaimName: &claim.Name}},
		},
	}
	placement, err := p.Cluster.Place(ctx, pod)
	if errors.Is(err, pods.ErrNoNode) {
		return nil, snap.DeleteClaim(claim.Namespace, claim.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", claim.Name, err)
	}
	if err := p.Cluster.Assume(placement); err != nil {
		return nil, err
	}
	p.pods[types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}] = pod
	return placement.Claims[0].Claim, nil
}

// Allocate implements Placer: the claims on one node, as a scheduler's filter of that node finds them.
func (p *PodsPlacer) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	return SnapshotPlacer{p.Cluster.Snapshot()}.Allocate(ctx, node, claims)
}

// Record implements Placer: an allocated claim added to the snapshot, without a pod.
func (p *PodsPlacer) Record(_ context.Context, claim *resourceapi.ResourceClaim) error {
	return p.Cluster.Snapshot().AddOrUpdateClaim(claim)
}

// Release implements Releaser: the claim's pod goes away and the claim is deleted.
func (p *PodsPlacer) Release(_ context.Context, claim *resourceapi.ResourceClaim) error {
	key := types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}
	if pod := p.pods[key]; pod != nil {
		delete(p.pods, key)
		if err := p.Cluster.Remove(pod); err != nil {
			return err
		}
	}
	return p.Cluster.Snapshot().DeleteClaim(claim.Namespace, claim.Name)
}
