package pods_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/fuzz"
)

// indexCluster loads a generated cluster with its pending claims as templates, for the choice.
func indexCluster(t *rapid.T, c *fuzz.Cluster, choice pods.Choice) *pods.Cluster {
	snap, err := c.Snapshot(allocator.Options{StepBudget: 20000, CEL: propEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	cl := pods.New(snap, pods.Options{Choice: choice, Workers: 1, NameSuffix: fewSuffixes()})
	for i, claim := range c.Claims {
		tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: fmt.Sprintf("t-%d", i)}}
		tmpl.Spec.Spec = *claim.Spec.DeepCopy()
		if err := cl.AddOrUpdateTemplate(tmpl); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// TestPropNodeIndexSamePlacements places, assumes and removes the same sequence of pods (few shapes, so
// that nodes fill up for a shape) on two copies of a generated cluster, one with the index of full nodes
// and one filtering every node, for each Choice: every step must give the same node, or the same error.
func TestPropNodeIndexSamePlacements(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(propOptions()).Draw(t, "cluster")
		if len(c.Claims) == 0 {
			t.Skip("no claims")
		}
		choice := pods.Choice(rapid.IntRange(0, 2).Draw(t, "choice"))
		ctx := context.Background()
		indexed, plain := indexCluster(t, c, choice), pods.WithoutNodeIndex(indexCluster(t, c, choice))
		shapes := rapid.IntRange(1, min(3, len(c.Claims))).Draw(t, "shapes")
		var placed []*v1.Pod
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for step := range steps {
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1, 2, 3: // place and assume
				p := pod(fmt.Sprintf("p-%d", step), fmt.Sprintf("c=template:t-%d", rapid.IntRange(0, shapes-1).Draw(t, "shape")))
				p.Namespace = fuzz.Namespace
				got, gotErr := indexed.Place(ctx, p)
				want, wantErr := plain.Place(ctx, p)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("step %d: %s: indexed error %v, without the index %v", step, p.Name, gotErr, wantErr)
				}
				if gotErr != nil {
					if !acceptable(gotErr) {
						t.Fatalf("step %d: place: %v", step, gotErr)
					}
					continue
				}
				if got.Node != want.Node {
					t.Fatalf("step %d: %s: indexed on %s, without the index on %s", step, p.Name, got.Node, want.Node)
				}
				errA, errB := indexed.Assume(got), plain.Assume(want)
				if fmt.Sprint(errA) != fmt.Sprint(errB) {
					t.Fatalf("step %d: assume: indexed %v, without the index %v", step, errA, errB)
				}
				if errA == nil {
					placed = append(placed, p)
				} else if !errors.Is(errA, allocator.ErrConflict) {
					t.Fatalf("step %d: assume: %v", step, errA)
				}
			case 4: // remove a pod: its node may fit again
				if len(placed) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(placed)-1).Draw(t, "remove")
				p := placed[i]
				placed = append(placed[:i:i], placed[i+1:]...)
				if err := indexed.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := plain.Remove(p); err != nil {
					t.Fatal(err)
				}
			case 5: // a node taken out of scheduling, or back: the snapshot changes under the index
				nodes := indexed.Snapshot().Nodes()
				n := nodes[rapid.IntRange(0, len(nodes)-1).Draw(t, "node")].DeepCopy()
				n.Spec.Unschedulable = !n.Spec.Unschedulable
				if err := indexed.Snapshot().AddOrUpdateNode(n); err != nil {
					t.Fatal(err)
				}
				if err := plain.Snapshot().AddOrUpdateNode(n.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
