package capacity_test

import (
	"errors"
	"fmt"

	"github.com/dralloc/dralloc/capacity"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator/gates"
)

func q(s string) resource.Quantity { return resource.MustParse(s) }
func qp(s string) *resource.Quantity {
	v := q(s)
	return &v
}

// A GPU shared between inference servers: memory in steps of 4Gi from 4Gi, at most 40Gi per share.
var sharedGPU = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
	"memory": {Value: q("80Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{
		Default:    qp("4Gi"),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: qp("4Gi"), Max: qp("40Gi"), Step: qp("4Gi")},
	}},
}

func ExampleConsumed() {
	for _, req := range []string{"1Gi", "10Gi", "48Gi"} {
		got, err := capacity.Consumed(map[resourceapi.QualifiedName]resource.Quantity{"memory": q(req)}, sharedGPU, capacity.Options{})
		if errors.Is(err, capacity.ErrUnsuitable) {
			fmt.Printf("%s: unsuitable\n", req)
			continue
		}
		m := got["memory"]
		fmt.Printf("%s: consumes %s\n", req, m.String())
	}
	// Output:
	// 1Gi: consumes 4Gi
	// 10Gi: consumes 12Gi
	// 48Gi: unsuitable
}

func ExampleConsumed_fractional() {
	cores := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"cores": {Value: q("4"), RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default: qp("100m"), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: qp("0"), Step: qp("100m")}}},
	}
	req := map[resourceapi.QualifiedName]resource.Quantity{"cores": q("250m")}
	fractional, _ := capacity.Consumed(req, cores, capacity.Options{})
	integerOnly := gates.Default()
	integerOnly.DRAFractionalCapacityRange = false
	integer, _ := capacity.Consumed(req, cores, capacity.Options{Features: &integerOnly})
	f, i := fractional["cores"], integer["cores"]
	fmt.Println(f.String(), i.String())
	// Output: 300m 1
}

func ExampleValid() {
	fmt.Println(capacity.Valid(q("12Gi"), sharedGPU["memory"], capacity.Options{}), capacity.Valid(q("10Gi"), sharedGPU["memory"], capacity.Options{}))
	// Output: true false
}

func ExampleLedger() {
	l := capacity.NewLedger(sharedGPU)
	share := map[resourceapi.QualifiedName]resource.Quantity{"memory": q("40Gi")}
	l.Add(share)
	fmt.Println("second share fits:", l.Fits(share))
	l.Add(share)
	fmt.Println("third share fits:", l.Fits(share))
	l.Remove(share)
	avail, _ := l.Available("memory")
	fmt.Println("available after removing one:", avail.String())
	// Output:
	// second share fits: true
	// third share fits: false
	// available after removing one: 40Gi
}

func ExampleCounters() {
	// One physical GPU publishes 7 compute slices; a 3g partition uses 3 of them, a 4g partition 4.
	c := capacity.NewCounters([]resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"slices": {Value: q("7")}}}})
	part := func(n string) []resourceapi.DeviceCounterConsumption {
		return []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{"slices": {Value: q(n)}}}}
	}
	c.Add(part("3"))
	fmt.Println("4g fits:", c.Fits(part("4")))
	c.Add(part("4"))
	fmt.Println("1g fits:", c.Fits(part("1")))
	// Output:
	// 4g fits: true
	// 1g fits: false
}

func ExampleConsumedRange() {
	// Two shares already hold 56Gi; an inference server needs 4Gi and prefers 30Gi.
	l := capacity.NewLedger(sharedGPU)
	l.Add(map[resourceapi.QualifiedName]resource.Quantity{"memory": q("56Gi")})
	res, err := capacity.ConsumedRange(capacity.RangeRequest{
		Min:       map[resourceapi.QualifiedName]resource.Quantity{"memory": q("4Gi")},
		Preferred: map[resourceapi.QualifiedName]resource.Quantity{"memory": q("30Gi")},
	}, sharedGPU, l, capacity.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, m, h := res.Consumed["memory"], res.Minimum["memory"], res.Headroom["memory"]
	fmt.Printf("record %s (minimum %s, headroom %s)\n", c.String(), m.String(), h.String())
	// Output: record 24Gi (minimum 4Gi, headroom 20Gi)
}

func exampleInventory() *capacity.Inventory {
	node := "node-1"
	slices := []*resourceapi.ResourceSlice{{Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.nvidia.com", Pool: resourceapi.ResourcePool{Name: node}, NodeName: &node,
		Devices: []resourceapi.Device{
			{Name: "gpu-0", Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: q("80Gi")}}},
			{Name: "gpu-1", Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: q("80Gi")}}},
		},
	}}}
	inv, _ := capacity.NewInventory(slices, func(string, *resourceapi.Device) ([]string, error) { return []string{"gpu"}, nil })
	return inv
}

