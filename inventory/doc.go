// Package inventory turns what a node has — NVIDIA GPUs, their MIG profiles and
// their health — into the ResourceSlices a DRA driver publishes, in the
// gpu.nvidia.com schema of NVIDIA's DRA driver, always within the limits of the
// resource.k8s.io/v1 API.
//
// The package is pure Go: it knows nothing about NVML. The adapter in
// inventory/nvml reads a Node from a real or mock NVML; node templates
// (Template, Profile) describe a node that does not exist yet, so that an
// autoscaler can learn what it would publish.
//
// Main types and functions:
//
//   - Node, GPU, MIGProfile, MIGDevice: the model of a node's GPUs.
//   - Slices: a Node → sorted, byte-stable ResourceSlices for one of three
//     modes (whole GPUs, static MIG, dynamic MIG as partitionable devices).
//   - ComputeDomainSlices: the IMEX channel and daemon devices NVIDIA's
//     compute-domain plugin publishes for a node.
//   - ValidateSlice, ValidatePool: check any ResourceSlice (not only ours)
//     against the API limits, with errors naming the field. ValidateSlice is
//     the module's shared slice validation (allocator/validation).
//   - HealthPolicy, HealthState, Observation: pure policy from observed health
//     signals (XIDs, ECC, page retirement, row remapping, thermal, lost GPU,
//     NVLink) to device taints, with clearing after a configured time.
//   - Template, Profile, ProfileNames: recorded node types serialised as
//     YAML/JSON; Template.Instantiate gives the Node and ResourceSlices of a
//     node that does not exist yet, with per-instance UUIDs, the labels its
//     kubelet and NVIDIA's GPU feature discovery would set, and the same
//     schema as the real node's. RecordTemplate and ParseResourceSlices
//     record a template from a live node's slices (kubectl output).
//
// # Parity with NVIDIA's driver
//
// Slices publishes what NVIDIA's DRA driver (sigs.k8s.io/dra-driver-nvidia-gpu,
// formerly github.com/NVIDIA/k8s-dra-driver-gpu) publishes at commit
// 95932046683719c43b6a0dd9613c2e5aad5d6703 of its main branch (2026-08-07),
// the newest code before v0.5.0 (2026-08-19) that the mirror read holds: the
// v0.5.0 tag itself was not in it, and its newest release tag, v0.4.1, is a
// patch of the release-0.4 branch without v0.5.0's features. So a cluster
// allocating from these slices makes the same choices as one running that
// driver. ModeStaticMIG is that driver without its DynamicMIG feature gate
// (MIG-enabled GPUs give their MIG devices, the others themselves),
// ModeDynamicMIG is DynamicMIG on a Kubernetes 1.35 or later API server;
// Options.ConsumableShares is its --consumable-shares flag (with the
// ConsumableShares gate), Options.ListAttributes its DRAListTypeAttributes
// gate, Options.FabricManagerPartitioning its FabricManagerPartitioning gate.
// The same as NVIDIA's, field by field, in every mode and setting but for the
// deliberate differences listed below (inventory/nvml tests this against
// recorded fixtures of each go-nvml DGX mock, described in
// inventory/nvml/testdata/nvidia/README.md):
//
//   - device names gpu-<minor> and gpu-<minor>-mig-<profile>-<giProfileID>-<start>,
//     profile names as go-nvlib forms them;
//   - attributes type, uuid, parentUUID, profile, productName, brand,
//     architecture (strings), cudaComputeCapability, driverVersion,
//     cudaDriverVersion (versions), resource.kubernetes.io/pciBusID and
//     pcieRoot (strings; the driver has no list form of pcieRoot),
//     resource.kubernetes.io/numaNode (KEP-6072: the sysfs numa_node of the
//     GPU's PCI function, left out when -1 or unknown; an int, or a
//     one-element list with ListAttributes), MIG devices carrying their
//     parent's; on whole GPUs with FabricManagerPartitioning, gpuModuleID
//     (NVML's module ID, when not 0) and partition<size> (the ID of the
//     Fabric Manager partition of that size holding the GPU);
//   - capacities: memory for a whole GPU; multiprocessors, copyEngines,
//     decoders, encoders, jpegEngines, ofaEngines, memory for a MIG device and,
//     in dynamic MIG mode, for the whole GPU (the largest of each over the
//     profiles); memorySlice<i> on static MIG devices;
//   - consumable shares (every whole GPU and MIG device of every mode):
//     allowMultipleAllocations, memory rounded down to whole MiB with a
//     request policy in 1Mi steps (default all of it and minimum 1Mi for
//     "memory", default and minimum 0 otherwise), and for an integer N a
//     capacity shares of N requested 1 to N in steps of 1, default 1. How
//     the claims sharing a device take turns (time-slicing, MPS) is opaque
//     configuration the scheduler never reads: inventory/claim.SelectConfig
//     picks it as the driver does, refuses MPS under consumable shares, and
//     CheckShared requires claims sharing a device to configure it alike;
//   - counter sets gpu-<minor>-counter-set with counters multiprocessors,
//     copy-engines, decoders, encoders, jpeg-engines, ofa-engines, memory (the
//     largest figure of any profile, zeros included) and memory-slice-<i>; a
//     placement consumes its profile's figures and memory slices, the whole
//     GPU all of it (NVIDIA's shares counter is left out, see below);
//   - in dynamic MIG mode: a slice of all counter sets first, then one slice
//     per GPU, GPUs in PCI bus ID order, devices sorted by name; an Ampere GPU
//     with MIG off is published whole, one with MIG on without the whole GPU
//     (Ampere cannot switch MIG mode without a reset); other GPUs whole and as
//     placements;
//   - health (HealthPolicy): taint keys gpu.nvidia.com/xid (value the XID),
//     gpu.nvidia.com/gpu-lost and gpu.nvidia.com/unmonitored with NVIDIA's
//     effects — NoSchedule, None for application XIDs and unmonitored GPUs,
//     never NoExecute — one XID taint per device, the latest;
//   - ComputeDomainSlices: channel-0 and daemon-0 of compute-domain.nvidia.com,
//     without daemon-0 when IMEX is host-managed.
//
// Deliberate differences:
//
//   - addressingMode is not published: Discover does not read it (NVIDIA
//     publishes it only on coherent-memory platforms such as Grace).
//   - Without DynamicMIG NVIDIA puts every device in one slice in map order,
//     which is not defined; Slices sorts GPUs by PCI bus ID and devices by
//     name, and starts a new slice only past the API's device limit. Pool
//     generations are the caller's (Options.Generation); NVIDIA's
//     resourceslice controller counts them itself.
//   - ModeGPU, publishing MIG-enabled GPUs whole, is this package's own.
//   - A MIG-capable GPU without any profile placement is published whole
//     in dynamic MIG mode (NVIDIA's driver would publish an empty counter
//     set, which the API rejects); the memory slices of a counter set are the
//     end of the furthest placement (NVIDIA takes the largest placement size;
//     the two agree on every GPU NVIDIA makes).
//   - With consumable shares N in dynamic MIG mode, NVIDIA's counter set of
//     each GPU published whole and in placements also holds a counter shares
//     of N, which no device consumes: GpuInfo.PartCapacities returns the
//     map the counter set is later built from, and applyConsumableShares
//     writes the whole GPU's shares capacity into it. Slices leaves it out.
//     A counter nothing consumes cannot change which devices a claim gets,
//     and allocations name devices and consumed capacity, never counters, so
//     a claim allocated from these slices is prepared alike by NVIDIA's
//     driver; the shares a claim takes are each device's own capacity.
//   - Health: HealthPolicy also taints on signals NVIDIA's driver does not
//     watch (ECC, page retirement, row remapping, thermal, NVLink); a
//     NoSchedule XID or lost-GPU taint stays until Observation.Recovered
//     (NVIDIA's driver at that commit never clears a taint; keeping
//     NoSchedule until the GPU recovers is its behaviour after v0.5.0),
//     other taints clear after ClearAfter; an informational XID does not
//     lift a NoSchedule one (at that commit it replaces it).
//   - Fabric Manager partitions are not read: GPU.FabricPartitions comes
//     from the caller (NVIDIA asks Fabric Manager over its socket).
//   - PassthroughSupport (alpha, gpu-vfio-<n> devices, which also carry the
//     Fabric Manager and NUMA attributes) is not modelled, nor the combined
//     counter-and-device slices NVIDIA writes for API servers older than 1.35.
//
// Imports: the Kubernetes API types and apimachinery, blang/semver,
// sigs.k8s.io/yaml, and of this module only allocator/validation (which
// imports nothing of the allocator) and the leaf capacity; no cgo.
package inventory
