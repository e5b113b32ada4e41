package allocator_test

import (
	"context"
	"strconv"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz/watchdog"
)

// quantityFields puts q into one field of a small cluster that takes a quantity: the slices (a shareable
// device and a partition with shared counters), the class and the claim.
var quantityFields = []struct {
	name string
	set  func(q resource.Quantity, sl []*resourceapi.ResourceSlice, cl *resourceapi.DeviceClass, c *resourceapi.ResourceClaim)
}{
	{"claim capacity request", func(q resource.Quantity, _ []*resourceapi.ResourceSlice, _ *resourceapi.DeviceClass, c *resourceapi.ResourceClaim) {
		c.Spec.Devices.Requests[0].Exactly.Capacity.Requests["memory"] = q
	}},
	{"device capacity", func(q resource.Quantity, sl []*resourceapi.ResourceSlice, _ *resourceapi.DeviceClass, _ *resourceapi.ResourceClaim) {
		sl[1].Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: q}
	}},
	{"request policy default", func(q resource.Quantity, sl []*resourceapi.ResourceSlice, _ *resourceapi.DeviceClass, _ *resourceapi.ResourceClaim) {
		sl[1].Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: quantity("80Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: &q}}
	}},
	{"request policy range", func(q resource.Quantity, sl []*resourceapi.ResourceSlice, _ *resourceapi.DeviceClass, _ *resourceapi.ResourceClaim) {
		sl[1].Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: quantity("80Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &q, Max: &q, Step: &q}}}
	}},
	{"request policy valid values", func(q resource.Quantity, sl []*resourceapi.ResourceSlice, _ *resourceapi.DeviceClass, _ *resourceapi.ResourceClaim) {
		sl[1].Spec.Devices[0].Capacity["memory"] = resourceapi.DeviceCapacity{Value: quantity("80Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default: ptr(quantity("1Gi")), ValidValues: []resource.Quantity{quantity("1Gi"), q}}}
	}},
	{"shared counter", func(q resource.Quantity, sl []*resourceapi.ResourceSlice, _ *resourceapi.DeviceClass, _ *resourceapi.ResourceClaim) {
		sl[0].Spec.SharedCounters[0].Counters["memory"] = resourceapi.Counter{Value: q}
	}},
	{"consumed counter", func(q resource.Quantity, sl []*resourceapi.ResourceSlice, _ *resourceapi.DeviceClass, _ *resourceapi.ResourceClaim) {
		sl[1].Spec.Devices[1].ConsumesCounters[0].Counters["memory"] = resourceapi.Counter{Value: q}
	}},
}

// quantityCluster is the cluster quantityFields edit: a counter slice (8Gi of memory) and a device slice
// with a shareable device of 80Gi and a partition consuming 4Gi, a class for any device, and a claim
// for one device with 1Gi of memory.
func quantityCluster() ([]*resourceapi.ResourceSlice, *resourceapi.DeviceClass, *resourceapi.ResourceClaim) {
	counters := withPool(nodeSlice("s-counters", node1, driverA, "pool-1"), 1, 2)
	counters.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{"memory": {Value: quantity("8Gi")}}}}
	devs := withPool(nodeSlice("s-devices", node1, driverA, "pool-1", shareable("shared-1", "80Gi", nil), partition("part-1", "1g", "4Gi")), 1, 2)
	return []*resourceapi.ResourceSlice{counters, devs}, class("any"), claim("c", withCapacity(exact("req", "any", 1), "1Gi"))
}

// FuzzQuantityFields puts any string that parses as a quantity into every field of slices, classes and
// claims that takes one, and into a CEL quantity literal of a class selector: loading and allocating must
// not panic, must end within the watchdog's limit, must answer the same twice, and must not mutate the
// input. Invalid quantities may be refused with an error.
func FuzzQuantityFields(f *testing.F) {
	for _, s := range []string{"1Gi", "1500m", "0", "1e-9", "1E-100000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		watchdog.Run(t, s, func(ctx context.Context) {
			if watchdog.SlowToParse(s) {
				return
			}
			q, err := resource.ParseQuantity(s)
			if err != nil {
				return
			}
			for _, field := range quantityFields {
				sl, cl, c := quantityCluster()
				field.set(q, sl, cl, c)
				allocateTwice(ctx, t, field.name, sl, cl, c)
			}
			sl, cl, c := quantityCluster()
			cl.Spec.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.capacity["` + driverA +
				`"].?memory.orValue(quantity("0")).compareTo(quantity(` + strconv.Quote(s) + `)) >= 0`}}}
			allocateTwice(ctx, t, "CEL quantity literal", sl, cl, c)
		})
	})
}

// allocateTwice loads the objects and allocates the claim twice, failing t when the answers differ or
// an input changed. Errors are answers too. It does so with a snapshot that validates what it is given
// and with one that trusts it (Options.TrustAPIServer), because the API server stores quantities such as
// 1E100000000 that validation refuses: the allocator must stay bounded on them too.
func allocateTwice(ctx context.Context, t *testing.T, field string, sl []*resourceapi.ResourceSlice, cl *resourceapi.DeviceClass, c *resourceapi.ResourceClaim) {
	t.Helper()
	before := []any{sl[0].DeepCopy(), sl[1].DeepCopy(), cl.DeepCopy(), c.DeepCopy()}
	run := func(trusted bool) (string, error) {
		s := allocator.NewSnapshot(allocator.Options{ShareIDs: sequentialShareIDs(), TrustAPIServer: trusted})
		for _, o := range sl {
			if err := s.AddOrUpdateSlice(o); err != nil {
				return "", err
			}
		}
		if err := s.AddOrUpdateClass(cl); err != nil {
			return "", err
		}
		r, err := s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{c})
		return describeResults(r), err
	}
	for _, trusted := range []bool{false, true} {
		r1, err1 := run(trusted)
		r2, err2 := run(trusted)
		if ctx.Err() != nil {
			return // too slow: the watchdog reports it
		}
		if r1 != r2 || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("%s (trusted %v): two runs differ: %s %v / %s %v", field, trusted, r1, err1, r2, err2)
		}
	}
	after := []any{sl[0], sl[1], cl, c}
	for i := range before {
		if !equality.Semantic.DeepEqual(before[i], after[i]) {
			t.Fatalf("%s: input %d was mutated", field, i)
		}
	}
}

func describeResults(r []resourceapi.AllocationResult) string {
	var out string
	for _, a := range r {
		for _, d := range a.Devices.Results {
			out += d.Device + " "
			if m, ok := d.ConsumedCapacity["memory"]; ok {
				out += m.String() + " "
			}
		}
	}
	return out
}
