package pods_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// migCluster is a Cluster with the given choice on nodes n0, n1, … each with the number of MIG-like GPUs
// (migSlices; 0: whole GPUs without counters instead), the class "part" and the templates part-SxC.
func migCluster(t *testing.T, choice pods.Choice, gpusPerNode ...int) *pods.Cluster {
	t.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	for i, g := range gpusPerNode {
		name := fmt.Sprintf("n%d", i)
		must(t, snap.AddOrUpdateNode(node(name, nil)))
		if g == 0 {
			must(t, snap.AddOrUpdateSlice(gpus(name, 2)))
			continue
		}
		for _, s := range migSlices(name, g) {
			must(t, snap.AddOrUpdateSlice(s))
		}
	}
	must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	must(t, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "part"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + migDriver + `"`}}}}}))
	c := pods.New(snap, pods.Options{Choice: choice, NameSuffix: fixedSuffixes()})
	for _, p := range migProfiles {
		for count := 1; count <= 2; count++ {
			must(t, c.AddOrUpdateTemplate(partTemplate(p.size, count)))
		}
	}
	must(t, c.AddOrUpdateTemplate(template("gpus-1", 1)))
	return c
}

// placeOn places and assumes a pod with the template, and returns its node.
func placeOn(t *testing.T, c *pods.Cluster, name, tmpl string) string {
	t.Helper()
	p, err := c.Place(context.Background(), pod(name, "gpu=template:"+tmpl))
	must(t, err)
	must(t, c.Assume(p))
	return p.Node
}

// TestBestFitByFill: named placements of BestFit on partitionable GPUs, each after pods placed on nodes
// named by hand.
func TestBestFitByFill(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gpus  []int    // per node
		moves []string // "template@node": a pod placed on that node before the pod
		pod   string
		want  string
	}{
		{
			name: "a partition goes to the fuller GPU, though the other node holds more devices",
			gpus: []int{1, 1}, moves: []string{"part-4x1@n0", "part-1x2@n1"}, pod: "part-1x1", want: "n0",
		},
		{
			name: "without counters drawn on, the node with more devices wins",
			gpus: []int{1, 0, 0}, moves: []string{"part-1x1@n0", "gpus-1@n2"}, pod: "gpus-1", want: "n2",
		},
		{
			name: "a whole GPU draws on an empty set only, so the load decides",
			gpus: []int{2, 2}, moves: []string{"part-1x1@n0", "part-1x2@n1"}, pod: "part-7x1", want: "n1",
		},
		{
			name: "on equal fill and load the first by name",
			gpus: []int{1, 1}, moves: []string{"part-2x1@n0", "part-2x1@n1"}, pod: "part-1x1", want: "n0",
		},
		{
			name: "the fill is the GPU's the partition lands on, not the node's fullest",
			gpus: []int{2, 1}, moves: []string{"part-4x1@n0", "part-3x1@n0", "part-1x1@n0", "part-2x1@n1"}, pod: "part-1x1", want: "n1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := migCluster(t, pods.BestFit, tc.gpus...)
			for i, m := range tc.moves {
				tmpl, on, _ := strings.Cut(m, "@")
				// A FirstFit Cluster on the same snapshot whose predicate admits the one node.
				pinned := pods.New(c.Snapshot(), pods.Options{NameSuffix: fixedSuffixes(), Predicate: func(_ *v1.Pod, n *v1.Node) error {
					if n.Name != on {
						return fmt.Errorf("not %s", on)
					}
					return nil
				}})
				if tmpl == "gpus-1" {
					must(t, pinned.AddOrUpdateTemplate(template(tmpl, 1)))
				} else {
					must(t, pinned.AddOrUpdateTemplate(partTemplate(sizeOf(t, tmpl))))
				}
				pl, err := pinned.Place(context.Background(), pod(fmt.Sprintf("scene-%d", i), "gpu=template:"+tmpl))
				must(t, err)
				must(t, pinned.Assume(pl))
			}
			if got := placeOn(t, c, "pod", tc.pod); got != tc.want {
				t.Errorf("placed on %s, want %s", got, tc.want)
			}
		})
	}
}

// sizeOf parses a template name part-SxC.
func sizeOf(t *testing.T, tmpl string) (size, count int) {
	t.Helper()
	if _, err := fmt.Sscanf(tmpl, "part-%dx%d", &size, &count); err != nil {
		t.Fatalf("template %s: %v", tmpl, err)
	}
	return size, count
}

// TestBestFitConcurrentPlace: placements of one snapshot in parallel, with partitionable GPUs, choose
// what one placement alone chooses (run with -race: the fill state is shared).
func TestBestFitConcurrentPlace(t *testing.T) {
	c := migCluster(t, pods.BestFit, 2, 2, 1, 0)
	for i, tmpl := range []string{"part-3x1", "part-1x1", "part-2x2", "part-4x1", "gpus-1"} {
		placeOn(t, c, fmt.Sprintf("scene-%d", i), tmpl)
	}
	want := map[string]string{}
	for _, tmpl := range []string{"part-1x1", "part-2x1", "part-3x1", "part-1x2"} {
		p, err := c.Place(context.Background(), pod("probe", "gpu=template:"+tmpl))
		must(t, err)
		want[tmpl] = p.Node
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tmpl, node := range want {
				p, err := c.Place(context.Background(), pod(fmt.Sprintf("p-%d", g), "gpu=template:"+tmpl))
				if err != nil {
					errs <- err
					return
				}
				if p.Node != node {
					errs <- fmt.Errorf("%s placed on %s in parallel, alone on %s", tmpl, p.Node, node)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
