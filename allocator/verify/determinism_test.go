package verify_test

import (
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator/verify"
)

// The reason given for an invalid pool is the same on every run and whatever order the maps of the input
// were filled in: a partition that draws on five counters its counter set does not have is reported for
// the first of them by name.
func TestInvalidPoolReasonIsDeterministic(t *testing.T) {
	names := []string{"e", "c", "a", "d", "b"}
	const want = "counter a not found in counter set gpu-2"
	all := claim("c", resourceapi.DeviceRequest{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeAll}})
	for rotation := range names {
		for run := range 20 {
			in := baseInput()
			counters := map[string]resourceapi.Counter{}
			for i := range names {
				counters[names[(rotation+i)%len(names)]] = resourceapi.Counter{Value: q("1Gi")}
			}
			in.Slices[2].Spec.Devices[0].ConsumesCounters[0].Counters = counters
			vs, err := verify.Check(context.Background(), in, []*resourceapi.ResourceClaim{all},
				[]resourceapi.AllocationResult{local(gpu("r", "gpu-0"))})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range vs {
				if v.Rule == verify.RulePool {
					found = true
					if !strings.HasSuffix(v.Message, want) {
						t.Fatalf("insertion order %d, run %d: got %q, want a message ending in %q", rotation, run, v.Message, want)
					}
				}
			}
			if !found {
				t.Fatalf("insertion order %d, run %d: no pool violation in %v", rotation, run, vs)
			}
		}
	}
}
