package capacity

import (
	"errors"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func gpuInventory(t *testing.T) *Inventory {
	t.Helper()
	shared := true
	node := func(n string) *string { return &n }
	mig := []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: q("10Gi")}}}}
	slices := []*resourceapi.ResourceSlice{
		{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.nvidia.com", Pool: resourceapi.ResourcePool{Name: "node-1"}, NodeName: node("node-1"), Devices: []resourceapi.Device{
			{Name: "gpu-0", Capacity: cmap{"memory": {Value: q("80Gi")}}},
			{Name: "gpu-1", Capacity: cmap{"memory": {Value: q("80Gi")}}},
			{Name: "mig-0", Capacity: cmap{"memory": {Value: q("10Gi")}}, ConsumesCounters: mig},
			{Name: "shared-0", AllowMultipleAllocations: &shared, Capacity: cmap{"memory": {Value: q("40Gi"), RequestPolicy: rangePolicy("1Gi", "1Gi", "", "4Gi")}}},
		}}},
		{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.nvidia.com", Pool: resourceapi.ResourcePool{Name: "node-2"}, NodeName: node("node-2"), Devices: []resourceapi.Device{
			{Name: "gpu-0", Capacity: cmap{"memory": {Value: q("40Gi")}}},
		}}},
	}
	inv, err := NewInventory(slices, func(_ string, d *resourceapi.Device) ([]string, error) {
		switch {
		case d.Name == "mig-0":
			return []string{"mig"}, nil
		case d.Name == "shared-0":
			return []string{"shared"}, nil
		}
		return []string{"gpu"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func exact(class string, mode resourceapi.DeviceAllocationMode, count int64) *resourceapi.ExactDeviceRequest {
	return &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: mode, Count: count}
}

func TestChargeClaim(t *testing.T) {
	admin := true
	inv := gpuInventory(t)
	withCap := exact("shared", resourceapi.DeviceAllocationModeExactCount, 2)
	withCap.Capacity = &resourceapi.CapacityRequirements{Requests: qmap{"memory": q("6Gi")}}
	adminReq := exact("gpu", "", 0)
	adminReq.AdminAccess = &admin
	tests := []struct {
		name     string
		requests []resourceapi.DeviceRequest
		inv      *Inventory
		want     string
	}{
		{name: "ExactCount charges count devices and the largest device's capacity", inv: inv,
			requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: exact("gpu", resourceapi.DeviceAllocationModeExactCount, 2)}},
			want:     "gpu: 2 devices, memory 160Gi"},
		{name: "admin access charges nothing", inv: inv, requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: adminReq}}, want: ""},
		{name: "All charges the node with the most devices of the class", inv: inv,
			requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: exact("gpu", resourceapi.DeviceAllocationModeAll, 0)}},
			want:     "gpu: 2 devices, memory 160Gi"},
		{name: "All without inventory is charged as unbounded, not rejected",
			requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: exact("gpu", resourceapi.DeviceAllocationModeAll, 0)}},
			want:     "unbounded: gpu"},
		{name: "firstAvailable charges the worst alternative entry by entry", inv: inv,
			requests: []resourceapi.DeviceRequest{{Name: "r", FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "big", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
				{Name: "small", DeviceClassName: "mig", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
			}}},
			want: "gpu: 1 devices, memory 80Gi; mig: 2 devices, memory 20Gi; counter memory 20Gi"},
		{name: "shares charge the policy-rounded capacity", inv: inv, requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: withCap}},
			want: "shared: 2 devices, memory 18Gi"},
		{name: "without inventory capacity is charged as requested", requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: withCap}},
			want: "shared: 2 devices, memory 12Gi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ChargeClaim(resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: tc.requests}}, tc.inv, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.String(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	_, err := ChargeClaim(resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: exact("gpu", "Some", 1)}}}}, nil, Options{})
	if !errors.Is(err, ErrQuota) || err.Error() != `spec.devices.requests[0].exactly.allocationMode: cannot charge claim: unsupported mode "Some"` {
		t.Fatalf("error %v", err)
	}
}

func TestChargeAllocation(t *testing.T) {
	inv := gpuInventory(t)
	share := "share-1"
	admin := true
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "c"}}
	claim.Spec.Devices.Requests = []resourceapi.DeviceRequest{
		{Name: "a", Exactly: exact("gpu", "", 1)},
		{Name: "b", FirstAvailable: []resourceapi.DeviceSubRequest{{Name: "small", DeviceClassName: "mig"}}},
		{Name: "s", Exactly: exact("shared", "", 1)},
		{Name: "adm", Exactly: exact("gpu", "", 1)},
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "a", Driver: "gpu.nvidia.com", Pool: "node-2", Device: "gpu-0"},
		{Request: "b/small", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "mig-0"},
		{Request: "s", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "shared-0", ShareID: (*types.UID)(&share), ConsumedCapacity: qmap{"memory": q("9Gi")}},
		{Request: "adm", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "gpu-1", AdminAccess: &admin},
	}}}
	c, err := ChargeAllocation(claim, inv)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.String(), "gpu: 1 devices, memory 40Gi; mig: 1 devices, memory 10Gi; shared: 1 devices, memory 9Gi; counter memory 10Gi"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	claim.Status.Allocation.Devices.Results[0].Request = "gone"
	if _, err := ChargeAllocation(claim, inv); !errors.Is(err, ErrQuota) {
		t.Fatalf("error %v", err)
	}
}

