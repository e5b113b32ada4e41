package bench

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// BenchmarkDGX is scenario 6: a fleet of DGX H100 nodes as inventory publishes them in dynamic MIG (eight
// GPUs, one shared counter set per GPU, a whole-GPU device and the MIG placements drawing on it), asked for
// one MIG device, two whole GPUs, a whole GPU else a MIG device (firstAvailable), and, with four GPUs of
// every node in use, for five whole GPUs.
func BenchmarkDGX(b *testing.B) {
	cluster, err := DGXFleet(100, "dgxh100")
	if err != nil {
		b.Fatal(err)
	}
	half := cluster.HalfUsedGPUs(4)
	for _, tc := range []struct {
		name    string
		cluster Cluster
		claim   *resourceapi.ResourceClaim
		want    Outcome
	}{
		{"mig-1g.10gb", cluster, MIGClaim("1g.10gb", 1), Fits},
		{"whole-2", cluster, WholeGPUsClaim(2), Fits},
		{"whole-else-mig", cluster, WholeElseMIGClaim("1g.10gb"), Fits},
		{"half-used-whole-5", half, WholeGPUsClaim(5), DoesNotFit},
	} {
		for _, impl := range Impls {
			b.Run(fmt.Sprintf("nodes=100/%s/%s", tc.name, impl.Name), func(b *testing.B) {
				filterLoop(b, impl, tc.cluster, tc.claim, tc.want)
			})
		}
	}
}

// BenchmarkNUMA is scenario 7: nodes of 16 and 32 GPUs, eight on each NUMA node and two on each PCIe root,
// asked for GPUs that share a NUMA node or a PCIe root (matchAttribute), as many as one has (fits) and
// one more (fits nowhere).
func BenchmarkNUMA(b *testing.B) {
	for _, gpus := range []int{16, 32} {
		cluster := NUMAFleet(10, gpus, 8)
		for _, tc := range []struct {
			name      string
			attribute resourceapi.FullyQualifiedName
			count     int64
			want      Outcome
		}{
			{"numaNode-8", "resource.kubernetes.io/numaNode", 8, Fits},
			{"numaNode-9", "resource.kubernetes.io/numaNode", 9, DoesNotFit},
			{"pcieRoot-2", "resource.kubernetes.io/pcieRoot", 2, Fits},
			{"pcieRoot-3", "resource.kubernetes.io/pcieRoot", 3, DoesNotFit},
		} {
			for _, impl := range Impls {
				b.Run(fmt.Sprintf("gpus=%d/%s/%s", gpus, tc.name, impl.Name), func(b *testing.B) {
					filterLoop(b, impl, cluster, AlignedClaim(tc.count, tc.attribute), tc.want)
				})
			}
		}
	}
}
