package pods

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// kubeAllocate is the verdict of a node where the claims fit, under the Scheduler choice when
// DynamicResources scores their allocation: the allocation kube-scheduler's filter makes there
// (allocator.FirstFit, upstream's order), the node's own.
func kubeAllocate(ctx context.Context, snap *allocator.Snapshot, node *v1.Node, nc *nodeClaims) (verdict, *allocVerdict) {
	if len(nc.claims) == 0 {
		return verdict{fits: true}, &allocVerdict{nc: nc, own: true}
	}
	results, err := snap.AllocateWith(ctx, allocator.FirstFit, node, nc.claims)
	if errors.Is(err, allocator.ErrUnsatisfiable) {
		return verdict{reason: "cannot allocate all claims"}, nil // Fits said yes; should it not hold
	}
	if err != nil {
		return verdict{err: err}, nil
	}
	return verdict{fits: true}, &allocVerdict{nc: nc, results: results, own: true}
}

// bestScored chooses, under the Scheduler choice, among the nodes where the pod fits: it scores them
// with the Cluster's profile (kubeScores) and returns the first by name of those with the highest
// total (-1 when the pod fits nowhere), the names of all of those, and every node's score, the highest
// first and ties by name. Every node was filtered, so an error on any is returned, the first by
// position, as kube-scheduler fails the attempt.
func (c *Cluster) bestScored(nodes []*v1.Node, r *request, verdicts *verdictPages, allocs []*allocVerdict) (int, []string, []NodeScore, error) {
	in := &scoreInput{r: r, nodes: nodes}
	for i := range nodes {
		v := verdicts.get(i)
		if v.err != nil {
			return -1, nil, nil, fmt.Errorf("%s: node %s: %w", podName(r.pod), nodes[i].Name, v.err)
		}
		if !v.fits {
			continue
		}
		in.fit = append(in.fit, i)
		in.usage = append(in.usage, c.usageOf(nodes[i].Name))
		var nc *nodeClaims
		var results []resourceapi.AllocationResult
		if a := allocs[i]; a != nil {
			nc, results = a.nc, a.results
		}
		in.claims = append(in.claims, nc)
		in.results = append(in.results, results)
	}
	if len(in.fit) == 0 {
		return -1, nil, nil, nil
	}
	scores, err := kubeScores(c.profile, in)
	if err != nil {
		return -1, nil, nil, err
	}
	position := make(map[string]int, len(in.fit))
	for _, i := range in.fit {
		position[nodes[i].Name] = i
	}
	slices.SortStableFunc(scores, func(a, b NodeScore) int {
		if a.Total != b.Total {
			return cmp.Compare(b.Total, a.Total)
		}
		return cmp.Compare(a.Node, b.Node)
	})
	var best []string
	for _, s := range scores {
		if s.Total != scores[0].Total {
			break
		}
		best = append(best, s.Node)
	}
	return position[best[0]], best, scores, nil
}
