// Package trace replays a GPU cluster trace in the format of Alibaba's GPU cluster trace v2023
// (github.com/alibaba/clusterdata, folder cluster-trace-gpu-v2023/csv: the "openb" node and pod lists
// of Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
// Gradient Descent", USENIX ATC '23) on a [pods.Cluster], with any placement strategy, and reports how
// much GPU capacity each strategy leaves unallocated as the workload arrives.
//
// [ReadNodes] and [ReadTasks] read the CSV files (a [Trace]); [Trace.Objects] turns them into DRA
// objects: a Node per row with its CPU and memory, a ResourceSlice per GPU node whose GPUs are devices
// with allowMultipleAllocations, a consumable capacity "shares" of 1000 (the trace's gpu_milli) and the
// GPU memory of their model, the DeviceClass "gpu", and per task shape a ResourceClaimTemplate: count
// whole GPUs, or one share of gpu_milli of a GPU, with a CEL selector on the GPU model when the task
// names the models it accepts (gpu_spec). Tasks become pods asking for their CPU and memory and the
// claim of their shape, so CPU and memory count as they do for kube-scheduler.
//
// [Replay] runs the experiment of the paper (its section 6): tasks arrive one by one, in trace order or
// drawn at random with repetition, each placed with [pods.Cluster.Place] and assumed before the next
// arrives, none leaving, until the arrived GPU workload reaches a given share of the cluster's GPU
// capacity. At sample points it records the arrived workload, the GPUs left unallocated, the
// fragmentation measure of allocator/headroom ([headroom.Inventory.Fragmentation]) and the tasks that
// fit nowhere: a [Curve]. [Trace.Strategies] are the strategies to compare: FirstFit, BestFit, Spread and
// FGD ([headroom.Inventory.FGD] with the trace's own workload mix, [Objects.Mix]; [Trace.TypicalMix] is
// the mix as the paper's simulator builds it, to set in its place).
//
// Imports: allocator, allocator/pods, allocator/headroom, k8s.io/api and k8s.io/apimachinery; no
// client-go and no plotting (examples/packing draws the curves).
package trace
