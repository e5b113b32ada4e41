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
//   - ValidateSlice, ValidatePool: check any ResourceSlice (not only ours)
//     against the API limits, with errors naming the field. ValidateSlice is
//     the module's shared slice validation (allocator/validation).
//   - HealthPolicy, HealthState, Observation: pure policy from observed health
//     signals (XIDs, ECC, page retirement, row remapping, thermal, lost GPU,
//     NVLink) to device taints, with clearing after a configured time.
//   - Template, Profile, ProfileNames: recorded node types serialised as
//     YAML/JSON, from which the slices of a hypothetical node are generated.
//
// Imports: the Kubernetes API types and apimachinery, blang/semver,
// sigs.k8s.io/yaml, and of this module only allocator/validation (which
// imports nothing of the allocator) and the leaf capacity; no cgo.
package inventory
