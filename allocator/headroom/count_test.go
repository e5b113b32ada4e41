package headroom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

func TestCount(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		nodes []string
		pod   string // template
		cpu   string
		opts  headroom.Options
		total int
		stop  headroom.Stop
		err   error
	}{
		// a: 4 GPUs, 2 per copy = 2; b: 3 GPUs = 1 (one GPU left over).
		{"whole GPUs, two per copy", []string{"a 32 4 0", "b 32 3 0"}, "two-gpus", "1", headroom.Options{}, 3, headroom.Full, nil},
		// 8 CPUs per node, 3 per copy: 2 per node whatever the GPUs.
		{"CPUs limit before GPUs", []string{"a 8 4 0", "b 8 4 0"}, "one-gpu", "3", headroom.Options{}, 4, headroom.Full, nil},
		// Shares of 300 of 1000: 3 per GPU, 2 GPUs per node, 2 nodes.
		{"shares of a GPU", []string{"a 32 2 1000", "b 32 2 1000"}, "third-gpu", "1", headroom.Options{}, 12, headroom.Full, nil},
		{"stops at Max", []string{"a 32 8 0"}, "one-gpu", "1", headroom.Options{Max: 5}, 5, headroom.ReachedMax, nil},
		// Budget 3 placements for 8 copies.
		{"runs out of budget", []string{"a 32 8 0"}, "one-gpu", "1", headroom.Options{Budget: 3}, 3, headroom.OutOfBudget, headroom.ErrBudget},
		// No claims: pods are bounded by CPUs (4 of 1) and allocatable pods (110).
		{"no claims", []string{"a 4 0 0"}, "", "1", headroom.Options{}, 4, headroom.Full, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(pods.Options{}, tc.nodes...)
			p := pod("web", tc.cpu, tc.pod)
			before := p.DeepCopy()
			claims := len(c.Snapshot().Claims(""))
			res, err := headroom.Count(ctx, c, p, tc.opts)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if res.Total != tc.total || res.Stop != tc.stop {
				t.Fatalf("got %d %v, want %d %v (%+v)", res.Total, res.Stop, tc.total, tc.stop, res)
			}
			sum := 0
			for _, n := range res.Nodes {
				sum += n.Copies
			}
			if sum != res.Total {
				t.Errorf("per node %+v sums to %d, not %d", res.Nodes, sum, res.Total)
			}
			if (res.Stop == headroom.Full) != (len(res.Limits) > 0) {
				t.Errorf("limits %+v with stop %v", res.Limits, res.Stop)
			}
			if !equality.Semantic.DeepEqual(p, before) {
				t.Error("pod modified")
			}
			if n := len(c.Snapshot().Claims("")); n != claims {
				t.Errorf("cluster changed: %d claims, had %d", n, claims)
			}
			// The cluster still takes the same number: nothing was assumed there.
			again, _ := headroom.Count(ctx, c, p, tc.opts)
			if again.Total != res.Total {
				t.Errorf("second count %d, first %d", again.Total, res.Total)
			}
		})
	}
}

func TestCountBadInput(t *testing.T) {
	ctx := context.Background()
	c := cluster(pods.Options{}, "a 8 1 0")
	for _, tc := range []struct {
		name string
		c    *pods.Cluster
		opts headroom.Options
		want string
	}{
		{"nil cluster", nil, headroom.Options{}, "headroom: nil Cluster"},
		{"negative max", c, headroom.Options{Max: -1}, "headroom: Options.Max: must not be negative, got -1"},
		{"negative budget", c, headroom.Options{Budget: -2}, "headroom: Options.Budget: must not be negative, got -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := headroom.Count(ctx, tc.c, pod("p", "1", ""), tc.opts); err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := headroom.Count(ctx, c, nil, headroom.Options{}); err == nil || err.Error() != "headroom: nil Pod" {
		t.Fatalf("nil pod: %v", err)
	}
}

// TestCountThousandNodes fills 1,000 nodes of 8 GPUs with one-GPU copies (8,000); it asserts the
// count and logs the time (no wall-clock assert; the nodes are one kind, so one is filled: a few ms on
// the shared 2-CPU machine, where placing all 8,000 copies took 1.2–1.5 s).
func TestCountThousandNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	specs := make([]string, 1000)
	for i := range specs {
		specs[i] = fmt.Sprintf("n%04d 64 8 0", i)
	}
	c := cluster(pods.Options{}, specs...)
	start := time.Now()
	res, err := headroom.Count(context.Background(), c, pod("w", "1", "one-gpu"), headroom.Options{Max: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 8000 || len(res.Nodes) != 1000 || res.Stop != headroom.Full || len(res.Limits) != 1 || res.Limits[0].Nodes != 1000 {
		t.Fatalf("total %d on %d nodes, %v, limits %+v; want 8000 on 1000, Full, all nodes out of GPUs", res.Total, len(res.Nodes), res.Stop, res.Limits)
	}
	t.Logf("1000 nodes, 8000 copies: %v", time.Since(start))
}

// With Options.Explain the limits are the explanation's: which request, which claims hold the devices.
func TestCountExplain(t *testing.T) {
	c := cluster(pods.Options{}, "a 32 1 0")
	res, err := headroom.Count(context.Background(), c, pod("w", "1", "one-gpu"), headroom.Options{Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 1 || len(res.Limits) != 1 || !strings.Contains(res.Limits[0].Reason, `request "gpu"`) || res.Limits[0].Examples[0] != "a" {
		t.Fatalf("%+v", res)
	}
}

// BenchmarkCount counts one-GPU copies on fleets of 1,000 and 5,000 nodes of 8 whole GPUs and 64 CPUs,
// with the nodes' kinds (Count) and placing every copy (as Count did before kinds):
//
//	go test -run '^$' -bench Count -benchtime 1x ./allocator/headroom/
//
// Measured on the shared 2-CPU machine (load average 3): 1,000 nodes 8.7 ms with kinds, 0.99 s placing
// all 8,000 copies; 5,000 nodes 33 ms with kinds, 7.6 s placing all 40,000.
func BenchmarkCount(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		specs := make([]string, n)
		for i := range specs {
			specs[i] = fmt.Sprintf("n%05d 64 8 0", i)
		}
		c := cluster(pods.Options{}, specs...)
		p := pod("w", "1", "one-gpu")
		for _, m := range []struct {
			name  string
			count func(context.Context, *pods.Cluster, *v1.Pod, headroom.Options) (*headroom.Result, error)
		}{{"kinds", headroom.Count}, {"every-copy", headroom.CountEveryCopy}} {
			b.Run(fmt.Sprintf("nodes=%d/%s", n, m.name), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					res, err := m.count(context.Background(), c, p, headroom.Options{Max: 100000})
					if err != nil || res.Total != 8*n {
						b.Fatalf("%v: %d copies, want %d", err, res.Total, 8*n)
					}
				}
			})
		}
	}
}
