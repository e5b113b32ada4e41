package allocator

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/capacity"
)

// The usage of a slice answers for every device index, the first 64 and those beyond.
func TestSliceUsageCoversEveryIndex(t *testing.T) {
	node := "node-1"
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: "d.example.com", NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: "p", Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range 200 {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("dev-%d", i)})
	}
	e, err := newSliceEntry(slice, 1, nil, capacity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	held := map[int]bool{0: true, 63: true, 64: true, 127: true, 128: true, 199: true}
	st := newState()
	for i := range held {
		st.inUse[DeviceID{Driver: "d.example.com", Pool: "p", Device: fmt.Sprintf("dev-%d", i)}] = 1
	}
	a := &allocation{st: st}
	for i, d := range e.devices() {
		if got := a.inClusterUse(d); got != held[i] {
			t.Errorf("device %d: in use %v, want %v", i, got, held[i])
		}
	}
}
