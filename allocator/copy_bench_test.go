package allocator

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// gpuSlice is a node's slice of whole GPUs as drivers publish them: ten attributes (some unique per
// device) and two capacities.
func gpuSlice(node string, gpus int) *resourceapi.ResourceSlice {
	slice := &resourceapi.ResourceSlice{}
	slice.Name = node + "-gpu"
	slice.Spec = resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To(node),
		Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: ptr.To(s)} }
	num := func(n int64) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{IntValue: ptr.To(n)} }
	ver := func(s string) resourceapi.DeviceAttribute {
		return resourceapi.DeviceAttribute{VersionValue: ptr.To(s)}
	}
	for i := range gpus {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"model": str("H100"), "uuid": str(fmt.Sprintf("GPU-%04d", i)), "brand": str("Nvidia"),
				"architecture": str("Hopper"), "index": num(int64(i)), "numaNode": num(int64(i / 4)),
				"driverVersion": ver("580.95.5"), "cudaComputeCapability": ver("9.0.0"),
				"migCapable": {BoolValue: ptr.To(true)}, "resource.kubernetes.io/pcieRoot": str(fmt.Sprintf("pci0000:%02x", i/2)),
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": {Value: resource.MustParse("80Gi")}, "cores": {Value: resource.MustParse("132")},
			},
		})
	}
	return slice
}

// BenchmarkSliceCopy compares the snapshot's private copy of a slice of 8 whole GPUs with DeepCopy.
func BenchmarkSliceCopy(b *testing.B) {
	slice := gpuSlice("node", 8)
	b.Run("DeepCopy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = slice.DeepCopy()
		}
	})
	b.Run("sliceCopier", func(b *testing.B) {
		c := newSliceCopier()
		b.ReportAllocs()
		for b.Loop() {
			_ = c.slice(slice)
		}
	})
}
