package capacity_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dralloc/dralloc/capacity"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/gates"
)

type qmap = map[resourceapi.QualifiedName]resource.Quantity

func milliQ(m int64) resource.Quantity            { return *resource.NewMilliQuantity(m, resource.DecimalSI) }
func ptrQ(q resource.Quantity) *resource.Quantity { return &q }

// genCapacity draws a capacity as a driver would publish it, valid for the API: a range policy with min,
// max and default on the step grid, a list of valid values, an open range, or no policy; amounts in
// milli-units from a few scales, so that fractional and integer arithmetic both run.
func genCapacity(t *rapid.T, label string) resourceapi.DeviceCapacity {
	unit := rapid.SampledFrom([]int64{1, 7, 100, 250, 1000, 3000, 1 << 30 * 1000}).Draw(t, label+"unit")
	switch rapid.IntRange(0, 3).Draw(t, label+"policy") {
	case 0:
		return resourceapi.DeviceCapacity{Value: milliQ(unit * rapid.Int64Range(0, 64).Draw(t, label+"value"))}
	case 1:
		lo := unit * rapid.Int64Range(0, 8).Draw(t, label+"min")
		step := unit * rapid.Int64Range(1, 8).Draw(t, label+"step")
		k := rapid.Int64Range(1, 16).Draw(t, label+"k")
		hi := lo + k*step
		def := lo + rapid.Int64Range(0, k).Draw(t, label+"default")*step
		r := &resourceapi.CapacityRequestPolicyRange{Min: ptrQ(milliQ(lo)), Step: ptrQ(milliQ(step))}
		if rapid.Bool().Draw(t, label+"hasMax") {
			r.Max = ptrQ(milliQ(hi))
		}
		return resourceapi.DeviceCapacity{Value: milliQ(hi + unit*rapid.Int64Range(0, 4).Draw(t, label+"slack")),
			RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptrQ(milliQ(def)), ValidRange: r}}
	case 2:
		lo := unit * rapid.Int64Range(0, 8).Draw(t, label+"min")
		return resourceapi.DeviceCapacity{Value: milliQ(lo + unit*rapid.Int64Range(0, 16).Draw(t, label+"slack")),
			RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptrQ(milliQ(lo)), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptrQ(milliQ(lo))}}}
	default:
		n := rapid.IntRange(1, 10).Draw(t, label+"n")
		var vals []resource.Quantity
		v := int64(0)
		for i := 0; i < n; i++ {
			v += unit * rapid.Int64Range(1, 4).Draw(t, label+"gap")
			vals = append(vals, milliQ(v))
		}
		def := vals[rapid.IntRange(0, n-1).Draw(t, label+"default")]
		return resourceapi.DeviceCapacity{Value: milliQ(v), RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: &def, ValidValues: vals}}
	}
}

func genRequest(t *rapid.T, label string, dc resourceapi.DeviceCapacity) resource.Quantity {
	switch rapid.IntRange(0, 9).Draw(t, label+"kind") {
	case 0:
		// Far past what int64 milli-units hold: exercises the "not representable" errors.
		return resource.MustParse(rapid.SampledFrom([]string{"1e17", "9223372036854775807", "2e19"}).Draw(t, label+"huge"))
	case 1:
		return milliQ(rapid.Int64Range(0, 5000).Draw(t, label+"small"))
	}
	return milliQ(rapid.Int64Range(0, dc.Value.MilliValue()*5/4+1000).Draw(t, label+"request"))
}

// TestConsumedAgreesWithUpstream allocates one request on a one-device pool whose device has
// allowMultipleAllocations, with some shares already allocated, and compares: whether the device is chosen
// (ErrUnsuitable or a full ledger ⇔ no result), whether upstream fails hard (⇔ a non-ErrUnsuitable error),
// and the consumed capacity written to the AllocationResult.
func TestConsumedAgreesWithUpstream(t *testing.T) {
	var compared, allocated, unsuitable, fatal atomic.Int64
	rapid.Check(t, func(t *rapid.T) {
		fractional := rapid.Bool().Draw(t, "fractional")
		features := gates.Default()
		features.DRAFractionalCapacityRange = fractional
		opts := capacity.Options{Features: &features}
		device := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
		requests := qmap{}
		for i := range rapid.IntRange(1, 3).Draw(t, "capacities") {
			name := resourceapi.QualifiedName(fmt.Sprintf("c%d", i))
			dc := genCapacity(t, string(name))
			device[name] = dc
			if rapid.Bool().Draw(t, string(name)+"requested") {
				requests[name] = genRequest(t, string(name), dc)
			}
		}
		if rapid.IntRange(0, 9).Draw(t, "unknown") == 0 {
			requests["missing"] = milliQ(1)
		}
		// Shares already on the device, as recorded in allocated claims: valid consumptions of small requests.
		var shares []qmap
		ledger := capacity.NewLedger(device)
		for i := range rapid.IntRange(0, 2).Draw(t, "shares") {
			share := qmap{}
			for name, dc := range device {
				share[name] = milliQ(rapid.Int64Range(0, dc.Value.MilliValue()/2).Draw(t, fmt.Sprint("share", i, name)))
			}
			shares = append(shares, share)
			ledger.Add(share)
		}
		var req qmap
		if len(requests) > 0 || rapid.Bool().Draw(t, "emptyRequests") {
			req = requests
		}
		dev := resourceapi.Device{Name: "dev-0", AllowMultipleAllocations: ptrBool(true), Capacity: device}
		results, upErr := allocateUpstream(fractional, nodeSlices(nil, dev), nil, shares, claimFor(req, nil))

		got, err := capacity.Consumed(req, device, opts)
		compared.Add(1)
		switch {
		case err != nil && !errors.Is(err, capacity.ErrUnsuitable):
			fatal.Add(1)
			if upErr == nil {
				t.Fatalf("dralloc: %v; upstream allocated %v", err, results)
			}
			return
		case upErr != nil:
			t.Fatalf("upstream failed (%v), dralloc: %v, %v", upErr, got, err)
		case err != nil:
			unsuitable.Add(1)
			if results != nil {
				t.Fatalf("dralloc: %v; upstream allocated %+v", err, results)
			}
			return
		case !ledger.Fits(got):
			unsuitable.Add(1)
			if results != nil {
				t.Fatalf("dralloc: %v does not fit the ledger; upstream allocated %+v", got, results)
			}
			return
		}
		allocated.Add(1)
		if len(results) != 1 || len(results[0].Devices.Results) != 1 {
			t.Fatalf("dralloc consumes %v; upstream gave %+v", got, results)
		}
		up := results[0].Devices.Results[0].ConsumedCapacity
		if len(up) != len(got) {
			t.Fatalf("dralloc %v, upstream %v", got, up)
		}
		for name, q := range got {
			u, ok := up[name]
			if !ok || u.Cmp(q) != 0 || u.String() != q.String() {
				t.Fatalf("%s: dralloc %s, upstream %s", name, q.String(), u.String())
			}
		}
	})
	t.Logf("compared %d cases with upstream: %d allocated, %d unsuitable, %d invalid", compared.Load(), allocated.Load(), unsuitable.Load(), fatal.Load())
}

func ptrBool(b bool) *bool { return &b }
