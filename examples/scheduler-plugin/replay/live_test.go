package replay_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
	"github.com/dralloc/dralloc/examples/scheduler-plugin/fragscore"
	"github.com/dralloc/dralloc/examples/scheduler-plugin/replay"
	"github.com/dralloc/dralloc/fuzz/controlplane"
)

const testdata = "../../../allocator/headroom/trace/testdata/"

// schedulerBinary is $DRALLOC_SCHEDULER_PLUGIN (the binary .ci/run builds), else this module's
// kube-scheduler built into the test's directory (from the Go build cache, after the first build).
func schedulerBinary(t *testing.T) string {
	if bin := os.Getenv("DRALLOC_SCHEDULER_PLUGIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "kube-scheduler")
	pkg := "k8s.io/component-base/version"
	cmd := exec.Command("go", "build", "-ldflags", "-X "+pkg+".gitVersion=v1.37.2 -X "+pkg+".gitMajor=1 -X "+pkg+".gitMinor=37", "-o", bin, "..")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the scheduler: %v\n%s", err, out)
	}
	return bin
}

// TestLiveFragscoreLeavesFewerGPUsUnallocated replays the same task sequences of a 20-node slice of the
// openb trace (every third node of the node list; three seeds, tasks drawn until they ask for the
// slice's GPUs) through a real kube-apiserver and kube-scheduler v1.37.2, once with the default profile
// and once with fragscore's, and checks that fragscore leaves at most half the GPUs unallocated that the
// default profile leaves, on average over the seeds. The scheduler draws among nodes of equal score at
// random, so runs of one profile differ by a GPU or so (the default profile left 9.9 and 8.9 on seed 1
// in two runs, and a plugin that rates every node alike leaves what the default profile leaves: that
// passes a bare "fewer", not "half"); on this slice the library's offline replays differ by far more
// (Spread, the closest to the default profile's LeastAllocated, 8.9, 9.6 and 23.5 GPUs of 96 unallocated,
// 14.0 on average; FGD 5.4, 5.0 and 2.8, 4.4 on average). No time is asserted.
func TestLiveFragscoreLeavesFewerGPUsUnallocated(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	tr, err := trace.Open(testdata+"openb_node_list_gpu_node.csv", testdata+"openb_pod_list_default.csv", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{1, 2, 3}
	var slices []*replay.Slice
	for _, seed := range seeds {
		s, err := replay.NewSlice(tr, 3, 20, seed, 1, 10_000)
		if err != nil {
			t.Fatal(err)
		}
		slices = append(slices, s)
	}
	bin := schedulerBinary(t)
	plane, err := controlplane.Start(controlplane.Options{DisableAdmission: []string{"TaintNodesByCondition"}, DirPrefix: "dralloc-fragscore-"})
	if errors.Is(err, controlplane.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := plane.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	c, err := replay.NewCluster(ctx, plane.Kubeconfig, bin, plane.Dir, slices[0])
	if err != nil {
		t.Fatal(err)
	}
	var sumDefault, sumPlugin, sumOffline float64
	var failedDefault, failedPlugin int
	for i, s := range slices {
		def, err := c.Run(ctx, replay.Profile{Name: "default"}, s)
		if err != nil {
			t.Fatal(err)
		}
		plug, err := c.Run(ctx, replay.Profile{Name: "fragscore", Plugin: true, Weight: 100, Packing: true, Args: &fragscore.Args{Mix: fragscore.MixOf(s.Objects.Mix)}}, s)
		if err != nil {
			t.Fatal(err)
		}
		off, err := s.Offline(ctx, "FGD")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d, %d tasks, %d GPUs: default profile %.1f GPUs unallocated, %d tasks failed; fragscore %.1f, %d; offline FGD %.1f, %d",
			seeds[i], def.Tasks, def.GPUs, def.Unallocated, def.Failed, plug.Unallocated, plug.Failed, off.Unallocated, off.Failed)
		sumOffline += off.Unallocated
		sumDefault += def.Unallocated
		sumPlugin += plug.Unallocated
		failedDefault += def.Failed
		failedPlugin += plug.Failed
	}
	n := float64(len(slices))
	t.Logf("mean GPUs unallocated: default profile %.2f, fragscore %.2f, offline FGD %.2f; tasks failed in all: %d, %d", sumDefault/n, sumPlugin/n, sumOffline/n, failedDefault, failedPlugin)
	if sumPlugin > sumDefault/2 {
		t.Errorf("fragscore left %.2f GPUs unallocated on average, the default profile %.2f: want at most half", sumPlugin/n, sumDefault/n)
	}
}
