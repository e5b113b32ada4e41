package bench

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// FleetFilter is the whole-fleet filter of the pods room: the claims' outcome on every node, with
// Fits asked once per class of nodes the claims cannot tell apart (allocator.NodeClasses). Errors are
// not shared between the nodes of a class: a node whose class failed asks again.
func FleetFilter(ctx context.Context, s *allocator.Snapshot, nodes []*v1.Node, claims []*resourceapi.ResourceClaim, out []Outcome) error {
	classes, err := s.NodeClasses(ctx, claims)
	if err != nil {
		return err
	}
	ids, err := classes.AppendClasses(make([]int, 0, len(nodes)), nodes)
	if err != nil {
		return err
	}
	// Classes are numbered from 0 in order of appearance, so a slice indexed by class holds the answers.
	var answers []Outcome
	const unknown = Outcome(-1)
	for i, node := range nodes {
		class := ids[i]
		for len(answers) <= class {
			answers = append(answers, unknown)
		}
		if answers[class] == unknown {
			answers[class] = drallocFits{s}.Filter(ctx, node, claims)
			if answers[class] == Rejected {
				answers[class] = unknown
				out[i] = Rejected
				continue
			}
		}
		out[i] = answers[class]
	}
	return nil
}
