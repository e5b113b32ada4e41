package livescale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dralloc/dralloc/fuzz/controlplane"
)

// sizesEnv names the node counts to measure; the test is skipped without it. onlyEnv=feed stops
// each size after the feed's measurements; onlyEnv=kubectl-dra measures only kubectl-dra's commands.
// budgetEnv, a Go duration, replaces phaseBudget; kubectlDRAEnv names kubectl-dra binaries
// (comma-separated) measured one after the other on the same cluster in place of the work tree's
// build, as the builds of two commits for a before and after.
const (
	sizesEnv      = "DRALLOC_LIVE_SCALE"
	onlyEnv       = "DRALLOC_LIVE_SCALE_ONLY"
	budgetEnv     = "DRALLOC_LIVE_SCALE_BUDGET"
	kubectlDRAEnv = "DRALLOC_LIVE_SCALE_KUBECTL_DRA"
)

// TestLiveScale generates a cluster of each size in DRALLOC_LIVE_SCALE on a fresh kube-apiserver and
// measures the feed, the explainer and kubectl-dra on it (see the package documentation). It fails
// when a piece loses an event, leaves a pending pod unexplained or cannot read the cluster.
func TestLiveScale(t *testing.T) {
	spec := os.Getenv(sizesEnv)
	if spec == "" {
		t.Skip(sizesEnv + " is not set (a list of node counts, as 1000,2500)")
	}
	var sizes []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: %q is not a node count", sizesEnv, spec, f)
		}
		sizes = append(sizes, n)
	}
	if b := os.Getenv(budgetEnv); b != "" {
		d, err := time.ParseDuration(b)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: not a positive duration", budgetEnv, b)
		}
		phaseBudget = d
	}
	explainer, built, err := buildCommands(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	kubectlDRA := []string{built}
	if bins := os.Getenv(kubectlDRAEnv); bins != "" {
		kubectlDRA = strings.Split(bins, ",")
	}
	for _, n := range sizes {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) { measureSize(t, newShape(n), explainer, kubectlDRA) })
	}
}

