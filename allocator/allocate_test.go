package allocator_test

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

var anyClass = class("any")

func TestAllocateBasics(t *testing.T) {
	runAll(t, []scenario{{
		name:    "one device from the node's slice",
		slices:  []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1", "dev-2")...)},
		classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		want:    [][]string{{"req=pool-1/dev-1"}},
	}, {
		name:    "another node's slice is invisible",
		slices:  []*resourceapi.ResourceSlice{nodeSlice("s1", node2, driverA, "pool-1", devices("dev-1")...)},
		classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name:    "two claims get different devices",
		slices:  []*resourceapi.ResourceSlice{nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1", "dev-2")...)},
		classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{claim("c1", exact("req", "any", 1)), claim("c2", exact("req", "any", 1))},
		want:    [][]string{{"req=pool-1/dev-1"}, {"req=pool-1/dev-2"}},
	}, {
		name:    "no claims: no results",
		classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{},
		want:    [][]string{},
	}})
}