func ExampleNewInventory() {
	inv := exampleInventory()
	fmt.Println(len(inv.Classes["gpu"]), "devices in class gpu")
	// Output: 2 devices in class gpu
}

func ExampleChargeClaim() {
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		{Name: "all", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeAll}},
	}}}
	withInventory, _ := capacity.ChargeClaim(spec, exampleInventory(), capacity.Options{})
	without, _ := capacity.ChargeClaim(spec, nil, capacity.Options{})
	fmt.Println(withInventory)
	fmt.Println(without)
	// Output:
	// gpu: 2 devices, memory 160Gi
	// unbounded: gpu
}

func ExampleChargeAllocation() {
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train"}}
	claim.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", Count: 1}}}
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "gpu-1"},
	}}}
	c, _ := capacity.ChargeAllocation(claim, exampleInventory())
	fmt.Println(c)
	// Output: gpu: 1 devices, memory 80Gi
}

// ValidateQuantity refuses quantities that parse but would make any arithmetic on them unbounded.
func ExampleValidateQuantity() {
	for _, s := range []string{"80Gi", "1500m", "1e19", "1E100000000", "0E100000000"} {
		err := capacity.ValidateQuantity(resource.MustParse(s))
		fmt.Printf("%s: %v\n", s, err)
	}
	// Output:
	// 80Gi: <nil>
	// 1500m: <nil>
	// 1e19: <nil>
	// 1E100000000: quantity out of bounds: decimal exponent 100000000 is outside [-9, 36]
	// 0E100000000: quantity out of bounds: decimal exponent 100000000 is outside [-9, 36]
}

// ValidateCapacity checks every quantity of a device capacity and names the one that fails.
func ExampleValidateCapacity() {
	step := resource.MustParse("0e-100000000")
	dc := resourceapi.DeviceCapacity{Value: resource.MustParse("40Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: qp("1Gi"), Step: &step}}}
	fmt.Println(capacity.ValidateCapacity(dc))
	// Output:
	// requestPolicy.validRange.step: quantity out of bounds: decimal exponent -100000000 is outside [-9, 36]
}

// A pool whose shared counter is an unbounded quantity: the counter is never computed with, Err names it,
// and no device that consumes counters fits.
func ExampleCounters_Err() {
	c := capacity.NewCounters([]resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{
		"memory": {Value: q("0E100000000")}}}})
	fmt.Println(c.Err())
	fmt.Println(c.Fits([]resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: q("1Gi")}}}}))
	// Output:
	// sharedCounters[0].counters[memory].value: quantity out of bounds: decimal exponent 100000000 is outside [-9, 36]
	// false
}

// A search that explores one branch clones the ledger, so that the original is untouched when it backtracks.
func ExampleLedger_Clone() {
	l := capacity.NewLedger(sharedGPU)
	share := map[resourceapi.QualifiedName]resource.Quantity{"memory": q("40Gi")}
	l.Add(share)
	branch := l.Clone()
	branch.Add(share)
	used, inBranch := l.Used("memory"), branch.Used("memory")
	fmt.Println(used.String(), inBranch.String())
	// Output: 40Gi 80Gi
}

func ExampleCounters_Remaining() {
	c := capacity.NewCounters([]resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"slices": {Value: q("7")}}}})
	c.Add([]resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{"slices": {Value: q("3")}}}})
	left, ok := c.Remaining("gpu-0", "slices")
	fmt.Println(left.String(), ok)
	left, ok = c.Remaining("gpu-1", "slices") // a counter set the pool does not define
	fmt.Println(left.String(), ok)
	// Output:
	// 4 true
	// 0 false
}
