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
// Slices publishes what NVIDIA's DRA driver (github.com/NVIDIA/k8s-dra-driver-gpu,
// now sigs.k8s.io/dra-driver-nvidia-gpu) publishes at commit
// 22407113785e78c7763b4637689a201eb39c6199, so that a cluster allocating from
// these slices makes the same choices as one running that driver. ModeStaticMIG
// is that driver without its DynamicMIG feature gate (MIG-enabled GPUs give
// their MIG devices, the others themselves), ModeDynamicMIG is DynamicMIG on a
// Kubernetes 1.35 or later API server. The same as NVIDIA's, field by field
// (inventory/nvml tests this against recorded fixtures of each go-nvml DGX
// mock, described in inventory/nvml/testdata/nvidia/README.md):
//
//   - device names gpu-<minor> and gpu-<minor>-mig-<profile>-<giProfileID>-<start>,
//     profile names as go-nvlib forms them;
//   - attributes type, uuid, parentUUID, profile, productName, brand,
//     architecture (strings), cudaComputeCapability, driverVersion,
//     cudaDriverVersion (versions), resource.kubernetes.io/pciBusID and
//     pcieRoot, MIG devices carrying their parent's;
//   - capacities: memory for a whole GPU; multiprocessors, copyEngines,
//     decoders, encoders, jpegEngines, ofaEngines, memory for a MIG device and,
//     in dynamic MIG mode, for the whole GPU (the largest of each over the
//     profiles); memorySlice<i> on static MIG devices;
//   - counter sets gpu-<minor>-counter-set with counters multiprocessors,
//     copy-engines, decoders, encoders, jpeg-engines, ofa-engines, memory (the
//     largest figure of any profile, zeros included) and memory-slice-<i>; a
//     placement consumes its profile's figures and memory slices, the whole
//     GPU all of it;
//   - in dynamic MIG mode: a slice of all counter sets first, then one slice
//     per GPU, GPUs in PCI bus ID order, devices sorted by name; an Ampere GPU
//     with MIG off is published whole, one with MIG on without the whole GPU
//     (Ampere cannot switch MIG mode without a reset); other GPUs whole and as
//     placements.
//
// Deliberate differences:
//
//   - resource.kubernetes.io/numaNode is published where known; NVIDIA does
//     not. It is an extra attribute, so NVIDIA's DeviceClasses (which select
//     on type, profile and the like) select the same devices.
//   - addressingMode is not published: Discover does not read it (NVIDIA
//     publishes it only on coherent-memory platforms such as Grace).
//   - Without DynamicMIG NVIDIA puts every device in one slice in map order,
//     which is not defined; Slices sorts GPUs by PCI bus ID and devices by
//     name, and starts a new slice only past the API's device limit.
//   - ModeGPU, publishing MIG-enabled GPUs whole, is this package's own.
//   - A MIG-capable GPU without any profile placement is published whole
//     in dynamic MIG mode (NVIDIA's driver would publish an empty counter
//     set, which the API rejects); the memory slices of a counter set are the
//     end of the furthest placement (NVIDIA takes the largest placement size;
//     the two agree on every GPU NVIDIA makes).
//   - Taints come from HealthPolicy and Options.Taints; NVIDIA's driver taints
//     only on XIDs and lost GPUs and never clears.
//   - Of NVIDIA's other feature gates, only DynamicMIG changes what a healthy
//     node publishes by default; PassthroughSupport (alpha, off by default,
//     gpu-vfio-<n> devices) is not modelled, nor the combined counter-and-
//     device slices NVIDIA writes for API servers older than 1.35.
//
// Imports: the Kubernetes API types and apimachinery, blang/semver,
// sigs.k8s.io/yaml, and of this module only allocator/validation (which
// imports nothing of the allocator) and the leaf capacity; no cgo.
package inventory
