// Package replay replays a slice of Alibaba's GPU trace (allocator/headroom/trace) through a real
// control plane, with kube-scheduler's default profile and with the fragscore plugin, and offline with
// the library's strategies on the same slice, so that the three can be compared: GPUs left
// unallocated and tasks that found no node.
//
// Imports: allocator/headroom/trace, fragscore (the plugin's args), client-go.
package replay