func measureSize(t *testing.T, s shape, explainerBin string, kubectlDRA []string) {
	plane, err := controlplane.Start(controlplane.Options{DirPrefix: "dralloc-livescale-",
		// No kubelet lifts the not-ready taint this admission plugin puts on every new Node.
		DisableAdmission: []string{"TaintNodesByCondition"}})
	if errors.Is(err, controlplane.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("last lines of kube-apiserver.log:\n%s", plane.LogTail("kube-apiserver", 20))
		}
		if err := plane.Stop(); err != nil {
			t.Error(err)
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", plane.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 5000, 10000 // the workers, not client-go's default of 5 per second, bound the rate
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), controlplane.TestTimeout())
	defer cancel()
	logf := func(format string, args ...any) {
		t.Logf("livescale nodes=%d "+format, append([]any{s.nodes}, args...)...)
	}

	start := time.Now()
	if err := populate(ctx, c, s); err != nil {
		t.Fatal(err)
	}
	logf("created %d nodes, %d slices, %d pending pods, %d bound pods with allocated claims in %v",
		s.nodes, s.nodes, s.pending, s.bound, time.Since(start).Round(time.Second))

	if os.Getenv(onlyEnv) == "kubectl-dra" {
		measureCLI(ctx, t, kubectlDRA, plane, logf)
		return
	}
	fr, cluster, err := measureFeed(ctx, c, s, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	logf("feed: informers listed in %v holding %s of heap; the feed applied %d objects in %v (%v each) holding %s more",
		fr.listTime.Round(time.Millisecond), mib(fr.informerHeap), fr.objects, fr.replayTime.Round(time.Millisecond), fr.perListedObject, mib(fr.feedHeap))
	logf("feed: stream of claim updates: %d written (%d failed), %d applied, %.0f/s, %v of feed time each; lag from write to applied p50 %v p99 %v max %v",
		fr.written, fr.failed, fr.applied, fr.streamRate, fr.perEvent, fr.lagP50.Round(time.Millisecond), fr.lagP99.Round(time.Millisecond), fr.lagMax.Round(time.Millisecond))
	if os.Getenv(onlyEnv) == "feed" {
		return
	}
	// The Cluster is ready: it explains a pending pod of each kind.
	for i := range 4 {
		p, err := c.CoreV1().Pods(namespace).Get(ctx, fmt.Sprintf("pending-%05d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		e, err := cluster.Explain(ctx, p)
		if err != nil {
			t.Fatalf("explain %s: %v", p.Name, err)
		}
		if len(e.FitsOn) > 0 {
			t.Fatalf("pod %s fits by the fed Cluster on %v", p.Name, e.FitsOn)
		}
		logf("feed: Explain of %s on the fed Cluster took %v", p.Name, time.Since(start).Round(time.Microsecond))
	}

	claims := c.ResourceV1().ResourceClaims(namespace)
	changes := []change{
		{"a driver writes the device status of a bound claim", func(ctx context.Context) error {
			cl, err := claims.Get(ctx, "bound-00000", metav1.GetOptions{})
			if err != nil {
				return err
			}
			r := cl.Status.Allocation.Devices.Results[0]
			cl.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: r.Driver, Pool: r.Pool, Device: r.Device,
				Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Prepared", LastTransitionTime: metav1.Now()}}}}
			_, err = claims.UpdateStatus(ctx, cl, metav1.UpdateOptions{})
			return err
		}},
		{"a bound claim is deallocated (a GPU freed)", func(ctx context.Context) error {
			cl, err := claims.Get(ctx, "bound-00001", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cl.Status = resourceapi.ResourceClaimStatus{}
			_, err = claims.UpdateStatus(ctx, cl, metav1.UpdateOptions{})
			return err
		}},
	}
	er, err := measureExplainer(ctx, explainerBin, plane, s, changes, logf)
	if err != nil {
		t.Fatal(err)
	}
	if er.partial {
		logf("explainer: %.0f of %d pending pods explained %v after start (stopped there), %v CPU, %v per explanation; RSS %s (peak %s)",
			er.explained, s.pending, er.allExplained.Round(time.Second), er.explainedCPU, er.explainMean.Round(time.Microsecond), mib(er.rss), mib(er.peak))
	} else {
		logf("explainer: every pending pod explained %v after start, %v CPU, %.0f API requests, %v per explanation; RSS %s (peak %s)",
			er.allExplained.Round(time.Second), er.explainedCPU, er.initialCalls, er.explainMean.Round(time.Microsecond), mib(er.rss), mib(er.peak))
	}
	if er.partial {
		logf("explainer: not measured idle nor after a change: the first pass did not end")
	} else {
		logf("explainer: idle over %v: %v CPU and %.1f API requests per minute", er.idleWindow, er.idleCPUPerMin.Round(time.Millisecond), er.callsPerMin)
		for _, cr := range er.changes {
			quiet := "until quiet"
			if cr.cut {
				quiet = "still working, stopped"
			}
			logf("explainer: %s: %.0f pods explained again, %v CPU (idle subtracted) %s %v later",
				cr.name, cr.records, cr.cpu.Round(time.Millisecond), quiet, cr.window.Round(time.Second))
		}
	}

	measureCLI(ctx, t, kubectlDRA, plane, logf)
}

// measureCLI runs kubectl-dra's commands that read the whole cluster, each on its own, with each
// binary, and logs their wall time, max RSS and output.
func measureCLI(ctx context.Context, t *testing.T, bins []string, plane *controlplane.Plane, logf func(string, ...any)) {
	for _, bin := range bins {
		name := "kubectl-dra"
		if len(bins) > 1 {
			name = bin
		}
		for _, args := range [][]string{{"explain", "-A"}, {"top"}} {
			r, err := runCLI(ctx, bin, plane, args...)
			if err != nil {
				t.Fatal(err)
			}
			if r.killed {
				logf("%s %s: stopped after %v (the phase's budget), max RSS %s, %d bytes of output by then", name, strings.Join(args, " "), r.wall.Round(time.Millisecond), mib(r.maxRSS), r.outBytes)
				continue
			}
			logf("%s %s: %v wall, max RSS %s, %d bytes of output, exit %d", name, strings.Join(args, " "), r.wall.Round(time.Millisecond), mib(r.maxRSS), r.outBytes, r.code)
		}
	}
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
