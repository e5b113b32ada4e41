package pods_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// BenchmarkSearchGroupPlacement measures gang searches in tries (tries/op) and time: a gang of one-GPU pods over
// nodes alike, over nodes each different (another number of GPUs taken on each), and, for the gang
// that does not fit, the search of every assignment, which gives up at the default budget.
func BenchmarkSearchGroupPlacement(b *testing.B) {
	cases := []struct {
		name        string
		nodes, pods int
		gpus        func(i int) int // GPUs on node i
		taken       func(i int) int // of which taken
		unpruned    bool
		fits        bool
	}{
		{name: "10 pods, 9 one-GPU nodes", nodes: 9, pods: 10, gpus: func(int) int { return 1 }},
		{name: "10 pods, 9 one-GPU nodes, every assignment", nodes: 9, pods: 10, gpus: func(int) int { return 1 }, unpruned: true},
		{name: "10 pods, 9 nodes each different", nodes: 9, pods: 10, gpus: func(i int) int { return 1 + i }, taken: func(i int) int { return i }},
		{name: "65 pods, 64 one-GPU nodes", nodes: 64, pods: 65, gpus: func(int) int { return 1 }},
		{name: "64 pods, 64 one-GPU nodes", nodes: 64, pods: 64, gpus: func(int) int { return 1 }, fits: true},
		{name: "64 pods, 8 eight-GPU nodes", nodes: 8, pods: 64, gpus: func(int) int { return 8 }, fits: true},
		{name: "64 pods, 16 nodes each different", nodes: 16, pods: 64, gpus: func(i int) int { return 4 + i }, taken: func(i int) int { return i }, fits: true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			c := cluster(b, pods.Options{}, 0, numbered(tc.nodes)...)
			for i, n := range numbered(tc.nodes) {
				must(b, c.Snapshot().AddOrUpdateSlice(gpus(n.Name, tc.gpus(i))))
				if tc.taken != nil && tc.taken(i) > 0 {
					takeGPUs(b, c, n.Name, tc.taken(i))
				}
			}
			must(b, c.AddOrUpdateTemplate(template("one-gpu", 1)))
			g := gang(int32(tc.pods), "")
			must(b, c.AddOrUpdatePodGroup(g))
			ps := members(names(tc.pods), "gpu=template:one-gpu")
			place := c.SearchGroupPlacement
			if tc.unpruned {
				place = c.PlaceGroupUnpruned
			}
			b.ReportAllocs()
			var used int
			for b.Loop() {
				budget := &pods.Budget{}
				_, err := place(context.Background(), g, ps, budget)
				switch {
				case tc.fits && err != nil, !tc.fits && !tc.unpruned && !errors.Is(err, pods.ErrGroupUnschedulable),
					tc.unpruned && !errors.Is(err, allocator.ErrSearchBudget):
					b.Fatal(err)
				}
				used = budget.Used
			}
			b.ReportMetric(float64(used), "tries/op")
		})
	}
}
