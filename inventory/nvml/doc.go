// Package nvml reads an inventory.Node and GPU health from NVML through
// github.com/NVIDIA/go-nvml. It is the only package of dralloc that needs cgo.
//
// Discover walks the devices of an nvml.Interface — the real library or one of
// go-nvml's mock servers, which the caller initialises (Init) before and shuts
// down (Shutdown) after — and builds the model inventory.Slices publishes:
// identity, versions, memory, PCI address, MIG mode, and GPU-instance profiles
// read directly with GetGpuInstanceProfileInfo and
// GetGpuInstancePossiblePlacements, and the MIG devices that exist: one per
// MIG device handle, as NVIDIA's driver lists them, so that a GPU instance
// without a compute instance, which has no handle, is no device. It never panics on a missing capability: a
// call that returns ERROR_NOT_SUPPORTED counts as absent, and a call that
// panics (as a mock method nobody set does) is recovered and reported as
// unknown in Discovery.Unknown.
//
// ReadHealth and WaitXIDs read the signals inventory.HealthPolicy turns into
// taints. XIDEvent.DeviceUUID and Observations key XID events by the UUID of
// the device they happened on, the MIG device for an XID inside a GPU
// instance and the GPU otherwise, for inventory.Options.Taints; an event for a
// device the node does not have is an error naming it. NVIDIA's driver
// attributes XIDs the same way, but drops an XID outside any instance on a
// GPU whose MIG devices are published (it has no whole-GPU device to taint);
// here such an XID taints all the GPU's MIG devices, since it concerns them
// all.
//
// Imports: go-nvml and the inventory package; nothing else of dralloc.
package nvml
