// Package nvmlmock gives go-nvml's mock DGX servers (dgxa100, dgxh100,
// dgxh200, dgxb200) in a form discovery can read without any NVIDIA library:
// deterministic GPU UUIDs instead of random ones, PCI bus IDs, which the mocks
// hold but do not return from GetPciInfo, and ERROR_NOT_SUPPORTED for the NUMA
// node, which the mocks do not model (the call would panic). Everything else is
// the mock's own published figures. It needs cgo, as go-nvml does.
//
// Main functions: New (a named mock server) and Names (the known names).
//
// Imports: go-nvml and its mock packages only; it is meant for tests, examples
// and trying dralloc on a machine without GPUs.
package nvmlmock
