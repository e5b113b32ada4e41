package capacity_test

import (
	"context"
	"testing"

	"github.com/dralloc/dralloc/capacity"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

// BenchmarkShareDecision decides whether one more share of a GPU (memory in 4Gi steps, two shares already
// allocated) fits and what it consumes. Upstream answers with a whole Allocate call on a prepared
// one-device allocator, which also matches the class and builds the result; dralloc with Consumed and
// Ledger.Fits, the two steps its allocator performs for this decision. The numbers are for orientation,
// not a like-for-like comparison of allocators.
func BenchmarkShareDecision(b *testing.B) {
	device := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: milliQ(80 << 30 * 1000),
		RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptrQ(milliQ(4 << 30 * 1000)),
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptrQ(milliQ(4 << 30 * 1000)), Step: ptrQ(milliQ(4 << 30 * 1000))}}}}
	shares := []qmap{{"memory": milliQ(16 << 30 * 1000)}, {"memory": milliQ(24 << 30 * 1000)}}
	req := qmap{"memory": milliQ(10 << 30 * 1000)}

	b.Run("dralloc", func(b *testing.B) {
		l := capacity.NewLedger(device)
		for _, s := range shares {
			l.Add(s)
		}
		b.ReportAllocs()
		for b.Loop() {
			c, err := capacity.Consumed(req, device, capacity.Options{})
			if err != nil || !l.Fits(c) {
				b.Fatal("does not fit", err)
			}
		}
	})
	b.Run("upstream", func(b *testing.B) {
		dev := resourceapi.Device{Name: "dev-0", AllowMultipleAllocations: ptrBool(true), Capacity: device}
		state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
			AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
		id := structured.MakeDeviceID(driver, node, "dev-0")
		for i, s := range shares {
			uid := types.UID(string(rune('a' + i)))
			state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, &uid))
			state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, s))
		}
		ctx := context.Background()
		a, err := structured.NewAllocator(ctx, allFeatures(true), state, anyClass, nodeSlices(nil, dev), celCache)
		if err != nil {
			b.Fatal(err)
		}
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
		claims := []*resourceapi.ResourceClaim{claimFor(req, nil)}
		b.ReportAllocs()
		for b.Loop() {
			res, err := a.Allocate(ctx, n, claims)
			if err != nil || res == nil {
				b.Fatal("does not fit", err)
			}
		}
	})
}
