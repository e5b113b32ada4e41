// Package nvml reads an inventory.Node and GPU health from NVML through
// github.com/NVIDIA/go-nvml. It is the only package of dralloc that needs cgo.
//
// Discover walks the devices of an nvml.Interface — the real library or one of
// go-nvml's mock servers — and builds the model inventory.Slices publishes:
// identity, versions, memory, PCI address, MIG mode, and GPU-instance profiles
// read directly with GetGpuInstanceProfileInfo and
// GetGpuInstancePossiblePlacements. It never panics on a missing capability: a
// call that returns ERROR_NOT_SUPPORTED counts as absent, and a call that
// panics (as a mock method nobody set does) is recovered and reported as
// unknown in Discovery.Unknown.
//
// ReadHealth and WaitXIDs read the signals inventory.HealthPolicy turns into
// taints.
//
// Imports: go-nvml and the inventory package; nothing else of dralloc.
package nvml
