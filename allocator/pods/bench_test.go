package pods_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// fleet is 1,000 nodes with 8 GPUs each and the template "one-gpu".
func fleet(b *testing.B, choice pods.Choice) *pods.Cluster {
	b.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	for i := range 1000 {
		name := fmt.Sprintf("node-%04d", i)
		must(b, snap.AddOrUpdateNode(node(name, nil)))
		must(b, snap.AddOrUpdateSlice(gpus(name, 8)))
	}
	must(b, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	c := pods.New(snap, pods.Options{Choice: choice, NameSuffix: fixedSuffixes()})
	must(b, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	return c
}

// BenchmarkPlace places pods one by one on a 1,000-node fleet, assuming each before the next: one op
// is one pod (resolve its claim from a template, filter every node, allocate, assume). Every 1,000
// pods the fleet starts empty again (outside the timer).
func BenchmarkPlace(b *testing.B) {
	for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit} {
		b.Run(choice.String(), func(b *testing.B) {
			ctx := context.Background()
			c := fleet(b, choice)
			placed := 0
			ps := make([]*v1.Pod, 1000)
			for i := range ps {
				ps[i] = pod(fmt.Sprintf("pod-%04d", i), "gpu=template:one-gpu")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if placed == len(ps) {
					b.StopTimer()
					c = fleet(b, choice)
					placed = 0
					b.StartTimer()
				}
				p, err := c.Place(ctx, ps[placed])
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Assume(p); err != nil {
					b.Fatal(err)
				}
				placed++
			}
		})
	}
}
