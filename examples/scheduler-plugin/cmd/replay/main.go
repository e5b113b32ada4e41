// Command replay replays slices of Alibaba's openb trace through a real kube-apiserver and this module's
// kube-scheduler, with the default profile and with the fragscore plugin's, next to the library's
// offline replays (FirstFit and FGD) of the same slices, and prints the table of the README:
//
//	go build -o /tmp/kube-scheduler-fragscore .. && go run . -scheduler /tmp/kube-scheduler-fragscore -nodes 200 -seeds 1,2,3
//
// Each seed draws its own task sequence; every row replays that sequence. The control plane is started
// with scripts/kube-apiserver (built with `scripts/kube-apiserver build`).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
	"github.com/dralloc/dralloc/examples/scheduler-plugin/fragscore"
	"github.com/dralloc/dralloc/examples/scheduler-plugin/replay"
	"github.com/dralloc/dralloc/fuzz/controlplane"
)

func main() {
	data := "../../../../allocator/headroom/trace/testdata/"
	nodesFile := flag.String("node-list", data+"openb_node_list_gpu_node.csv", "node list")
	podsFile := flag.String("pod-list", data+"openb_pod_list_default.csv", "pod list")
	step := flag.Int("step", 1, "take every step-th node of the list")
	nodes := flag.Int("nodes", 200, "GPU nodes in the slice")
	seeds := flag.String("seeds", "1,2,3", "seeds of the task sequences, comma separated")
	until := flag.Float64("until", 1, "tasks arrive until they ask for this share of the slice's GPUs")
	weight := flag.Int("weight", 100, "the plugin's weight in its profile (config/profile.yaml's)")
	flag.BoolVar(&noPacking, "no-packing", false, "keep NodeResourcesFit's LeastAllocated and NodeResourcesBalancedAllocation in the plugin's profile (config/profile.yaml changes them)")
	scheduler := flag.String("scheduler", "", "this module's kube-scheduler binary (go build -o FILE ..)")
	offline := flag.Bool("offline-only", false, "only the offline replays (no control plane)")
	flag.IntVar(&percentage, "percentage", 0, "percentageOfNodesToScore of both profiles (0: kube-scheduler's default)")
	flag.StringVar(&only, "only", "", "run only this live profile (default or fragscore)")
	burst := flag.Bool("burst", false, "throughput: create every task at once and time until the scheduler decided each, with each profile")
	ties := flag.Bool("offline-ties", false, "only offline FGD with kube-scheduler's ways of deciding among equally rated nodes (no control plane)")
	flag.Parse()
	var err error
	if *ties {
		err = offlineTies(*nodesFile, *podsFile, *step, *nodes, *seeds, *until)
	} else if *burst {
		err = throughput(*nodesFile, *podsFile, *step, *nodes, *seeds, *until, int32(*weight), *scheduler)
	} else {
		err = run(*nodesFile, *podsFile, *step, *nodes, *seeds, *until, int32(*weight), *scheduler, *offline)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

func run(nodesFile, podsFile string, step, nodes int, seedList string, until float64, weight int32, scheduler string, offlineOnly bool) error {
	ctx := context.Background()
	t, err := trace.Open(nodesFile, podsFile, trace.ReadOptions{})
	if err != nil {
		return err
	}
	var seeds []uint64
	for _, s := range strings.Split(seedList, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("-seeds: %w", err)
		}
		seeds = append(seeds, v)
	}
	if !offlineOnly && scheduler == "" {
		return fmt.Errorf("-scheduler: the kube-scheduler binary built from this module is needed (or -offline-only)")
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "seed\tnodes\tGPUs\ttasks\trun\tGPUs unallocated\ttasks failed\tpods/s\t")
	var cluster *replay.Cluster
	if !offlineOnly {
		// One control plane for every seed: the slices of all seeds have the same nodes.
		s, err := replay.NewSlice(t, step, nodes, seeds[0], until, maxTasks)
		if err != nil {
			return err
		}
		plane, err := controlplane.Start(controlplane.Options{DisableAdmission: []string{"TaintNodesByCondition"}, DirPrefix: "dralloc-replay-"})
		if err != nil {
			return err
		}
		defer plane.Stop()
		bin, err := filepath.Abs(scheduler)
		if err != nil {
			return err
		}
		if cluster, err = replay.NewCluster(ctx, plane.Kubeconfig, bin, plane.Dir, s); err != nil {
			return err
		}
	}
	for _, seed := range seeds {
		s, err := replay.NewSlice(t, step, nodes, seed, until, maxTasks)
		if err != nil {
			return err
		}
		row := func(name string, r replay.Result, rate string) {
			fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%s\t%.1f\t%d\t%s\t\n", seed, len(s.Trace.Nodes), r.GPUs, r.Tasks, name, r.Unallocated, r.Failed, rate)
		}
		for _, st := range []string{"FirstFit", "Spread", "FGD"} {
			r, err := s.Offline(ctx, st)
			if err != nil {
				return err
			}
			row("offline "+st, r, "")
		}
		if cluster == nil {
			continue
		}
		for _, p := range profiles(s, weight) {
			r, err := cluster.Run(ctx, p, s)
			if err != nil {
				return err
			}
			row("live "+p.Name, r.Result, fmt.Sprintf("%.1f", float64(r.Tasks)/r.Elapsed.Seconds()))
		}
	}
	return w.Flush()
}

var (
	percentage int
	only       string
	noPacking  bool
)

// profiles are the live profiles the flags ask for.
func profiles(s *replay.Slice, weight int32) []replay.Profile {
	var out []replay.Profile
	for _, p := range []replay.Profile{
		{Name: "default"},
		{Name: "fragscore", Plugin: true, Weight: weight, Packing: !noPacking, Args: &fragscore.Args{Mix: fragscore.MixOf(s.Objects.Mix)}},
	} {
		if only == "" || only == p.Name {
			p.PercentageOfNodesToScore = int32(percentage)
			out = append(out, p)
		}
	}
	return out
}

// maxTasks bounds a slice's task sequence.
const maxTasks = 100_000

// throughput runs each seed's tasks as one burst with each profile and prints pods/s.
func throughput(nodesFile, podsFile string, step, nodes int, seedList string, until float64, weight int32, scheduler string) error {
	ctx := context.Background()
	t, err := trace.Open(nodesFile, podsFile, trace.ReadOptions{})
	if err != nil {
		return err
	}
	var seeds []uint64
	for _, s := range strings.Split(seedList, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("-seeds: %w", err)
		}
		seeds = append(seeds, v)
	}
	if scheduler == "" {
		return fmt.Errorf("-scheduler: the kube-scheduler binary built from this module is needed")
	}
	first, err := replay.NewSlice(t, step, nodes, seeds[0], until, maxTasks)
	if err != nil {
		return err
	}
	plane, err := controlplane.Start(controlplane.Options{DisableAdmission: []string{"TaintNodesByCondition"}, DirPrefix: "dralloc-replay-"})
	if err != nil {
		return err
	}
	defer plane.Stop()
	bin, err := filepath.Abs(scheduler)
	if err != nil {
		return err
	}
	cluster, err := replay.NewCluster(ctx, plane.Kubeconfig, bin, plane.Dir, first)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "seed\tnodes\ttasks\tprofile\tseconds\tpods/s\tunschedulable\t")
	for _, seed := range seeds {
		s, err := replay.NewSlice(t, step, nodes, seed, until, maxTasks)
		if err != nil {
			return err
		}
		for _, p := range profiles(s, weight) {
			r, err := cluster.Burst(ctx, p, s)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%d\t%d\t%d\t%s\t%.1f\t%.1f\t%d\t\n", seed, len(s.Trace.Nodes), r.Tasks, p.Name, r.Elapsed.Seconds(), float64(r.Tasks)/r.Elapsed.Seconds(), r.Failed)
		}
	}
	return w.Flush()
}
