package pods_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// numbered returns n nodes named node-00, node-01, … (names sort in order).
func numbered(n int) []*v1.Node {
	out := make([]*v1.Node, n)
	for i := range out {
		out[i] = node(fmt.Sprintf("node-%02d", i), nil)
	}
	return out
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%02d", i)
	}
	return out
}

// gangOn is a Cluster with the template one-gpu and the PodGroup gang (minCount = pods), and the pods.
func gangOn(t *testing.T, c *pods.Cluster, pods int) []*v1.Pod {
	t.Helper()
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	must(t, c.AddOrUpdatePodGroup(gang(int32(pods), "")))
	return members(names(pods), "gpu=template:one-gpu")
}

// takeGPUs allocates the first k GPUs of the node to a claim of no pod of the group.
func takeGPUs(t testing.TB, c *pods.Cluster, nodeName string, k int) {
	t.Helper()
	held := claim("held-"+nodeName, int64(k))
	held.Status.Allocation = &resourceapi.AllocationResult{}
	for i := range k {
		held.Status.Allocation.Devices.Results = append(held.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: driver, Pool: nodeName, Device: fmt.Sprintf("gpu-%d", i)})
	}
	must(t, c.Snapshot().AddOrUpdateClaim(held))
}

func TestSearchGroupPlacementBudget(t *testing.T) {
	t.Run("a budget too small gives up, which is not a no", func(t *testing.T) {
		// Ten pods on ten nodes of one GPU each fit, but not in five tries.
		c := cluster(t, pods.Options{}, 1, numbered(10)...)
		ps := gangOn(t, c, 10)
		b := &pods.Budget{Limit: 5}
		_, err := c.SearchGroupPlacement(context.Background(), gang(10, ""), ps, b)
		if !errors.Is(err, allocator.ErrSearchBudget) || errors.Is(err, pods.ErrGroupUnschedulable) {
			t.Fatalf("error %v, want ErrSearchBudget only", err)
		}
		if b.Used != 5 {
			t.Errorf("used %d tries, want the limit 5", b.Used)
		}
		if want := "PodGroup default/gang: allocation search budget exhausted after 5 tries"; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		// A budget shared by calls bounds them together: this one has none left.
		_, err = c.SearchGroupPlacement(context.Background(), gang(10, ""), ps, b)
		if !errors.Is(err, allocator.ErrSearchBudget) || b.Used != 5 {
			t.Errorf("second call with the spent budget: %v after %d tries, want ErrSearchBudget after 5", err, b.Used)
		}
		// Enough tries, and it fits.
		b = &pods.Budget{Limit: 1000}
		gp, err := c.SearchGroupPlacement(context.Background(), gang(10, ""), ps, b)
		must(t, err)
		if got := placedNodes(gp); !slices.Equal(got, []string{"node-00", "node-01", "node-02", "node-03", "node-04", "node-05", "node-06", "node-07", "node-08", "node-09"}) {
			t.Errorf("placed on %v", got)
		}
		t.Logf("ten pods on ten nodes: %d tries", b.Used)
	})
	t.Run("no budget is the Cluster's, or the default", func(t *testing.T) {
		c := cluster(t, pods.Options{StepBudget: 3}, 1, numbered(10)...)
		ps := gangOn(t, c, 10)
		if _, err := c.SearchGroupPlacement(context.Background(), gang(10, ""), ps, nil); !errors.Is(err, allocator.ErrSearchBudget) {
			t.Errorf("nil budget with Options.StepBudget 3: %v, want ErrSearchBudget", err)
		}
		b := &pods.Budget{}
		if _, err := c.SearchGroupPlacement(context.Background(), gang(10, ""), ps, b); !errors.Is(err, allocator.ErrSearchBudget) || b.Used != 3 {
			t.Errorf("Limit 0 with Options.StepBudget 3: %v after %d tries, want ErrSearchBudget after 3", err, b.Used)
		}
		c = cluster(t, pods.Options{}, 1, numbered(10)...)
		ps = gangOn(t, c, 10)
		if _, err := c.SearchGroupPlacement(context.Background(), gang(10, ""), ps, nil); err != nil {
			t.Errorf("nil budget, default limit: %v", err)
		}
	})
	t.Run("a negative limit is invalid input", func(t *testing.T) {
		c := cluster(t, pods.Options{}, 1, numbered(1)...)
		ps := gangOn(t, c, 1)
		_, err := c.SearchGroupPlacement(context.Background(), gang(1, ""), ps, &pods.Budget{Limit: -1})
		if !errors.Is(err, allocator.ErrInvalidInput) || !strings.Contains(err.Error(), "PodGroup default/gang: budget.limit: must not be negative") {
			t.Errorf("error %v, want an input error on budget.limit", err)
		}
	})
}

