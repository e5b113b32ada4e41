package capacity

import (
	"errors"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// Quantities such as 1E100000000 parse, but any arithmetic on them runs for minutes: every entry point
// refuses them first, naming the field.
func TestUnboundedQuantitiesAreRefusedBeforeArithmetic(t *testing.T) {
	huge, zeroHuge := q("1E100000000"), q("0E100000000")
	shared := true
	t.Run("Consumed refuses an unbounded request", func(t *testing.T) {
		_, err := Consumed(qmap{"memory": huge}, cmap{"memory": {Value: q("40Gi")}}, Options{})
		wantErr(t, err, ErrUnboundedQuantity, `capacity "memory": request`)
	})
	t.Run("Consumed refuses an unbounded capacity value", func(t *testing.T) {
		_, err := Consumed(qmap{"memory": q("1Gi")}, cmap{"memory": {Value: zeroHuge}}, Options{})
		wantErr(t, err, ErrUnboundedQuantity, `capacity "memory": value`)
	})
	t.Run("Consumed refuses an unbounded policy step", func(t *testing.T) {
		p := rangePolicy("1Gi", "1Gi", "", "4Gi")
		p.ValidRange.Step = &huge
		_, err := Consumed(qmap{"memory": q("1Gi")}, cmap{"memory": {Value: q("40Gi"), RequestPolicy: p}}, Options{})
		wantErr(t, err, ErrUnboundedQuantity, "requestPolicy.validRange.step")
	})
	t.Run("Counters with an unbounded counter admit no consuming device", func(t *testing.T) {
		c := NewCounters([]resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: huge}}}})
		wantErr(t, c.Err(), ErrUnboundedQuantity, "sharedCounters[0].counters[memory].value")
		if c.Fits([]resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: q("1Gi")}}}}) {
			t.Error("a device fits a pool with an unbounded counter")
		}
	})
	t.Run("an unbounded consumption does not fit", func(t *testing.T) {
		c := NewCounters([]resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: q("80Gi")}}}})
		consumes := []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: zeroHuge}}}}
		if c.Fits(consumes) {
			t.Error("a device with an unbounded consumption fits")
		}
		c.Add(consumes) // recorded without arithmetic on the unbounded amount
		if r, _ := c.Remaining("gpu-0", "memory"); r.Cmp(q("80Gi")) != 0 {
			t.Errorf("remaining %s, want 80Gi", r.String())
		}
	})
	t.Run("NewInventory refuses an unbounded capacity", func(t *testing.T) {
		slices := []*resourceapi.ResourceSlice{{Spec: resourceapi.ResourceSliceSpec{Driver: "d", Devices: []resourceapi.Device{
			{Name: "dev-0", AllowMultipleAllocations: &shared, Capacity: cmap{"memory": {Value: huge}}}}}}}
		_, err := NewInventory(slices, func(string, *resourceapi.Device) ([]string, error) { return nil, nil })
		wantErr(t, err, ErrUnboundedQuantity, "spec.devices[0].capacity[memory].value")
	})
	t.Run("ChargeClaim refuses an unbounded request", func(t *testing.T) {
		r := exact("gpu", resourceapi.DeviceAllocationModeExactCount, 1)
		r.Capacity = &resourceapi.CapacityRequirements{Requests: qmap{"memory": huge}}
		_, err := ChargeClaim(spec(resourceapi.DeviceRequest{Name: "r", Exactly: r}), nil, Options{})
		wantErr(t, err, ErrUnboundedQuantity, "spec.devices.requests[0].exactly.capacity.requests[memory]")
	})
}

func TestChargeClaimRejectsImpossibleCounts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		count int64
	}{
		{"a negative count", -1},
		{"the most negative count", -1 << 63},
		{"a count above the claim limit", resourceapi.AllocationResultsMaxSize + 1},
		{"a count that overflows when multiplied", 1 << 62},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := exact("gpu", resourceapi.DeviceAllocationModeExactCount, tc.count)
			r.Capacity = &resourceapi.CapacityRequirements{Requests: qmap{"memory": q("8Gi")}}
			c, err := ChargeClaim(spec(resourceapi.DeviceRequest{Name: "r", Exactly: r}), gpuInventory(t), Options{})
			wantErr(t, err, ErrQuota, "spec.devices.requests[0].exactly.count")
			if err == nil {
				t.Logf("charge: %s", c)
			}
		})
	}
	r := exact("gpu", resourceapi.DeviceAllocationModeExactCount, resourceapi.AllocationResultsMaxSize)
	c, err := ChargeClaim(spec(resourceapi.DeviceRequest{Name: "r", Exactly: r}), nil, Options{})
	if err != nil || c.Devices["gpu"] != resourceapi.AllocationResultsMaxSize {
		t.Errorf("count at the claim limit: %v, %v", c, err)
	}
}

func spec(reqs ...resourceapi.DeviceRequest) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}}
}

func wantErr(t *testing.T, err, sentinel error, field string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("got %v, want an error wrapping %v", err, sentinel)
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("error %q does not name %s", err, field)
	}
}
