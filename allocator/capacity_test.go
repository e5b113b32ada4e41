package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

// shareable is a device with allowMultipleAllocations and a memory capacity.
func shareable(name, memory string, policy *resourceapi.CapacityRequestPolicy) resourceapi.Device {
	d := device(name, nil)
	d.AllowMultipleAllocations = ptr(true)
	d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: quantity(memory), RequestPolicy: policy}}
	return d
}

func withCapacity(r resourceapi.DeviceRequest, memory string) resourceapi.DeviceRequest {
	r.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": quantity(memory)}}
	return r
}

// sequentialSharePrefix starts the share IDs of sequentialShareIDs.
const sequentialSharePrefix = "00000000-0000-4000-8000-"

// sequentialShareIDs returns share IDs in the UUID form the API server demands, numbered 1, 2, ...;
// concurrent calls may use it.
func sequentialShareIDs() func() types.UID {
	var n atomic.Int64
	return func() types.UID {
		return types.UID(fmt.Sprintf("%s%012d", sequentialSharePrefix, n.Add(1)))
	}
}

// labelledShareIDs are share IDs in the API server's form that tests call by a short label.
var labelledShareIDs = map[string]string{
	"a":    "00000000-0000-4000-9000-00000000000a",
	"b":    "00000000-0000-4000-9000-00000000000b",
	"same": "00000000-0000-4000-9000-000000000005",
	"held": "00000000-0000-4000-9000-000000000001",
}

// shareLabel names a share ID of sequentialShareIDs share-1, share-2, ..., and one of labelledShareIDs
// by its label, so that expectations read easily; other IDs are returned as they are.
func shareLabel(id types.UID) string {
	if n, ok := strings.CutPrefix(string(id), sequentialSharePrefix); ok {
		return "share-" + strings.TrimLeft(n, "0")
	}
	for label, labelled := range labelledShareIDs {
		if string(id) == labelled {
			return label
		}
	}
	return string(id)
}

// sharedResult is an allocated share of a device consuming memory.
func sharedResult(dev, shareID, memory string) resourceapi.DeviceRequestAllocationResult {
	r := result(driverA, "pool-1", dev)
	r.ShareID = ptr(types.UID(shareID))
	r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"memory": quantity(memory)}
	return r
}

// wantShares checks share IDs and consumed memory per claim, one device each.
func wantShares(want ...string) func(t *testing.T, r []resourceapi.AllocationResult) {
	return func(t *testing.T, results []resourceapi.AllocationResult) {
		t.Helper()
		for i, r := range results {
			d := r.Devices.Results[0]
			got := "<none>"
			if d.ShareID != nil {
				m := d.ConsumedCapacity["memory"]
				got = fmt.Sprintf("%s %s %s", d.Device, shareLabel(*d.ShareID), m.String())
			}
			if got != want[i] {
				t.Errorf("claim %d: got %q, want %q", i, got, want[i])
			}
		}
	}
}

