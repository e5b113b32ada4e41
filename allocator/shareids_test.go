package allocator_test

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

// shareIDsFrom returns the share IDs labelled by labels in turn (see labelledShareIDs), then the last
// one forever.
func shareIDsFrom(labels ...string) func() types.UID {
	n := 0
	return func() types.UID {
		id := labelledShareIDs[labels[min(n, len(labels)-1)]]
		n++
		return types.UID(id)
	}
}

func TestAllocateShareIDsAreUniquePerDevice(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	one := attrSlice(shareable("shared-1", "10Gi", nil))
	two := attrSlice(shareable("shared-1", "10Gi", nil), shareable("shared-2", "10Gi", nil))
	runAll(t, []scenario{{
		name:   "a constant source fails the call with an invalid-input error naming Options.ShareIDs",
		slices: one, classes: classes, shareIDs: shareIDsFrom("same"),
		claims:  []*resourceapi.ResourceClaim{claim("c1", withCapacity(exact("req", "any", 1), "4Gi")), claim("c2", withCapacity(exact("req", "any", 1), "4Gi"))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "Options.ShareIDs",
	}, {
		name:   "a source repeating an ID used earlier in the call on the device is asked again",
		slices: one, classes: classes, shareIDs: shareIDsFrom("a", "a", "b"),
		claims: []*resourceapi.ResourceClaim{claim("c1", withCapacity(exact("req", "any", 1), "4Gi")), claim("c2", withCapacity(exact("req", "any", 1), "4Gi"))},
		check:  wantShares("shared-1 a 4Gi", "shared-1 b 4Gi"),
	}, {
		name:   "a source repeating the ID of an allocated share of the device is asked again",
		slices: one, classes: classes, shareIDs: sequentialShareIDs(),
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", sharedResult("shared-1", sequentialSharePrefix+"000000000001", "2Gi"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "4Gi"))},
		check:     wantShares("shared-1 share-2 4Gi"),
	}, {
		name:   "a source repeating the ID of an allocated share forever fails the call",
		slices: one, classes: classes, shareIDs: shareIDsFrom("held"),
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", sharedResult("shared-1", labelledShareIDs["held"], "2Gi"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "4Gi"))},
		wantErr:   allocator.ErrInvalidInput, wantErrText: "Options.ShareIDs",
	}, {
		name:   "a source returning an ID the API server would refuse fails the call naming Options.ShareIDs",
		slices: one, classes: classes, shareIDs: func() types.UID { return "share-1" },
		claims:  []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "4Gi"))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "Options.ShareIDs",
	}, {
		name:   "a source returning an ID the API server would refuse fails no call whose answer holds no share",
		slices: attrSlice(device("plain", nil), shareable("shared-1", "10Gi", nil)), classes: classes, shareIDs: func() types.UID { return "share-1" },
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		check: func(t *testing.T, r []resourceapi.AllocationResult) {
			if d := r[0].Devices.Results[0]; d.Device != "plain" || d.ShareID != nil {
				t.Errorf("got %s with share ID %v, want plain without one", d.Device, d.ShareID)
			}
		},
	}, {
		// c1 fits shared-1 first, which then leaves too little for c2 on either device: the search
		// gives shared-1 back and moves c1 to shared-2. The share it gave back drew no ID.
		name:   "a share the search tries and gives back draws no ID",
		slices: attrSlice(shareable("shared-1", "10Gi", nil), shareable("shared-2", "8Gi", nil)), classes: classes, shareIDs: sequentialShareIDs(),
		claims: []*resourceapi.ResourceClaim{claim("c1", withCapacity(exact("req", "any", 1), "6Gi")), claim("c2", withCapacity(exact("req", "any", 1), "9Gi"))},
		check:  wantShares("shared-2 share-1 6Gi", "shared-1 share-2 9Gi"),
	}, {
		name:   "the same ID on different devices is allowed",
		slices: two, classes: classes, shareIDs: shareIDsFrom("same"),
		claims: []*resourceapi.ResourceClaim{claim("c1", withCapacity(exact("req", "any", 1), "10Gi")), claim("c2", withCapacity(exact("req", "any", 1), "10Gi"))},
		check:  wantShares("shared-1 same 10Gi", "shared-2 same 10Gi"),
	}})
}
