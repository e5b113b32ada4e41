package inventory_test

import "github.com/dralloc/dralloc/inventory"

const gib = int64(1) << 30

// toyGPU is a small MIG GPU with 4 memory slices, easy to reason about:
//
//	1g.5gb   id 0: 4 placements of 1 slice, 10 SMs, 1 copy engine
//	2g.10gb  id 1: placements at 0 and 2, 20 SMs, 2 copy engines, 1 decoder
//	4g.20gb  id 4: one placement of all 4, 40 SMs, 4 copy engines, 2 decoders, 1 JPEG
//	1g.5gb+me id 7: 4 placements, allowed once, 1 JPEG and 1 OFA engine
func toyGPU(minor int) inventory.GPU {
	return inventory.GPU{
		Index: minor, Minor: minor, UUID: "GPU-toy-" + string(rune('a'+minor)),
		ProductName: "Toy GPU 20GB", Brand: "Nvidia", Architecture: "Hopper",
		CUDAComputeCapability: "9.0", MemoryBytes: 20 * gib,
		PCIBusID: "0000:0" + string(rune('0'+minor)) + ":00.0", PCIeRoot: "pci0000:00",
		MIGCapable: true,
		MIGProfiles: []inventory.MIGProfile{
			{Name: "1g.5gb", GIProfileID: 0, SliceCount: 1, InstanceCount: 4, Multiprocessors: 10, CopyEngines: 1, MemoryBytes: 5 * gib,
				Placements: []inventory.Placement{{0, 1}, {1, 1}, {2, 1}, {3, 1}}},
			{Name: "2g.10gb", GIProfileID: 1, SliceCount: 2, InstanceCount: 2, Multiprocessors: 20, CopyEngines: 2, Decoders: 1, MemoryBytes: 10 * gib,
				Placements: []inventory.Placement{{0, 2}, {2, 2}}},
			{Name: "4g.20gb", GIProfileID: 4, SliceCount: 4, InstanceCount: 1, Multiprocessors: 40, CopyEngines: 4, Decoders: 2, JPEGEngines: 1, MemoryBytes: 20 * gib,
				Placements: []inventory.Placement{{0, 4}}},
			{Name: "1g.5gb+me", GIProfileID: 7, SliceCount: 1, InstanceCount: 1, Multiprocessors: 10, CopyEngines: 1, JPEGEngines: 1, OFAEngines: 1, MemoryBytes: 5 * gib,
				Placements: []inventory.Placement{{0, 1}, {1, 1}, {2, 1}, {3, 1}}},
		},
	}
}

func toyNode(gpus int) inventory.Node {
	n := inventory.Node{DriverVersion: "580.95.05", CUDADriverVersion: "13.0"}
	for i := range gpus {
		n.GPUs = append(n.GPUs, toyGPU(i))
	}
	return n
}