func TestChargeDoesNotMutateInventory(t *testing.T) {
	inv := gpuInventory(t)
	value := func() string { v := inv.Classes["gpu"][0].Capacity["memory"].Value; return v.String() }
	before := value()
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		{Name: "r", Exactly: exact("gpu", resourceapi.DeviceAllocationModeAll, 0)}}}}
	for range 3 {
		if _, err := ChargeClaim(spec, inv, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if after := value(); after != before {
		t.Fatalf("inventory changed: %s → %s", before, after)
	}
}

// An Inventory built as a struct literal indexes itself once, on first use, so that concurrent charges do not
// race (run with -race).
func TestInventoryLiteralConcurrentCharges(t *testing.T) {
	built := gpuInventory(t)
	inv := &Inventory{Classes: built.Classes}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "c"}}
	claim.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "a", Exactly: exact("gpu", "", 1)}}
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "a", Driver: "gpu.nvidia.com", Pool: "node-2", Device: "gpu-0"},
	}}}
	want, err := ChargeAllocation(claim, built)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			got, err := ChargeAllocation(claim, inv)
			if err == nil && got.String() != want.String() {
				err = fmt.Errorf("charge %q, want %q", got, want)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// The 32-device limit is the whole claim's, as the allocator applies resourceapi.AllocationResultsMaxSize:
// two requests of 20 need at least 40 devices, so no node can allocate the claim; a firstAvailable request
// needs at least its smallest alternative, a request for All devices none before a node is known.
func TestChargeClaimLimitIsPerClaim(t *testing.T) {
	inv := gpuInventory(t)
	twenty := func(name, class string) resourceapi.DeviceRequest {
		return resourceapi.DeviceRequest{Name: name, Exactly: exact(class, resourceapi.DeviceAllocationModeExactCount, 20)}
	}
	alternatives := resourceapi.DeviceRequest{Name: "alt", FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "many", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 20},
		{Name: "few", DeviceClassName: "mig", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 12},
	}}
	all := resourceapi.DeviceRequest{Name: "all", Exactly: exact("gpu", resourceapi.DeviceAllocationModeAll, 0)}
	admin := true
	adminTwenty := twenty("adm", "gpu")
	adminTwenty.Exactly.AdminAccess = &admin
	tests := []struct {
		name     string
		requests []resourceapi.DeviceRequest
		want     string // the error; "" when the claim is charged
	}{
		{name: "two requests of 20 are 40 devices, past the limit of 32",
			requests: []resourceapi.DeviceRequest{twenty("a", "gpu"), twenty("b", "mig")},
			want:     "spec.devices.requests[1]: cannot charge claim: adding 20 devices exceeds the claim limit of 32, with 20 already accounted for"},
		{name: "20 and firstAvailable of at least 12 are 32 devices, at the limit",
			requests: []resourceapi.DeviceRequest{twenty("a", "gpu"), alternatives}},
		{name: "20, firstAvailable of at least 12 and one more are 33 devices",
			requests: []resourceapi.DeviceRequest{twenty("a", "gpu"), alternatives, {Name: "one", Exactly: exact("gpu", "", 0)}},
			want:     "spec.devices.requests[2]: cannot charge claim: adding 1 devices exceeds the claim limit of 32, with 32 already accounted for"},
		{name: "admin access counts towards the limit although it charges nothing",
			requests: []resourceapi.DeviceRequest{twenty("a", "gpu"), adminTwenty},
			want:     "spec.devices.requests[1]: cannot charge claim: adding 20 devices exceeds the claim limit of 32, with 20 already accounted for"},
		{name: "All counts no device before a node is known",
			requests: []resourceapi.DeviceRequest{twenty("a", "gpu"), all}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, inv := range []*Inventory{nil, inv} {
				_, err := ChargeClaim(resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: tc.requests}}, inv, Options{})
				switch {
				case tc.want == "" && err != nil:
					t.Fatalf("inventory %v: %v", inv != nil, err)
				case tc.want != "" && (!errors.Is(err, ErrQuota) || err.Error() != tc.want):
					t.Fatalf("inventory %v: error %v, want %s", inv != nil, err, tc.want)
				}
			}
		})
	}
}
