package main

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const driver = "gpu.nvidia.com"

// gpuModel is what one kind of node carries: eight GPUs of one product.
type gpuModel struct {
	product, arch, cc string
	memory            string
}

var (
	a100 = gpuModel{product: "NVIDIA A100-SXM4-40GB", arch: "Ampere", cc: "8.0.0", memory: "40Gi"}
	h100 = gpuModel{product: "NVIDIA H100 80GB HBM3", arch: "Hopper", cc: "9.0.0", memory: "80Gi"}
	t4   = gpuModel{product: "Tesla T4", arch: "Turing", cc: "7.5.0", memory: "16Gi"}
)

// fleet is a small in-memory cluster: one ResourceSlice of eight GPUs per node, in the schema NVIDIA's
// DRA driver publishes (gpu.nvidia.com attributes, memory capacity).
func fleet() []*resourceapi.ResourceSlice {
	nodes := []struct {
		name  string
		model gpuModel
	}{
		{"node-a100-0", a100},
		{"node-h100-0", h100},
		{"node-h100-1", h100},
		{"node-t4-0", t4},
	}
	var slices []*resourceapi.ResourceSlice
	for n, node := range nodes {
		slice := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: node.name + "-" + driver},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:   driver,
				NodeName: ptr.To(node.name),
				Pool:     resourceapi.ResourcePool{Name: node.name, Generation: 1, ResourceSliceCount: 1},
			},
		}
		for i := 0; i < 8; i++ {
			slice.Spec.Devices = append(slice.Spec.Devices, gpu(node.model, n, i))
		}
		slices = append(slices, slice)
	}
	return slices
}

func gpu(m gpuModel, node, minor int) resourceapi.Device {
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: ptr.To(s)} }
	ver := func(s string) resourceapi.DeviceAttribute {
		return resourceapi.DeviceAttribute{VersionValue: ptr.To(s)}
	}
	return resourceapi.Device{
		Name: fmt.Sprintf("gpu-%d", minor),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type":                  str("gpu"),
			"uuid":                  str(fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", node, minor)),
			"productName":           str(m.product),
			"brand":                 str("Nvidia"),
			"architecture":          str(m.arch),
			"cudaComputeCapability": ver(m.cc),
			"driverVersion":         ver("580.95.5"),
			"cudaDriverVersion":     ver("13.0.0"),
			"index":                 {IntValue: ptr.To(int64(minor))},
			"minor":                 {IntValue: ptr.To(int64(minor))},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: resource.MustParse(m.memory)},
		},
	}
}
