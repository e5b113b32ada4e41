package headroom

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator/pods"
)

// CountEveryCopy is Count placing every copy, without the nodes' kinds.
func CountEveryCopy(ctx context.Context, c *pods.Cluster, pod *v1.Pod, opts Options) (*Result, error) {
	return count(ctx, c, pod, opts, false)
}
