package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// generatedTopology prefers the domains of the generated clusters' attributes: the GPUs' NUMA node and
// model, the NICs' zone, and the GPUs' links (a list, a domain only with one element).
func generatedTopology() *allocator.Topology {
	return &allocator.Topology{Attributes: []resourceapi.FullyQualifiedName{
		"gpu.example.com/numa", "nic.example.com/zone", "gpu.example.com/model", "gpu.example.com/links",
	}}
}

// allocateWithTopology allocates the generated cluster's claims with the strategy and the topology
// preference of the generated attributes.
func allocateWithTopology(ctx context.Context, c *fuzz.Cluster, strategy allocator.Strategy) ([]resourceapi.AllocationResult, error) {
	s, err := c.Snapshot(allocator.Options{Strategy: strategy, StepBudget: strategyStepBudget, Topology: generatedTopology()})
	if err != nil {
		return nil, err
	}
	return s.Allocate(ctx, c.Node, c.Claims)
}

// Every allocation made with the topology preference, under each strategy, passes allocator/verify, and
// the cluster is not mutated.
func TestPropTopologyAllocationsVerify(t *testing.T) {
	for _, st := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit} {
		t.Run(st.String(), func(t *testing.T) {
			fuzz.CheckAllocations(t, fuzz.ClusterGen(strategyOptions()), func(ctx context.Context, c *fuzz.Cluster) ([]resourceapi.AllocationResult, error) {
				return allocateWithTopology(ctx, c, st)
			})
		})
	}
}

// The topology preference orders the search and rules nothing out: claims fit with it exactly when they
// fit without it, with the same input errors but for errors met at a device (metAtDevice), under
// FirstFit and BestFit; and Fits agrees with Allocate on the snapshot that has it.
func TestPropTopologyKeepsFeasibility(t *testing.T) {
	var hits budgetHits
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(strategyOptions()).Draw(rt, "cluster")
		ctx := context.Background()
		var errs []error
		defer func() { hits.add(errs...) }()
		for _, st := range []allocator.Strategy{allocator.FirstFit, allocator.BestFit} {
			_, plainErr := allocateWithStrategy(ctx, c, st)
			res, err := allocateWithTopology(ctx, c, st)
			errs = append(errs, plainErr, err)
			if errors.Is(plainErr, allocator.ErrSearchBudget) || errors.Is(err, allocator.ErrSearchBudget) || metAtDevice(plainErr) || metAtDevice(err) {
				continue
			}
			switch {
			case plainErr == nil && err != nil:
				rt.Fatalf("%s allocates, with Topology it answers %v", st, err)
			case plainErr != nil && err == nil:
				rt.Fatalf("%s answers %v, with Topology it allocates %v", st, plainErr, res)
			case plainErr != nil && errors.Is(plainErr, allocator.ErrUnsatisfiable) != errors.Is(err, allocator.ErrUnsatisfiable):
				rt.Fatalf("%s answers %v, with Topology %v", st, plainErr, err)
			}
			s, snapErr := c.Snapshot(allocator.Options{Strategy: st, StepBudget: strategyStepBudget, Topology: generatedTopology()})
			if snapErr != nil {
				rt.Fatal(snapErr)
			}
			fits, fitsErr := s.Fits(ctx, c.Node, c.Claims)
			errs = append(errs, fitsErr)
			if errors.Is(fitsErr, allocator.ErrSearchBudget) || metAtDevice(fitsErr) {
				continue
			}
			if fits != (err == nil) {
				rt.Fatalf("%s with Topology: Fits says %v, Allocate answers %v", st, fits, err)
			}
		}
	})
	hits.check(t)
}

// Options.Topology names attributes as matchAttribute does; a name without a domain is refused by the
// calls, naming the option, rather than silently matching no device.
func TestTopologyRefusesUnqualifiedAttribute(t *testing.T) {
	for _, name := range []resourceapi.FullyQualifiedName{"numaNode", "/numaNode", "example.com/", ""} {
		opts := allocator.Options{Topology: &allocator.Topology{Attributes: []resourceapi.FullyQualifiedName{allocator.AttributePCIeRoot, name}}}
		snap := allocator.NewSnapshot(opts)
		_, err := snap.Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, nil)
		if !errors.Is(err, allocator.ErrInvalidInput) {
			t.Errorf("attribute %q: error %v, want one wrapping ErrInvalidInput", name, err)
			continue
		}
		if want := "Options.Topology.Attributes[1]"; !strings.Contains(err.Error(), want) {
			t.Errorf("attribute %q: error %q does not name %s", name, err, want)
		}
	}
}

// A preference of more levels than MaxTopologyAttributes is refused, naming the field.
func TestTopologyRefusesTooManyAttributes(t *testing.T) {
	attrs := make([]resourceapi.FullyQualifiedName, allocator.MaxTopologyAttributes+1)
	for i := range attrs {
		attrs[i] = resourceapi.FullyQualifiedName(fmt.Sprintf("example.com/level%d", i))
	}
	snap := allocator.NewSnapshot(allocator.Options{Topology: &allocator.Topology{Attributes: attrs}})
	_, err := snap.Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, nil)
	if !errors.Is(err, allocator.ErrInvalidInput) || !strings.Contains(err.Error(), "Options.Topology.Attributes") {
		t.Fatalf("error %v, want ErrInvalidInput naming Options.Topology.Attributes", err)
	}
	if _, err := allocator.NewSnapshot(allocator.Options{Topology: &allocator.Topology{Attributes: attrs[:allocator.MaxTopologyAttributes]}}).
		Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, nil); err != nil {
		t.Fatalf("%d levels: %v", allocator.MaxTopologyAttributes, err)
	}
}

// The snapshot keeps its own copy of the preference: changing the caller's Options afterwards changes
// no answer.
func TestTopologyOptionIsCopied(t *testing.T) {
	topo := &allocator.Topology{Attributes: []resourceapi.FullyQualifiedName{allocator.AttributePCIeRoot}}
	snap := allocator.NewSnapshot(allocator.Options{Topology: topo})
	topo.Attributes[0] = "not-qualified"
	if _, err := snap.Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, nil); err != nil {
		t.Fatalf("the snapshot read the caller's changed option: %v", err)
	}
}
