package pods

import (
	"context"

	v1 "k8s.io/api/core/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
)

// PlaceGroupUnpruned is SearchGroupPlacement without its cuts (kinds of pods, classes of nodes, counting): it
// tries every assignment, the reference the property tests compare the pruned search with.
func (c *Cluster) PlaceGroupUnpruned(ctx context.Context, group *schedulingapi.PodGroup, pods []*v1.Pod, budget *Budget) (*GroupPlacement, error) {
	return c.placeGroup(ctx, group, pods, budget, false)
}

// WithoutNodeIndex makes c filter every node for every pod, as without the index of full nodes
// (nodeindex.go): the reference the index's property compares with.
func WithoutNodeIndex(c *Cluster) *Cluster {
	c.noIndex = true
	return c
}

// NodeIndexLive reports whether c's index of full nodes holds a lineage of revisions, that is, was not
// emptied since the last placement read it: the property tests count the removals the index outlives.
func NodeIndexLive(c *Cluster) bool {
	c.fullIdx.mu.Lock()
	defer c.fullIdx.mu.Unlock()
	return c.fullIdx.ok
}

// WithExplainPerNode makes c's Explain explain every node on its own, without node classes, fork the
// snapshot afresh for every pod and ask the fork where the pod fits once holders release their devices
// node by node: the reference the property compares with.
func WithExplainPerNode(c *Cluster) *Cluster {
	c.perNode = true
	return c
}