func TestAllocateConsumableCapacity(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	one := attrSlice(shareable("shared-1", "10Gi", nil), shareable("shared-2", "10Gi", nil))
	stepped := &resourceapi.CapacityRequestPolicy{
		Default:    ptr(quantity("1Gi")),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr(quantity("1Gi")), Step: ptr(quantity("1Gi"))},
	}
	noCapacity := allocator.DefaultFeatures()
	noCapacity.DRAConsumableCapacity = false
	runAll(t, []scenario{{
		name:   "two claims share a device, each with its share ID and consumed capacity",
		slices: one, classes: classes, shareIDs: sequentialShareIDs(),
		claims: []*resourceapi.ResourceClaim{claim("c1", withCapacity(exact("req", "any", 1), "4Gi")), claim("c2", withCapacity(exact("req", "any", 1), "6Gi"))},
		check:  wantShares("shared-1 share-1 4Gi", "shared-1 share-2 6Gi"),
	}, {
		name:   "what allocated shares consume is not available",
		slices: one, classes: classes, shareIDs: sequentialShareIDs(),
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", sharedResult("shared-1", "0f5a1e1c-7d5e-4d8e-9c3f-2b1a0e9d8c7b", "8Gi"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "4Gi"))},
		check:     wantShares("shared-2 share-1 4Gi"),
	}, {
		name:   "a request without capacity consumes the whole device",
		slices: one, classes: classes, shareIDs: sequentialShareIDs(),
		claims: []*resourceapi.ResourceClaim{claim("c1", exact("req", "any", 1)), claim("c2", exact("req", "any", 1))},
		check:  wantShares("shared-1 share-1 10Gi", "shared-2 share-2 10Gi"),
	}, {
		name:   "a request without capacity consumes the policy's default",
		slices: attrSlice(shareable("shared-1", "10Gi", stepped)), classes: classes, shareIDs: sequentialShareIDs(),
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		check:  wantShares("shared-1 share-1 1Gi"),
	}, {
		name:   "a request is rounded up to the policy's next step",
		slices: attrSlice(shareable("shared-1", "10Gi", stepped)), classes: classes, shareIDs: sequentialShareIDs(),
		claims: []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "1500Mi"))},
		check:  wantShares("shared-1 share-1 2Gi"),
	}, {
		name:   "a request for more than a device has does not fit",
		slices: one, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "11Gi"))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name:   "a device without the requested capacity is skipped",
		slices: attrSlice(device("plain", nil), shareable("shared-1", "10Gi", nil)), classes: classes, shareIDs: sequentialShareIDs(),
		claims: []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "1Gi"))},
		check:  wantShares("shared-1 share-1 1Gi"),
	}, {
		name: "capacity requests are rejected when DRAConsumableCapacity is off", features: &noCapacity,
		slices: one, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "1Gi"))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "spec.devices.requests[0].exactly.capacity",
	}, {
		name: "devices are exclusive when DRAConsumableCapacity is off", features: &noCapacity,
		slices: attrSlice(shareable("shared-1", "10Gi", nil)), classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c1", exact("req", "any", 1)), claim("c2", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name:   "a shared device is not taken twice exclusively",
		slices: attrSlice(device("plain", nil)), classes: classes,
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "plain"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr:   allocator.ErrUnsatisfiable,
	}, {
		name: "fractional capacity: milli-unit steps",
		slices: attrSlice(shareable("shared-1", "2", &resourceapi.CapacityRequestPolicy{
			Default:    ptr(quantity("100m")),
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr(quantity("100m")), Step: ptr(quantity("100m"))},
		})),
		classes: classes, shareIDs: sequentialShareIDs(),
		claims: []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "250m"))},
		check:  wantShares("shared-1 share-1 300m"),
	}})
}

// As the Kubernetes scheduler builds its allocated state: with DRAConsumableCapacity off, an allocated
// result with a share ID holds its device exclusively.
func TestAllocatedSharesWithoutConsumableCapacity(t *testing.T) {
	noCapacity := allocator.DefaultFeatures()
	noCapacity.DRAConsumableCapacity = false
	held := []*resourceapi.ResourceClaim{allocatedClaim("other", sharedResult("shared-1", "0f5a1e1c-7d5e-4d8e-9c3f-2b1a0e9d8c7b", "1Gi"))}
	runAll(t, []scenario{{
		name: "a share in the cluster holds the device exclusively while the gate is off", features: &noCapacity,
		slices: attrSlice(shareable("shared-1", "10Gi", nil)), classes: []*resourceapi.DeviceClass{anyClass},
		allocated: held,
		claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr:   allocator.ErrUnsatisfiable,
	}, {
		name:   "a share in the cluster leaves room for another share while the gate is on",
		slices: attrSlice(shareable("shared-1", "10Gi", nil)), classes: []*resourceapi.DeviceClass{anyClass},
		allocated: held, shareIDs: sequentialShareIDs(),
		claims: []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "9Gi"))},
		check:  wantShares("shared-1 share-1 9Gi"),
	}})
}

func TestSnapshotRejectsUnknownStrategy(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{Strategy: allocator.Strategy(7)})
	if _, err := s.Allocate(context.Background(), node(node1, nil), nil); !errors.Is(err, allocator.ErrInvalidInput) {
		t.Errorf("got %v, want ErrInvalidInput", err)
	}
}