// TestSearchGroupPlacementDecidesMorePodsThanPlaces: a gang of ten one-GPU pods over nine nodes with one free GPU
// each does not fit; without pruning the search tries every assignment of nine of the pods to the nine
// nodes (factorial) before saying so. With the counting bound it is decided in a few tries, whether
// the nodes are all alike or each different (another number of GPUs taken on each).
func TestSearchGroupPlacementDecidesMorePodsThanPlaces(t *testing.T) {
	tests := []struct {
		name     string
		gpus     func(i int) int // GPUs on node i; all but one taken
		maxTries int
	}{
		{name: "nine nodes alike", gpus: func(int) int { return 1 }, maxTries: 3},
		{name: "three kinds of node", gpus: func(i int) int { return 1 + i%3 }, maxTries: 6},
		{name: "nine nodes each different", gpus: func(i int) int { return 1 + i }, maxTries: 18},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(t, pods.Options{}, 0, numbered(9)...)
			for i, n := range numbered(9) {
				must(t, c.Snapshot().AddOrUpdateSlice(gpus(n.Name, tt.gpus(i))))
				if k := tt.gpus(i) - 1; k > 0 {
					takeGPUs(t, c, n.Name, k)
				}
			}
			ps := gangOn(t, c, 10)
			b := &pods.Budget{Limit: 1000}
			_, err := c.SearchGroupPlacement(context.Background(), gang(10, ""), ps, b)
			if !errors.Is(err, pods.ErrGroupUnschedulable) {
				t.Fatalf("error %v, want ErrGroupUnschedulable", err)
			}
			if b.Used > tt.maxTries {
				t.Errorf("decided in %d tries, want at most %d", b.Used, tt.maxTries)
			}
			t.Logf("%d tries", b.Used)
		})
	}
}

func TestSearchGroupPlacementRefusesAPodListedTwice(t *testing.T) {
	c := cluster(t, pods.Options{}, 1, numbered(3)...)
	ps := gangOn(t, c, 2)
	sameName := ps[0].DeepCopy()
	sameName.UID = "another-uid"
	sameUID := ps[0].DeepCopy()
	sameUID.Name = "w-other"
	tests := []struct {
		name string
		pods []*v1.Pod
		want string
	}{
		{"the same object twice", []*v1.Pod{ps[0], ps[1], ps[0]}, "PodGroup default/gang: pods[2]: duplicate of pods[0]: Pod default/w00 listed twice"},
		{"the same name", []*v1.Pod{ps[0], sameName}, "PodGroup default/gang: pods[1]: duplicate of pods[0]: Pod default/w00 listed twice"},
		{"the same UID", []*v1.Pod{ps[0], sameUID}, "PodGroup default/gang: pods[1]: duplicate of pods[0]: Pod default/w-other has the UID uid-w00 of Pod default/w00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := gang(1, "")
			gp, err := c.SearchGroupPlacement(context.Background(), g, tt.pods, nil)
			var ie *allocator.InputError
			if !errors.As(err, &ie) || err.Error() != tt.want {
				t.Fatalf("placed on %v, error %v, want the input error %q", gp != nil, err, tt.want)
			}
		})
	}
}
