package allocator

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/inventory"
)

// TestPoolBuildPreparesNodeSlices: a first-fit search on a DGX H100 node in dynamic MIG finds a MIG
// device in the first GPU's slice, yet the device entries of all eight are prepared, when the pool is
// built, together and in order: prepared as searches first reach them, they lay apart in memory and
// later searches over every device ran some 20% slower.
func TestPoolBuildPreparesNodeSlices(t *testing.T) {
	tmpl, err := inventory.Profile("dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSnapshot(Options{NoCopy: true})
	published, err := tmpl.Slices("node-0", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range published {
		if err := s.AddOrUpdateSlice(sl); err != nil {
			t.Fatal(err)
		}
	}
	driver := published[0].Spec.Driver
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "mig"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "` + driver + `" && device.attributes["` + driver + `"].` + inventory.AttrType + ` == "mig"`,
		}}},
	}}
	if err := s.AddOrUpdateClass(class); err != nil {
		t.Fatal(err)
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mig"}, Spec: resourceapi.ResourceClaimSpec{
		Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "mig", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: "mig", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: `device.attributes["` + driver + `"].` + inventory.AttrProfile + ` == "1g.10gb"`,
			}}},
		}}}},
	}}
	fits, err := s.Fits(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}, []*resourceapi.ResourceClaim{claim})
	if err != nil || !fits {
		t.Fatalf("Fits: %v, %v; want true", fits, err)
	}
	var prepared []string
	for _, e := range s.st.nodeSlices["node-0"] {
		if _, ok := e.caches.devices.load(); ok {
			prepared = append(prepared, e.name())
		}
	}
	var want []string
	for _, sl := range published {
		if len(sl.Spec.Devices) > 0 {
			want = append(want, sl.Name)
		}
	}
	if !slices.Equal(prepared, want) {
		t.Errorf("slices with prepared devices: %v, want %v", prepared, want)
	}
}
