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
// task shapes by popularity. The node choice is the same too: the node whose F_n grows least by the
// simulator's score, each node rated, for a share, with its GPU of the best score ([Inventory.FGD]).
// Differences that remain:
//
//   - The mix. The simulator's typical tasks are shapes of CPU, GPU count, GPU share and GPU model (not
//     memory), tasks without GPUs included, the most popular that make up 95 % of the tasks (added one
//     shape at a time: its experiments set podIncreaseStep 1; the default of 10 is not used),
//     renormalised; a task asking for no CPU counts as 0.1 CPU (kube-scheduler's non-zero default).
//     The trace's Mix (allocator/headroom/trace) is every shape, memory included, and the measure
//     checks memory too; trace.Trace.TypicalMix builds the simulator's. On the openb lists the cut
//     drops about 55 of 90 shapes (5 % of the tasks), and memory splits the 90 into about 150. With
//     memory and every shape, a task's growth is rarely exactly 0: any growth above 0 scores 49, not
//     50, so the rare shapes (a few tasks asking for much CPU) and memory steer where tasks without
//     GPUs go.
//   - The simulator's FGD runs (experiments/run_scripts, scripts/generate_config_and_run.py) enable
//     one score plugin, FGDScore (weight 1000), every default score plugin disabled: no other plugin
//     weighs in, as here. Its Score returns 100 for a pod requesting nothing at all; the trace's tasks
//     all request CPU, and one without GPUs is scored as here: the growth of the fragmentation when
//     its CPU (here also its memory) is taken.
//   - Ties. Like the simulator, FGD rates a node 100·σ(−growth in GPUs) truncated to an integer, and
//     takes the first node by name among the best, as the simulator's kube-scheduler does (its
//     selectHost keeps the smallest name "for reproducibility"; it draws no node at random). Within a
//     node it takes the first GPU of the best score; here BestFit's GPU (the most used that fits)
//     unless another scores better.
//   - Whole GPUs are those BestFit takes; the simulator takes free ones by index (free GPUs are alike
//     for the measure).
//
// On Alibaba's traces (allocator/headroom/trace, examples/packing; shuffled replays, seed 1, GPUs
// left unallocated of 6,212 at 100 % arrived), FGD against FirstFit and the simulator's FGD (mean of
// its ten seeds, experiments/analysis/expected_results): default 298.6 (FirstFit 347.5, simulator
// 296.5), gpushare40 399.4 (441.6, 375.1), gpushare60 544.0 (599.0, 543.2), gpushare80 672.7 (742.3,
// 678.2), gpushare100 836.4 (869.4, 829.9), gpuspec20 310.7 (373.5, 331.6), gpuspec33 736.8 (419.6,
// 755.6), multigpu30 222.0 (288.4, 226.3). Ties decide much: drawing among the nodes of the best
// score from a hash of the names, FGD left 284.9 on the default list but 1,078 on gpushare100; a
// uniform draw left 1,215 there. On gpuspec33 the simulator's FGD, like ours, leaves more than
// FirstFit does here; why is not worked out. Choosing the GPU within a node as the simulator does
// (the first GPU of the best score) instead of BestFit's GPU on ties left 838.8 on gpushare100.
//
// On the cpu lists, whose tasks without GPUs are the most and ask for the most CPU (cpu250: a quarter
// of the tasks, 12.5 CPUs at the median; CPU is then nearly used up at 100 % arrived), FGD leaves
// 10–20 % more GPUs unallocated than the simulator's FGD (examples/packing's table, seeds 42–44, the
// simulator's order and window). Memory in the mix explains most of it; the cut to 95 % costs: with
// the simulator's mix (trace.Trace.TypicalMix, no memory, popular shapes) FGD left, per seed, cpu200
// 356.6 and 351.6 (trace's Mix 371.5 and 354.1; simulator 324.3 and 312.5, seeds 42 and 43), cpu250
// 494.5 and 483.9 (500.1 and 492.6; simulator 416.8 and 383.9), and on the controls default 298.2
// (296.9; simulator 301.9) and multigpu50 173.3 (167.1; 180.1), seed 42; with every shape but no
// memory (TypicalOptions{Popularity: 1}) cpu200 342.9, 331.1 and 349.7 (trace's Mix 371.5, 354.1,
// 380.8; simulator 324.3, 312.5, 339.2, seeds 42–44), cpu250 441.1, 419.3 and 451.0 (500.1,
// 492.6, 475.8; 416.8, 383.9, 444.8), multigpu50 170.2 and 173.3 (167.1, 166.5; 180.1, 182.0,
// seeds 42, 43), and default 305.0, 306.3 and 305.0 (trace's Mix 296.9, 306.9, 293.2;
// simulator 301.9, 306.9, 292.6): the control gets worse, so the trace's Mix stays the default. The
// score of a task without GPUs, the other score plugins and the tie-break are as in the simulator
// (above); how memory steers FGD there, and the rest of the gap, are not worked out.
//
// Imports: allocator, allocator/pods, k8s.io/api, k8s.io/apimachinery and k8s.io/component-helpers
// (the scheduler's sum of a pod's requests). allocator/verify is used by
// tests only.
package headroom
