package capacity_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dralloc/dralloc/capacity"
	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"
)

// TestConsumedRangeIsWhatUpstreamRecords checks the promise of the range extension: the consumed capacity
// that ConsumedRange says to write into the AllocationResult is exactly what the upstream allocator records
// when the claim requests that amount as a point, on the same device with the same shares. So the
// extension's allocation results are ones Kubernetes itself could have produced.
func TestConsumedRangeIsWhatUpstreamRecords(t *testing.T) {
	var compared, widened atomic.Int64
	rapid.Check(t, func(t *rapid.T) {
		dc := genCapacity(t, "c")
		device := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": dc}
		ledger := capacity.NewLedger(device)
		var shares []qmap
		for i := range rapid.IntRange(0, 2).Draw(t, "shares") {
			s := qmap{"memory": milliQ(rapid.Int64Range(0, dc.Value.MilliValue()/3).Draw(t, fmt.Sprint("share", i)))}
			shares = append(shares, s)
			ledger.Add(s)
		}
		req := capacity.RangeRequest{
			Min:       qmap{"memory": milliQ(rapid.Int64Range(0, dc.Value.MilliValue()).Draw(t, "min"))},
			Preferred: qmap{"memory": milliQ(rapid.Int64Range(0, dc.Value.MilliValue()+1000).Draw(t, "preferred"))},
		}
		res, err := capacity.ConsumedRange(req, device, ledger, capacity.Options{})
		if err != nil {
			return
		}
		dev := resourceapi.Device{Name: "dev-0", AllowMultipleAllocations: ptrBool(true), Capacity: device}
		results, err := allocateUpstream(true, nodeSlices(nil, dev), nil, shares, claimFor(res.Consumed, nil))
		if err != nil {
			t.Fatalf("upstream: %v", err)
		}
		compared.Add(1)
		if len(res.Headroom) > 0 {
			widened.Add(1)
		}
		if results == nil {
			t.Fatalf("upstream does not allocate the recorded %v", res.Consumed)
		}
		got, want := results[0].Devices.Results[0].ConsumedCapacity["memory"], res.Consumed["memory"]
		if got.Cmp(want) != 0 {
			t.Fatalf("upstream records %s for a request of %s", got.String(), want.String())
		}
	})
	t.Logf("compared %d range results with the upstream allocator, %d above the minimum", compared.Load(), widened.Load())
}
