package bench

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator/verify"
)

// verifyingPods checks each placement of a PodsPlacer with allocator/verify against the claims
// allocated before it, on the node the placement chose.
type verifyingPods struct {
	*PodsPlacer
	cluster   Cluster
	allocated []*resourceapi.ResourceClaim
}

// Place implements NodeChooser.
func (p *verifyingPods) Place(ctx context.Context, claim *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	allocated, err := p.PodsPlacer.Place(ctx, claim)
	if err != nil || allocated == nil {
		return allocated, err
	}
	var node *v1.Node
	for _, n := range p.cluster.Nodes {
		if _, pinned := pinnedTo(allocated); pinned == n.Name {
			node = n
		}
	}
	if node == nil {
		return nil, fmt.Errorf("claim %s: allocation pinned to no node of the fleet: %v", claim.Name, allocated.Status.Allocation.NodeSelector)
	}
	in := verify.Input{Slices: p.cluster.Slices, Classes: p.cluster.Classes, Claims: p.allocated, Node: node}
	vs, err := verify.Check(ctx, in, []*resourceapi.ResourceClaim{claim}, []resourceapi.AllocationResult{*allocated.Status.Allocation})
	if err != nil {
		return nil, err
	}
	if len(vs) > 0 {
		return nil, fmt.Errorf("allocation of %s on %s does not verify: %v", claim.Name, node.Name, vs)
	}
	p.allocated = append(p.allocated, allocated)
	return allocated, nil
}

// Release implements Releaser.
func (p *verifyingPods) Release(ctx context.Context, claim *resourceapi.ResourceClaim) error {
	p.allocated = slices.DeleteFunc(p.allocated, func(c *resourceapi.ResourceClaim) bool { return c == claim })
	return p.PodsPlacer.Release(ctx, claim)
}

// pinnedTo is the node name of an allocation's node selector (metadata.name In [node]); ok false otherwise.
func pinnedTo(claim *resourceapi.ResourceClaim) (ok bool, node string) {
	sel := claim.Status.Allocation.NodeSelector
	if sel == nil || len(sel.NodeSelectorTerms) != 1 || len(sel.NodeSelectorTerms[0].MatchFields) != 1 {
		return false, ""
	}
	f := sel.NodeSelectorTerms[0].MatchFields[0]
	if f.Key != "metadata.name" || len(f.Values) != 1 {
		return false, ""
	}
	return true, f.Values[0]
}
