// Package fragscore is a kube-scheduler score plugin built on dralloc: it rates the nodes where a pod
// with DRA claims fits by how little their fragmentation grows (FGD, Weng et al., "Beware of
// Fragmentation", USENIX ATC '23; allocator/headroom's measure) if the pod's devices were allocated
// there, or, in its second mode, by how few topology domains those devices span.
//
// PreScore resolves the pod's claims and brings dralloc's view of the DRA state (an allocator.Snapshot
// and a headroom.Inventory) up to date with the scheduler's own: the objects its informers report as
// changed (ResourceSlices, DeviceClasses, DeviceTaintRules), and ResourceClaims as the DRA plugin tracks
// them (the framework handle's SharedDRAManager: claims it assumed or reserved but has not written yet
// included), reading per pod what changed and the claims in binding cycles, and looking up one UID per
// claim waiting, not the whole cluster (view.go, feed.go); its Reserve and Unreserve, which never fail,
// mark the pod's claims to be read again. It is fed by the scheduler's own informers and tracker, not by a second
// informer cache, and is behind the scheduler by no more than an informer's event handler. Score allocates the pod's claims
// on each feasible node as the DRA plugin does (dralloc's FirstFit takes the devices upstream takes)
// and rates the node with FGD's score, 100·σ(−growth in GPUs); NormalizeScore stretches the feasible
// nodes' scores over 0..100. The plugin only scores: it never filters, and never fails a pod (a node
// where dralloc finds no allocation scores 0).
//
// Imports: dralloc's allocator and allocator/headroom and allocator/pods (the FGD cost's input),
// k8s.io/kube-scheduler's framework, k8s.io/kubernetes's framework runtime (args decoding) and DRA
// manager type, and client-go's informers (the scheduler's, for their events).
package fragscore
