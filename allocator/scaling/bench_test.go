package scaling_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/inventory"
)

// tenTypes are the four DGX profiles in dynamic MIG and whole-GPU mode, and two smaller H100 nodes.
func tenTypes(b *testing.B) []scaling.NodeType {
	var out []scaling.NodeType
	for i, name := range inventory.ProfileNames() {
		p := profile(b, name)
		out = append(out, scaling.NodeType{Template: p, Cost: float64(i + 2)})
		whole := p
		whole.Name, whole.Mode = name+"-whole", inventory.ModeGPU
		out = append(out, scaling.NodeType{Template: whole, Cost: float64(i + 2)})
	}
	for _, n := range []int{2, 4} {
		p := profile(b, "dgxh100")
		p.Name = fmt.Sprintf("h100x%d", n)
		p.Node.GPUs = p.Node.GPUs[:n]
		out = append(out, scaling.NodeType{Template: p, Cost: float64(n) / 2})
	}
	return out
}

// thousandPods are 1,000 pending pods: GPUs by extended resource (1 to 4), NVIDIA's MIG demo and
// claims for two GPUs, in a fixed mix.
func thousandPods() []scaling.Pending {
	var out []scaling.Pending
	for i := range 1000 {
		name := fmt.Sprintf("p%04d", i)
		switch i % 4 {
		case 0, 1:
			out = append(out, single(extPod(name, int64(1+i%4+i%3))))
		case 2:
			out = append(out, single(claimPod(name, "mig-devices")))
		case 3:
			out = append(out, single(claimPod(name, "two-gpus")))
		}
	}
	return out
}

func BenchmarkFits(b *testing.B) {
	types, pending := tenTypes(b), thousandPods()
	p, err := scaling.New(newCluster(b, nil), types, scaling.Options{})
	must(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Fits(context.Background(), pending); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScaleUp(b *testing.B) {
	types, pending := tenTypes(b), thousandPods()
	p, err := scaling.New(newCluster(b, nil), types, scaling.Options{})
	must(b, err)
	b.ReportAllocs()
	var plan *scaling.Plan
	for b.Loop() {
		if plan, err = p.ScaleUp(context.Background(), pending); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(plan.Nodes)), "nodes")
	b.ReportMetric(float64(plan.Steps), "attempts")
}
