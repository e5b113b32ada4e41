package allocator_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/inventory"
)

// quotaBenchNode is a DGX H100 in dynamic MIG whose GPUs 0 and 1 team-a holds whole, and team-a's job:
// a whole GPU or else a 3g.40gb partition (only the partition with migOnly).
func quotaBenchNode(b *testing.B, opts allocator.Options, migOnly bool) (*allocator.Snapshot, *v1.Node, []*resourceapi.ResourceClaim) {
	s, n := mixedNodeWith(b, "dgxh100", inventory.ModeDynamicMIG, opts, 0)
	held := allocatedClaim("held", result("gpu.nvidia.com", "node-0", "gpu-0"), result("gpu.nvidia.com", "node-0", "gpu-1"))
	held.Namespace = "team-a"
	held.Spec.Devices.Requests[0].Exactly.DeviceClassName = "gpu"
	if err := s.AddOrUpdateClaim(held); err != nil {
		b.Fatal(err)
	}
	mig := sub("mig", "mig", 1, `device.attributes["gpu.nvidia.com"].profile == "3g.40gb"`)
	job := claim("job", firstAvailable("gpu", sub("whole", "gpu", 1), mig))
	if migOnly {
		job = claim("job", firstAvailable("gpu", mig))
	}
	job.Namespace = "team-a"
	return s, n, []*resourceapi.ResourceClaim{job}
}

// BenchmarkQuotaAllocate allocates team-a's job on quotaBenchNode: without quota (it takes GPU 2
// whole), under limits it does not reach (the same devices, the quota's cost alone), with its whole-GPU
// quota used up (the whole-GPU alternative is refused for the quota, a partition is taken), and, to
// compare with that, the job with only the partition alternative without quota; and Fits, the
// filter's question, in the same cases.
func BenchmarkQuotaAllocate(b *testing.B) {
	limit := func(class, max string) allocator.QuotaLimit {
		return allocator.QuotaLimit{Owner: "team-a", Class: class, Kind: allocator.QuotaDevices, Max: quantity(max)}
	}
	for _, tc := range []struct {
		name    string
		quota   *allocator.Quota
		migOnly bool
		want    string
	}{
		{"none", nil, false, "gpu/whole"},
		{"roomy", &allocator.Quota{Limits: []allocator.QuotaLimit{limit("gpu", "8"), limit("mig", "28")}}, false, "gpu/whole"},
		{"fallback", &allocator.Quota{Limits: []allocator.QuotaLimit{limit("gpu", "2"), limit("mig", "28")}}, false, "gpu/mig"},
		{"migonly", nil, true, "gpu/mig"},
	} {
		s, n, job := quotaBenchNode(b, allocator.Options{NoCopy: true, Quota: tc.quota}, tc.migOnly)
		ctx := context.Background()
		b.Run("Allocate/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.Allocate(ctx, n, job)
				if err != nil || res[0].Devices.Results[0].Request != tc.want {
					b.Fatalf("Allocate: %v, %v; want %s", res, err, tc.want)
				}
			}
		})
		b.Run("Fits/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if fits, err := s.Fits(ctx, n, job); err != nil || !fits {
					b.Fatalf("Fits: %v, %v", fits, err)
				}
			}
		})
	}
}
