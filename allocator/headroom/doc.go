// Package headroom answers capacity-planning questions on a [pods.Cluster] as it stands: how many more
// copies of a pod fit and where ([Count]), and why the next one does not.
//
// [Count] places copies of a pod template one after another on a fork of the cluster
// ([pods.Cluster.Fork]), with the cluster's own Place and Assume, so every copy counted is a placement
// the scheduler's filters and the allocator accept next to the copies before it. The fork is discarded:
// the cluster is not changed. The count is exact for the cluster's own placement: copies that share a
// claim, or take devices other nodes can get, are placed with Place, so that the cluster's Choice (or
// Cost) decides where the first goes and so where the others fit (under Spread more may fit than
// under FirstFit); other copies fit on a node whatever the others do, and nodes are filled by name.
// Nodes of one kind ([pods.Cluster.NodeKinds]) take the same copies, so one of each kind is filled
// and the others are counted alike. Counting is bounded by a maximum number of
// copies and a budget of placements, and when no further copy fits the nodes are grouped by the reason
// they refuse it ([pods.Cluster.Explain]).
//
// The figures of [Inventory.Fragmentation], defined once (`dractl capacity` prints them as FREE, F(M)
// and STRANDED), all in GPUs:
//
//   - FREE is Σ free(d) over the devices the allocator could give a claim without tolerations now: the
//     node-local devices of each pool's newest generation, of complete pools only, without an
//     effective NoSchedule or NoExecute taint (the device's own or a DeviceTaintRule's, as `dractl top`
//     counts a device free); free(d) is 1 for a whole device no claim holds, the free fraction of the
//     capacity of a device with allowMultipleAllocations, and 0 for a held or tainted device; a GPU
//     cut into partitions (devices drawing on its counter set) counts the share of its counters left
//     that a partition the allocator could give now draws on (one no claim holds, without such a
//     taint, whose counters are all left), so a GPU whose partitions are all tainted is not free.
//   - F(M) is the part of FREE the mix's shapes cannot use, weighed by the shapes' weights: on a node
//     where a shape cannot run, all the node's free capacity; where it can, the free capacity of the
//     devices it cannot use (below).
//   - STRANDED is the part of FREE that no shape of the mix that can run on its node can use.
//
// So 0 ≤ STRANDED ≤ F(M) ≤ FREE, on every node and in all.
//
// [Inventory.Fragmentation] measures, for a workload mix (task shapes with weights summing to 1, each
// with its devices, CPU and memory), the fragmentation of FGD (Weng et al., "Beware of Fragmentation",
// USENIX ATC '23) per node and in all:
//
//	F_n(m) = Σ_d free(d)                        when m cannot run on n: its devices do not fit, or
//	                                            n's free CPU or memory is less than m asks for;
//	F_n(m) = Σ_d free(d) · [m cannot use d]     when it can (a task asking for no device uses none);
//	F_n(M) = Σ_m p_m · F_n(m);   F(M) = Σ_n F_n(M),
//
// free(d) being the free GPU capacity of device d (whole devices count 1, shared devices the free
// fraction of their shares; frag.go) and n's free CPU and memory its allocatable less what the pods the
// cluster knows on it request. The paper's three cases: a node that lacks CPU or GPU for m, a node where
// m runs but some GPUs have less left than m asks of one (min(D_m, 1)), and a task asking for no GPU,
// for which every free GPU is a fragment. The paper's simulator checks CPU only; memory is checked here
// too, as the scheduler does. The stranded capacity is what no shape that can run on the node can use.
// [Inventory.FGD] is the node and device choice that places a pod where F_n grows least, as a
// [pods.Cost] and a [pods.Prefer] for pods.Options.Cost and Options.Prefer; it keeps each node's state
// and measure and measures a node again only when the node changed.
//
// Compared with the paper and its simulator (github.com/hkust-adsl/kubernetes-scheduler-simulator:
// pkg/utils/frag.go, pkg/simulator/plugin/fgd_score.go), the measure is the same: for a task that
// cannot run on the node (GPUs of another model, too few GPUs with room, too little CPU) or that asks
// for no GPU, all the node's free GPU capacity is a fragment; for one that can, the free capacity of
// the GPUs with less left than it asks of one GPU (a whole GPU: any GPU partly used); F_n(M) weighs the
// task shapes by popularity. The choice is the same too: the node whose F_n grows least by the
// simulator's integer score, a share rated on each GPU of the node and placed on the first GPU of the
// best score, and among nodes of one score the one of the smallest name ([Inventory.FGD]). Given the
// simulator's mix (trace.Trace.TypicalMix), its order of the tasks and its names of the nodes
// (examples/packing reproduces both), this FGD placed every pod of a run of the simulator itself
// (seed 42 on Alibaba's cpu200 pod list: 9,166 arrivals, to 102 % of the cluster's GPUs) on the node
// the simulator placed it on, and all but 7 of the 8,488 arrivals of its run on the default list.
// Differences that remain:
//
//   - Rounding. The growth is rounded here to 1e-9 GPUs before it is scored; the simulator scores it
//     as its sums give it, so a growth that is 0 but for 1e-13 of rounding scores 49 there, not 50,
//     and which way the rounding goes depends on the order in which it sums the shapes, which
//     follows Go's map order (its GetTypicalPods). The 7 arrivals of the default run follow from one
//     such score (arrival 3,975).
//   - The mix. The simulator's typical tasks are shapes of CPU, GPU count, GPU share and GPU model (not
//     memory), tasks without GPUs included, the most popular that make up 95 % of the tasks (added one
//     shape at a time: its experiments set podIncreaseStep 1; the default of 10 is not used),
//     renormalised; a task asking for no CPU counts as 0.1 CPU (kube-scheduler's non-zero default).
//     The trace's Mix (allocator/headroom/trace) is every shape, memory included, and the measure
//     checks memory too; trace.Trace.TypicalMix builds the simulator's. On the openb lists the cut
//     drops about 55 of 90 shapes (5 % of the tasks), and memory splits the 90 into about 150.
//   - The simulator's FGD runs (experiments/run_scripts, scripts/generate_config_and_run.py) enable
//     one score plugin, FGDScore (weight 1000), every default score plugin disabled: no other plugin
//     weighs in, as here. Its Score returns 100 for a pod requesting nothing at all; the trace's tasks
//     all request CPU, and one without GPUs is scored as here: the growth of the fragmentation when
//     its CPU (here also its memory) is taken.
//   - Ties between nodes decide much, and the simulator breaks them by names it draws: it renames
//     every node with a random prefix per run ("0057-openb-node-0565"), so its smallest name is a
//     random order of the nodes. Ordered by the trace's names instead, the nodes of one GPU model
//     come together and ties fill them model by model.
//   - Whole GPUs are those BestFit takes; the simulator takes free ones by index (free GPUs are alike
//     for the measure).
//
// examples/packing sets this FGD, with either mix, next to the simulator's published results on every
// pod list of the trace: with the simulator's mix it leaves exactly what the simulator publishes on 75
// of 102 runs (the others differ by the drawn cut or by rounding, both ways); with the trace's it leaves
// fewer GPUs unallocated on 15 of 17 lists and more on cpu200 and cpu250, where memory in the shapes
// steers tasks without GPUs worse.
//
// Imports: allocator, allocator/pods, k8s.io/api, k8s.io/apimachinery and k8s.io/component-helpers
// (the scheduler's sum of a pod's requests). allocator/verify is used by
// tests only.
package headroom
